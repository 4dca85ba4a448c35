"""python -m autograder clocks: how much of a launch timed from the host is the host's.

The same work timed three ways, on the GPU at hand:

- events: CUDA events recorded around a launch from Python on an idle GPU (how
  `bench` timed before it held the stream): the start event fires at once, so
  the host's launch work between the two events is counted as GPU time;
- held: the stream held while the events and the launch are queued
  (autograder.run.device_clock), how `bench`, `tune` and grading time now;
- batch: BATCH launches queued behind one hold, per launch: the device runs them
  back to back, so the host's work is nowhere in it. (A CUDA graph would do the
  same, but cuBLAS cannot be captured into one through CuPy.)

Each is the median of samples taken until its noise settles (judge.timing.sample).
The rows go to book/data/clocks_<gpu>.csv, which the book's timing page shows.
"""

from __future__ import annotations

import csv
import datetime
from dataclasses import asdict, dataclass, fields
from functools import partial
from pathlib import Path

from ..judge.timing import sample
from ..ladder.registry import DATA_DIR
from ..run import gpu
from . import typed_csv

BATCH = 100
SHAPES = ((128, 128, 128), (1001, 777, 513), (1024, 1024, 1024), (1536, 1536, 64), (4096,) * 3)


@dataclass(frozen=True)
class Row:
    work: str  # "empty kernel" or "cuBLAS MxNxK"
    events_us: float
    held_us: float
    batch_us: float
    gpu: str
    date: str
    cuda: str
    cupy: str


def measure() -> list[Row]:
    """Every row, on this machine's GPU. Raises gpu.NoGPU without one."""
    gpu.require("clocks")
    import cupy

    from ..run.device_clock import DeviceClock

    info = gpu.device_info()
    clock = DeviceClock()
    events = cupy.cuda.Event(), cupy.cuda.Event()
    empty = cupy.RawKernel('extern "C" __global__ void empty() {}', "empty")
    works = {"empty kernel": partial(empty, (1,), (1,), ())}
    rng = cupy.random.default_rng()
    for M, N, K in SHAPES:
        A = rng.standard_normal((M, K), dtype=cupy.float32)
        B = rng.standard_normal((K, N), dtype=cupy.float32)
        works[f"cuBLAS {M}x{N}x{K}"] = partial(cupy.matmul, A, B, out=cupy.empty((M, N), "f"))
    today = datetime.date.today().isoformat()
    rows = []
    for name, run in works.items():
        by_events = sample({name: run}, partial(_evented, events))[name].median
        held = sample({name: run}, clock.time)[name].median
        batched = seconds_per_launch_in_a_batch(run, clock)
        rows.append(
            Row(
                name,
                round(by_events * 1e6, 2),
                round(held * 1e6, 2),
                round(batched * 1e6, 2),
                info.name,
                today,
                info.cuda,
                info.cupy,
            )
        )
    return rows


def _evented(events, run) -> float:
    """Events recorded around run() from the host, on an idle GPU."""
    import cupy

    start, stop = events
    start.record()
    run()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / 1e3


def seconds_per_launch_in_a_batch(run, clock, launches: int = BATCH) -> float:
    """run()'s device time per launch, `launches` of it queued behind one hold."""

    def batch():
        for _ in range(launches):
            run()

    return sample({"batch": batch}, clock.time)["batch"].median / launches


def table(rows: list[Row]) -> str:
    first = rows[0]
    lines = [
        f"{first.gpu}, CUDA {first.cuda}, CuPy {first.cupy}, {first.date}",
        f"{'µs per launch':<26}{'events (host in it)':>21}{'held (GPU only)':>17}"
        f"{f'batch of {BATCH}':>14}",
    ]
    lines += [
        f"{r.work:<26}{r.events_us:>21.1f}{r.held_us:>17.1f}{r.batch_us:>14.1f}" for r in rows
    ]
    return "\n".join(lines)


def read_csv(path: Path) -> list[Row]:
    return typed_csv.read(path, Row)


def write_csv(rows: list[Row]) -> Path:
    path = DATA_DIR / f"clocks_{gpu.slug(rows[0].gpu)}.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[f.name for f in fields(Row)])
        writer.writeheader()
        writer.writerows(asdict(r) for r in rows)
    return path

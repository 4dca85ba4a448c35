"""python -m autograder tune 09: measure step 09's dispatch table on the GPU at hand.

For each shape class (by_shape.shape_class), every candidate plan (a tile shape
of by_shape.TILES, and a number of layers of K at the class's measured shape)
is timed at four shapes across the class (by_shape.sample_shapes), scaled to
each as the dispatcher would scale it, its output checked, cuBLAS timed beside
it; the plan right at all four with the best geometric mean of its share of
cuBLAS becomes the class's entry. Every timing lands in a CSV, the table in
book/data/dispatch_<gpu>.json, which the dispatcher then reads on that GPU.
"""

from __future__ import annotations

import csv
import datetime
import itertools
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from statistics import geometric_mean

from ..ladder import registry
from ..run import by_shape, gpu
from ..run.by_shape import Plan, Table
from . import typed_csv


@dataclass(frozen=True)
class Timing:
    waves: int  # the shape class
    k: int
    aligned: int
    M: int
    N: int
    K: int
    tiles: str
    splits: int  # at this shape
    class_splits: int  # the candidate's, at the class's measured shape
    gflops: float | None
    cublas_gflops: float
    wrong: str = ""  # why the output was not the product; "" when it was

    @property
    def share(self) -> float:
        return self.gflops / self.cublas_gflops


def candidates(shape: tuple[int, int, int], sms: int) -> list[Plan]:
    """The plans a class's search times: by_shape.plan_space at its measured shape."""
    return by_shape.plan_space(*shape, sms)


def classes() -> list[tuple[int, int, int]]:
    return list(
        itertools.product(
            range(len(by_shape.WAVE_BOUNDS) + 1), range(len(by_shape.K_BOUNDS) + 1), (0, 1)
        )
    )


def trials(cls: tuple[int, int, int], sms: int) -> list[tuple[Plan, tuple[int, int, int], Plan]]:
    """(candidate, shape, the candidate scaled to that shape) for every time a class's
    search runs a plan."""
    reference = by_shape.measured_shape(cls, sms)
    return [
        (plan, shape, by_shape.scaled(plan, cls, *shape, sms))
        for plan in candidates(reference, sms)
        for shape in by_shape.sample_shapes(cls, sms)
    ]


def search(
    sms: int,
    time_plan: Callable[[tuple[int, int, int], Plan], tuple[float, str]],
    time_cublas: Callable[[tuple[int, int, int]], float],
) -> tuple[dict[tuple[int, int, int], Plan], list[Timing]]:
    """Every class's best plan, and every timing. time_plan(shape, plan) returns the
    plan's GFLOP/s and why its output was wrong ('' when right); a plan wrong at any
    of its class's shapes is never chosen."""
    plans, timings = {}, []
    for cls in classes():
        cublas = {shape: time_cublas(shape) for shape in by_shape.sample_shapes(cls, sms)}
        ran = {}  # two candidates can scale to one plan at a shape: timed once
        for plan, shape, at_shape in trials(cls, sms):
            if (shape, at_shape) not in ran:
                ran[shape, at_shape] = time_plan(shape, at_shape)
            rate, wrong = ran[shape, at_shape]
            timings.append(
                Timing(
                    *cls,
                    *shape,
                    at_shape.tiles,
                    at_shape.splits,
                    plan.splits,
                    rate,
                    cublas[shape],
                    wrong,
                )
            )
        plans[cls] = best_plan(cls, timings)
    return {cls: plan for cls, plan in plans.items() if plan}, timings


def by_candidate(cls: tuple[int, int, int], timings: list[Timing]) -> dict[Plan, list[Timing]]:
    """A class's timings, grouped by the candidate (its layers at the measured shape)."""
    groups: dict[Plan, list[Timing]] = {}
    for t in timings:
        if (t.waves, t.k, t.aligned) == cls:
            groups.setdefault(Plan(t.tiles, t.class_splits), []).append(t)
    return groups


def mean_share(rows: list[Timing]) -> float:
    """The geometric mean of a candidate's share of cuBLAS over its class's shapes."""
    return geometric_mean(t.share for t in rows)


def best_plan(cls: tuple[int, int, int], timings: list[Timing]) -> Plan | None:
    """The candidate right at every shape of the class with the best mean_share."""
    right = {p: ts for p, ts in by_candidate(cls, timings).items() if not any(t.wrong for t in ts)}
    if not right:
        return None
    return max(right, key=lambda p: mean_share(right[p]))


def run(progress: bool = True) -> tuple[Table, list[Timing]]:
    """The whole search on this machine's GPU. Raises gpu.NoGPU without one."""
    gpu.require("tune 09")
    import cupy
    import numpy as np
    from tqdm import tqdm

    from ..judge.checker import ALPHA, SENTINEL
    from ..judge.timing import Verifier, gflops, median_seconds
    from ..run.backends import gpu_launcher
    from ..run.device_clock import DeviceClock
    from ..run.kernel import KernelSpec

    info = gpu.device_info()
    clock = DeviceClock()
    spec = replace(KernelSpec.from_step(registry.step("09")), split_every_case=False)
    chosen: dict[str, Plan] = {}
    launch = gpu_launcher(spec, choose=lambda M, N, K: chosen["plan"])
    rng = cupy.random.default_rng()
    inputs = {}

    def arrays(shape):
        if shape not in inputs:
            inputs.clear()  # one shape's matrices at a time
            M, N, K = shape
            A = rng.standard_normal((M, K), dtype=cupy.float32)
            B = rng.standard_normal((K, N), dtype=cupy.float32)
            C = cupy.zeros((M, N), dtype=cupy.float32)
            inputs[shape] = A, B, C, Verifier(cupy, A, B, ALPHA, 0.0, np.random.default_rng())
        return inputs[shape]

    def time_cublas(shape):
        A, B, C, _ = arrays(shape)
        seconds = median_seconds(partial(cupy.matmul, A, B, out=C), clock.time)
        clock.require_steady(info.clock_mhz, f"cuBLAS at {'x'.join(map(str, shape))}")
        return gflops(*shape, seconds)

    runs = {(shape, plan) for cls in classes() for _, shape, plan in trials(cls, info.sms)}
    bar = tqdm(total=len(runs), disable=not progress, unit="run")

    def time_plan(shape, plan):
        A, B, C, verifier = arrays(shape)
        chosen["plan"] = plan
        bar.set_description(f"{plan} at {'x'.join(map(str, shape))}")
        C.fill(SENTINEL)  # a plan that writes nothing leaves no product behind
        seconds = median_seconds(partial(launch, *shape, ALPHA, A, B, 0.0, C), clock.time)
        clock.require_steady(info.clock_mhz, f"{plan} at {'x'.join(map(str, shape))}")
        bar.update()
        return round(gflops(*shape, seconds), 1), verifier.problem(cupy, C)

    plans, timings = search(info.sms, time_plan, time_cublas)
    bar.close()
    today = datetime.date.today().isoformat()
    measured = f"{today}, CUDA {info.cuda}, CuPy {info.cupy}"
    return Table(info.name, info.sms, plans, measured), timings


def write(table: Table, timings: list[Timing]) -> tuple[Path, Path]:
    """The table (what the dispatcher reads) and every timing beside it (a CSV)."""
    json_path = by_shape.table_path(table.gpu)
    csv_path = json_path.with_suffix(".csv")
    json_path.write_text(table.to_json() + "\n")
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(asdict(timings[0])))
        writer.writeheader()
        writer.writerows(asdict(t) for t in timings)
    return json_path, csv_path


@dataclass(frozen=True)
class ClassResult:
    """One class's entry: its plan and the geometric mean of its share of cuBLAS
    over the class's shapes, beside step 08 alone (128 x 128 tiles, unsplit)."""

    shape: tuple[int, int, int]  # the class's measured shape, where its layers are counted
    aligned: bool  # the class's rows of A and B start on 16 bytes (by_shape.aligned)
    plan: Plan
    pct_cublas: float
    alone_pct_cublas: float


def class_results(table: Table, timings: list[Timing]) -> list[ClassResult]:
    results = []
    for cls in classes():
        plan = table.plans.get(cls)
        if plan is None:
            continue
        groups = by_candidate(cls, timings)
        alone = groups[Plan(by_shape.MEASURE_TILES, 1)]
        shape = by_shape.measured_shape(cls, table.sms)
        results.append(
            ClassResult(
                shape,
                bool(cls[2]),
                plan,
                100 * mean_share(groups[plan]),
                100 * mean_share(alone),
            )
        )
    return results


def summary(table: Table, timings: list[Timing]) -> str:
    lines = [
        f"step 09's dispatch table for the {table.gpu} ({table.sms} SMs), {table.measured}",
        (
            "  (layers counted at the class's measured shape; % of cuBLAS: geometric mean"
            " over the class's four shapes)"
        ),
    ]
    for r in class_results(table, timings):
        shape = "x".join(map(str, r.shape))
        rows = "aligned" if r.aligned else "unaligned"
        lines.append(
            f"  {shape:<18} {rows:<10} {r.plan!s:<30} {r.pct_cublas:5.1f}% of cuBLAS,"
            f" 08 alone {r.alone_pct_cublas:5.1f}%"
        )
    return "\n".join(lines)


def read(json_path: Path) -> tuple[Table, list[Timing]]:
    """A table and its timings as write() left them."""
    table = Table.from_json(json_path.read_text())
    return table, typed_csv.read(json_path.with_suffix(".csv"), Timing)

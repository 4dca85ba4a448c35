"""python -m autograder tune 09: measure step 09's dispatch table on the GPU at hand.

For each shape class (by_shape.shape_class), every candidate plan (a tile shape
of by_shape.TILES, and a number of layers of K) is timed at the class's
measured shape (by_shape.measured_shape), its output checked, cuBLAS timed
beside it; the fastest right plan becomes the class's entry. Every timing lands
in a CSV, the table in book/data/dispatch_<gpu>.json, which the dispatcher then
reads on that GPU.
"""

from __future__ import annotations

import csv
import datetime
import itertools
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path

from . import by_shape, gpu, registry
from .by_shape import Plan, Table

# Layers tried per tile shape: as many as by_shape.max_splits allows at the
# class's K, and no more than make WAVES_AT_MOST waves of blocks (past that,
# layers add traffic and no parallelism).
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
WAVES_AT_MOST = 4


@dataclass(frozen=True)
class Timing:
    waves: int  # the shape class
    k: int
    M: int
    N: int
    K: int
    tiles: str
    splits: int
    gflops: float | None
    cublas_gflops: float
    wrong: str = ""  # why the output was not the product; "" when it was


def candidates(shape: tuple[int, int, int], sms: int) -> list[Plan]:
    M, N, K = shape
    return [
        Plan(tiles, splits)
        for tiles in by_shape.TILES
        for splits in SPLITS
        if splits == 1
        or (
            splits <= by_shape.max_splits(K, tiles)
            and splits * by_shape.tile_count(M, N, tiles) <= WAVES_AT_MOST * sms
        )
    ]


def classes() -> list[tuple[int, int]]:
    return list(
        itertools.product(range(len(by_shape.WAVE_BOUNDS) + 1), range(len(by_shape.K_BOUNDS) + 1))
    )


def search(
    sms: int,
    time_plan: Callable[[tuple[int, int, int], Plan], tuple[float, str]],
    time_cublas: Callable[[tuple[int, int, int]], float],
) -> tuple[dict[tuple[int, int], Plan], list[Timing]]:
    """Every class's best plan, and every timing. time_plan(shape, plan) returns the
    plan's GFLOP/s and why its output was wrong ('' when right); a wrong plan is
    never chosen."""
    plans, timings = {}, []
    for cls in classes():
        shape = by_shape.measured_shape(cls, sms)
        cublas = time_cublas(shape)
        best = None
        for plan in candidates(shape, sms):
            rate, wrong = time_plan(shape, plan)
            timings.append(Timing(*cls, *shape, plan.tiles, plan.splits, rate, cublas, wrong))
            if not wrong and (best is None or rate > best[0]):
                best = rate, plan
        if best:
            plans[cls] = best[1]
    return plans, timings


def run(progress: bool = True) -> tuple[Table, list[Timing]]:
    """The whole search on this machine's GPU. Raises gpu.NoGPU without one."""
    gpu.require("tune 09")
    import cupy
    import numpy as np
    from tqdm import tqdm

    from .backends import gpu_launcher
    from .checker import ALPHA, SENTINEL
    from .kernel import KernelSpec
    from .timing import Fingerprint, gflops, repeated_ms

    info = gpu.device_info()
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
            inputs[shape] = A, B, C, Fingerprint(cupy, A, B, ALPHA, 0.0, np.random.default_rng())
        return inputs[shape]

    def time_cublas(shape):
        A, B, C, _ = arrays(shape)
        return gflops(*shape, repeated_ms(partial(cupy.matmul, A, B, out=C)) / 1e3)

    total = sum(len(candidates(by_shape.measured_shape(c, info.sms), info.sms)) for c in classes())
    bar = tqdm(total=total, disable=not progress, unit="plan")

    def time_plan(shape, plan):
        A, B, C, fingerprint = arrays(shape)
        chosen["plan"] = plan
        bar.set_description(f"{plan} at {'x'.join(map(str, shape))}")
        C.fill(SENTINEL)  # a plan that writes nothing leaves no product behind
        ms = repeated_ms(partial(launch, *shape, ALPHA, A, B, 0.0, C))
        bar.update()
        return round(gflops(*shape, ms / 1e3), 1), fingerprint.problem(cupy, C) or ""

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


def summary(table: Table, timings: list[Timing]) -> str:
    """Each class's measured shape, its best plan and how it compares with cuBLAS and
    with 128 x 128 tiles unsplit (step 08 as it stands)."""
    lines = [f"step 09's dispatch table for the {table.gpu} ({table.sms} SMs), {table.measured}"]
    for cls in classes():
        rows = [t for t in timings if (t.waves, t.k) == cls]
        plan = table.plans.get(cls)
        if not rows or plan is None:
            continue
        best = next(t for t in rows if (t.tiles, t.splits) == (plan.tiles, plan.splits))
        plain = next((t for t in rows if (t.tiles, t.splits) == (by_shape.MEASURE_TILES, 1)), None)
        shape = f"{best.M}x{best.N}x{best.K}"
        pct = 100 * best.gflops / best.cublas_gflops
        before = f", 08 alone {100 * plain.gflops / plain.cublas_gflops:5.1f}%" if plain else ""
        lines.append(f"  {shape:<18} {plan!s:<28} {pct:5.1f}% of cuBLAS{before}")
    return "\n".join(lines)

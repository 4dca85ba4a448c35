"""How fast is each kernel, next to cuBLAS timed in the same run?

Every figure is GPU time only: the stream is held while each launch is queued, so the
host's launch work never lands between the CUDA events (autograder.run.device_clock),
and warm: the same inputs every sample, each timed launch right after an untimed one of
its own, so that it finds the caches as its own work leaves them, not as the kernel
before it in the round robin left them (a difference of up to 14 points of cuBLAS on an
H100). cuBLAS and the kernels are sampled in turn, until each one's noise settles
(autograder.judge.timing.sample); a figure is the median, with its number of samples and
its noise. A figure too noisy to decide anything is never published: bench stops and
says so. Each kernel's output is verified (timing.Verifier: the whole product, and a
sample of it element by element), so no wrong kernel gets a number. cuBLAS is CuPy's
matmul with TF32 off (strict FP32, see gpu.py). Every "% of cuBLAS" is computed from the
cuBLAS figure of the same run at the same shape, which is the one the tables print
beside it. A TF32 step is also timed against the library a reader would use instead:
cuBLAS with TF32 on (CUBLAS_TF32), sampled in the same round robin, its row's "% of
cuBLAS" against the same strict FP32 figure. Results carry the GPU, date and versions,
and merge into book/data/bench_<gpu>.csv, from which the book draws its plots.
"""

from __future__ import annotations

import csv
import datetime
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from functools import partial
from pathlib import Path
from statistics import geometric_mean

import numpy as np

from ..judge.checker import ALPHA, SENTINEL
from ..judge.timing import NOISY_ERROR, Verifier, gflops, sample
from ..ladder import registry
from ..ladder.registry import DATA_DIR
from ..run import composed, gpu, gpu_lock, paths
from ..run.kernel import KernelSpec
from . import typed_csv

# The row of cuBLAS with TF32 tensor cores, beside any step that rounds its inputs to
# TF32 (step 11): its GFLOP/s is what that step is compared with.
CUBLAS_TF32 = "cuBLAS_TF32"
DEFAULT_SIZES = ("1024", "2048", "4096", "1001x777x513", "4095x4097x4093")
# The published sweep (`bench --sweep`): how far one kernel goes beyond large squares.
# Each class is where one tile shape runs short: too few tiles for the SMs (small,
# skinny), too little K to amortise loading a tile (small K), long K loops, odd edges.
SWEEP = {
    "square": ("128", "256", "512", "1024", "2048", "4096", "8192"),
    "skinny": ("128x4096x4096", "4096x128x4096", "256x8192x4096", "8192x256x4096"),
    "small K": ("4096x4096x128", "8192x8192x256", "2000x3000x100"),
    "large K": ("1024x1024x16384", "512x512x32768"),
    "odd": ("333x777x129", "1001x777x513", "4095x4097x4093", "3001x2999x3003"),
}
# Shapes outside the sweep (`bench --outside`), none of them a shape any table was tuned
# at: skinny with M or N under 128 tiles' 128, K far longer than M and N, small K, with
# odd sides among them. Where a dispatcher fitted to the sweep would show it.
OUTSIDE = {
    "skinny <128": ("64x8192x4096", "8192x96x4096", "100x3000x2000"),
    "K ≫ M, N": ("256x256x65536", "300x200x50001"),
    "tiny K": ("6000x4000x32", "3001x5003x64"),
}


@dataclass(frozen=True)
class Row:
    kernel: str
    M: int
    N: int
    K: int
    gflops: float
    cublas_gflops: float
    pct_cublas: float
    pct_peak: float
    gpu: str
    date: str
    cuda: str
    cupy: str
    # How each figure was sampled: samples taken and noise (relative standard
    # deviation), for the kernel and for cuBLAS beside it.
    samples: int
    noise_pct: float
    cublas_samples: int
    cublas_noise_pct: float
    # What ran, where a launch chooses its path by shape (a tensor-core step: its
    # tensor cores in some layers of K, or step 09's FP32 GEMM; run.paths); "" where it
    # is the kernel itself, and in files written before the column was.
    path: str = ""
    # Which version of the kernel ran: the fingerprint of its step's file as it was
    # (registry.fingerprint; an ablation variant's, of the file it was made from), or
    # of all step 09 runs where that ran (fingerprint), so that the book can say when
    # a figure is of an earlier version; "" for cuBLAS's.
    source: str = ""

    @property
    def ran_fp32(self) -> bool:
        """Whether a tensor-core step ran step 09's FP32 GEMM here (run.paths)."""
        return self.path == paths.FP32


def parse_size(text: str) -> tuple[int, int, int]:
    """'4096' -> (4096, 4096, 4096); '4095x4097x4093' -> (4095, 4097, 4093)."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    if len(values) == 1:
        values *= 3
    if len(values) != 3 or min(values) < 1:
        raise ValueError(f"a size is N or MxNxK with positive integers, not {text!r}")
    return tuple(values)


class Noisy(RuntimeError):
    """A figure moved too much between samples to be published."""


@dataclass
class FirstUse:
    """What step 09's first-use tuning cost in a run (`bench --first-use`): the seconds
    each shape's first product spent tuning, before any of its samples."""

    seconds: dict[tuple[int, int, int], float]
    shapes: int = 0  # shapes timed at themselves
    classes: int = 0  # classes of larger shapes tuned

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def __str__(self) -> str:
        tuned = {s: t for s, t in self.seconds.items() if t > 0}
        where = ", ".join(f"{'x'.join(map(str, s))} {t:.1f} s" for s, t in tuned.items())
        return (
            f"first-use tuning: {self.shapes} shapes timed at themselves and {self.classes} "
            f"classes of larger shapes, in {self.total:.1f} s ({where or 'none'}), before the "
            "samples of those shapes"
        )


def bench(
    specs: dict[str, KernelSpec],
    sizes=DEFAULT_SIZES,
    progress=True,
    first_use: FirstUse | None = None,
    paths_raced: bool = True,
) -> list[Row]:
    """Time every kernel and cuBLAS on every size. Raises gpu.NoGPU without a GPU,
    Noisy when a figure would be too noisy to decide anything, or was taken while the
    GPU throttled. first_use: step 09 as on a GPU nobody tuned on (its committed table
    set aside; the tuning cache must be empty: see first_use_cache), its tuning done at
    each shape before the samples, untimed, and its seconds kept in first_use.
    paths_raced: a tensor-core step runs step 09's FP32 GEMM where it is faster (run.paths);
    False for an ablation, whose rows are the kernel's own variants at every shape."""
    gpu.require("bench")
    import cupy
    from tqdm import tqdm

    from ..run.backends import gpu_launcher
    from ..run.device_clock import DeviceClock, Throttled

    info = gpu.device_info()
    clock, here = DeviceClock(), gpu_lock.identity()
    rounding = {spec.input_roundoff for spec in specs.values()} - {0.0}
    tf32 = bool(rounding)
    today = datetime.date.today().isoformat()
    # Step 09 as the dispatcher chooses, not split on every shape as it is graded.
    launches = {
        name: gpu_launcher(
            replace(spec, split_every_case=False), tune=paths_raced, table=first_use is None
        )
        for name, spec in specs.items()
    }
    sources = {name: spec_fingerprint(spec) for name, spec in specs.items()}
    step_09 = composed.fingerprint()  # what a tensor-core step's FP32 path runs
    rng = cupy.random.default_rng()
    rows = []
    for M, N, K in tqdm(list(map(parse_size, sizes)), disable=not progress, unit="shape"):
        A = rng.standard_normal((M, K), dtype=cupy.float32)
        B = rng.standard_normal((K, N), dtype=cupy.float32)
        # An output each: a kernel that writes nothing leaves no product behind.
        out = {
            name: cupy.full((M, N), SENTINEL, dtype=cupy.float32) for name in ("cuBLAS", *launches)
        }
        # Step 09 chooses (and, on a GPU with no table, tunes on first use) here, untimed,
        # and a tensor-core step its path: no sample may hold the stream while they time.
        start = time.monotonic()
        for launch in launches.values():
            if hasattr(launch, "choose"):
                launch.choose(M, N, K)
        # What each tensor-core step runs here (and times, the first time: run.paths).
        path_of = {n: run.path(M, N, K) for n, run in launches.items() if hasattr(run, "path")}
        if first_use is not None:
            first_use.seconds[M, N, K] = time.monotonic() - start
            tuners = [
                launch.choose.first_use
                for launch in launches.values()
                if hasattr(getattr(launch, "choose", None), "first_use")
            ]
            first_use.shapes = sum(len(tuner.raced) for tuner in tuners)
            first_use.classes = sum(len(tuner.tuned) for tuner in tuners)
        runs = {"cuBLAS": partial(cupy.matmul, A, B, out=out["cuBLAS"])}
        runs |= {
            name: partial(launch, M, N, K, ALPHA, A, B, 0.0, out[name])
            for name, launch in launches.items()
        }
        if tf32:
            out[CUBLAS_TF32] = cupy.full((M, N), SENTINEL, dtype=cupy.float32)
            runs[CUBLAS_TF32] = partial(gpu.matmul_tf32, A, B, out[CUBLAS_TF32])
        with gpu_lock.alone(here):  # nothing of a `grade` on this GPU beside the samples
            samples = sample(runs, clock.warm)  # each after itself: see device_clock
        try:
            clock.require_steady(info.clock_mhz, f"at {M}x{N}x{K}")
        except Throttled as e:
            raise Noisy(f"{e}: not published; run again on a cool, idle GPU") from e
        # Each output against what its launch computed: the kernels alpha A B, cuBLAS
        # A B (matmul has no alpha); by how far a launch rounds its inputs (TF32).
        expected = {name: (ALPHA, spec.input_roundoff) for name, spec in specs.items()}
        if tf32:
            expected[CUBLAS_TF32] = (1.0, max(rounding))
        verifiers = {}
        for name, (alpha, roundoff) in expected.items():
            if (alpha, roundoff) not in verifiers:
                verifiers[alpha, roundoff] = Verifier(
                    cupy, A, B, alpha, roundoff, np.random.default_rng()
                )
            wrong = verifiers[alpha, roundoff].problem(cupy, out[name])
            if wrong:
                raise RuntimeError(f"{name} computed a wrong product at {M}x{N}x{K}: {wrong}")
        noisy = [f"{name} ({taken.error:.1%})" for name, taken in samples.items() if taken.noisy]
        if noisy:
            raise Noisy(
                f"at {M}x{N}x{K} the figures of {', '.join(noisy)} could move by more than "
                f"{NOISY_ERROR:.0%} in another run (is the GPU throttling, or shared?): "
                "not published; run again on a quiet GPU"
            )
        cublas = samples["cuBLAS"]
        for name in [*launches, *([CUBLAS_TF32] if tf32 else [])]:
            taken = samples[name]
            rate = gflops(M, N, K, taken.median)
            rows.append(
                Row(
                    name,
                    M,
                    N,
                    K,
                    round(rate, 1),
                    round(gflops(M, N, K, cublas.median), 1),
                    round(100 * cublas.median / taken.median, 1),
                    round(100 * rate / info.fp32_peak_gflops, 1),
                    info.name,
                    today,
                    info.cuda,
                    info.cupy,
                    len(taken.seconds),
                    round(100 * taken.noise, 2),
                    len(cublas.seconds),
                    round(100 * cublas.noise, 2),
                    path_of.get(name, ""),
                    step_09 if path_of.get(name) == paths.FP32 else sources.get(name, ""),
                )
            )
    return rows


def spec_fingerprint(spec: KernelSpec) -> str:
    """The fingerprint of the step spec's kernel is (a variant's too: see fingerprint),
    or of spec's own source where it is no step's."""
    step = registry.step_of_kernel(spec.filename, spec.name_expression)
    return fingerprint(step) if step else registry.fingerprint(spec.source)


def fingerprint(step: registry.Step, path: str = "") -> str:
    """The version of the code a step's figure was measured with: its file's
    fingerprint; for a reduction (step 09: the kernel of the "reduce" contract, around
    which the GPU backend builds step 09's GEMM), and for a tensor-core step where it
    ran that GEMM (a row's path, paths.FP32), that of all the GEMM runs
    (composed.fingerprint), most of which is step 08's kernel at by_shape's tile shapes."""
    fp32 = step.contract == "reduce" or path == paths.FP32
    return composed.fingerprint() if fp32 else step.fingerprint


def table(rows: list[Row]) -> str:
    """GFLOP/s (% of cuBLAS) with kernels down and sizes across."""
    if not rows:
        return "no results"
    sizes = sorted({(r.M, r.N, r.K) for r in rows}, key=lambda s: s[0] * s[1] * s[2])
    kernels = list(dict.fromkeys(r.kernel for r in rows))
    cell = {(r.kernel, (r.M, r.N, r.K)): r for r in rows}
    labels = [f"{m}x{n}x{k}" for m, n, k in sizes]
    width = max(18, *(len(label) + 2 for label in labels))
    head = (
        f"{'GFLOP/s (% cuBLAS)':<20}"
        + "".join(f"{label:>{width}}" for label in labels)
        + f"{'% FP32 peak':>14}"
    )  # at the largest size
    lines = [f"{rows[0].gpu}, CUDA {rows[0].cuda}, CuPy {rows[0].cupy}, {rows[0].date}", head]
    for k in kernels:
        cells = [cell.get((k, s)) for s in sizes]
        peak = cell.get((k, sizes[-1]))
        lines.append(
            f"{k:<20}"
            + "".join(
                f"{f'{c.gflops:.0f} ({c.pct_cublas:.1f}%){_mark(c)}' if c else '-':>{width}}"
                for c in cells
            )
            + f"{f'{peak.pct_peak:.1f}%' if peak else '-':>14}"
        )
    cublas = [cublas_at(rows, s) for s in sizes]
    lines.append(f"{'cuBLAS':<20}" + "".join(f"{c:>{width}.0f}" for c in cublas))
    lines += [*fp32_paths(rows), sampling(rows)]
    return "\n".join(lines)


def cublas_at(rows: list[Row], size: tuple[int, int, int]) -> float:
    """The one cuBLAS figure at a shape, which every % of cuBLAS there is computed from."""
    found = {r.cublas_gflops for r in rows if (r.M, r.N, r.K) == size}
    if len(found) != 1:
        raise ValueError(
            f"rows of several runs at {'x'.join(map(str, size))} (cuBLAS {sorted(found)}): "
            "a % of cuBLAS must be computed from the cuBLAS figure printed beside it"
        )
    return found.pop()


def _mark(row: Row) -> str:
    return "*" if row.ran_fp32 else ""


def fp32_paths(rows: list[Row]) -> list[str]:
    """A line for the table where a tensor-core step ran step 09's FP32 GEMM (marked *)."""
    if not any(_mark(r) for r in rows):
        return []
    return ["* the tensor cores were slower there: step 09's FP32 GEMM ran (run.paths)"]


def sampling(rows: list[Row]) -> str:
    """How the figures of a table were taken, with their spread, in one line."""
    counts = [n for r in rows for n in (r.samples, r.cublas_samples)]
    noise = max(rows, key=lambda r: max(r.noise_pct, r.cublas_noise_pct))
    many = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"
    return (
        f"GPU time only, warm; medians of {many} samples each; "
        f"noise (stdev/mean) at most {max(noise.noise_pct, noise.cublas_noise_pct):.1f}% "
        f"({noise.kernel if noise.noise_pct >= noise.cublas_noise_pct else 'cuBLAS'} at "
        f"{noise.M}x{noise.N}x{noise.K})"
    )


def sweep_sizes() -> list[str]:
    return [size for sizes in SWEEP.values() for size in sizes]


def outside_sizes() -> list[str]:
    return [size for sizes in OUTSIDE.values() for size in sizes]


@contextmanager
def first_use_cache():
    """An empty tuning cache for step 09 (autotune's), in a temporary directory, for the
    run inside: a GPU met for the first time. The user's own cache is left alone."""
    from ..run import autotune

    before = os.environ.get(autotune.CACHE_ENV)
    with tempfile.TemporaryDirectory(prefix="sgemm-first-use-") as directory:
        os.environ[autotune.CACHE_ENV] = directory
        try:
            yield Path(directory)
        finally:
            if before is None:
                del os.environ[autotune.CACHE_ENV]
            else:
                os.environ[autotune.CACHE_ENV] = before


def sweep_table(rows: list[Row]) -> str:
    """The sweep with shapes down and kernels across (% of cuBLAS), then each kernel's
    geometric mean and minimum over the shapes it ran."""
    kernels = list(dict.fromkeys(r.kernel for r in rows))
    cell = {(r.kernel, (r.M, r.N, r.K)): r for r in rows}
    width = max(16, *(len(k) + 2 for k in kernels))
    lines = [
        f"{rows[0].gpu}, CUDA {rows[0].cuda}, CuPy {rows[0].cupy}, {rows[0].date}",
        f"{'% cuBLAS':<10}{'shape':<18}" + "".join(f"{k:>{width}}" for k in kernels)
        + f"{'cuBLAS GFLOP/s':>16}",
    ]  # fmt: skip
    for group, sizes in (SWEEP | OUTSIDE).items():
        for size in map(parse_size, sizes):
            found = [cell.get((k, size)) for k in kernels]
            if not any(found):
                continue
            cublas = cublas_at(rows, size)
            lines.append(
                f"{group:<10}{'x'.join(map(str, size)):<18}"
                + "".join(
                    f"{f'{c.pct_cublas:.1f}{_mark(c)}' if c else '-':>{width}}" for c in found
                )
                + f"{cublas:>16.0f}"
            )
    outside = set(map(parse_size, outside_sizes()))
    for part, label in ((False, ""), (True, " outside")):
        values = [
            [r.pct_cublas for r in rows if r.kernel == k and ((r.M, r.N, r.K) in outside) == part]
            for k in kernels
        ]
        if not all(values):
            continue
        for name, summary in (("geomean", geometric_mean), ("minimum", min)):
            lines.append(
                f"{name + label:<28}" + "".join(f"{summary(v):>{width}.1f}" for v in values)
            )
    lines += [*fp32_paths(rows), sampling(rows)]
    return "\n".join(lines)


def read_csv(path: Path) -> list[Row]:
    return typed_csv.read(path, Row)


def default_csv_path(rows: list[Row], kind: str = "bench") -> Path:
    """book/data/<kind>_<gpu>.csv: kind "bench" for the ladder, "sweep" for --sweep,
    "sweep_first_use" for --sweep --first-use ("sweep_untuned" with SGEMM_AUTOTUNE=0),
    "ablation" (or "ablation12", ablation.kind) for --ablation."""
    return DATA_DIR / f"{kind}_{gpu.slug(rows[0].gpu)}.csv"


def write_csv(rows: list[Row], path: Path) -> Path:
    """Merge rows into path. A shape measured now replaces every old row at that shape,
    so that all the rows of a shape share one run's cuBLAS; the kernels whose rows go
    are named on stderr, to be measured again."""
    path = Path(path)
    measured = {(r.M, r.N, r.K) for r in rows}
    old = read_csv(path) if path.exists() else []
    kept = {(r.kernel, r.M, r.N, r.K): r for r in old if (r.M, r.N, r.K) not in measured}
    dropped = {(r.kernel, r.M, r.N, r.K) for r in old} - {(r.kernel, r.M, r.N, r.K) for r in rows}
    dropped -= set(kept)
    if dropped:
        print(
            f"{path.name}: dropped the older rows of {', '.join(sorted({d[0] for d in dropped}))} "
            "at the shapes measured now (one cuBLAS run per shape); measure them with these",
            file=sys.stderr,
        )
    kept.update({(r.kernel, r.M, r.N, r.K): r for r in rows})
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[f.name for f in fields(Row)])
        writer.writeheader()
        writer.writerows(
            asdict(r) for r in sorted(kept.values(), key=lambda r: (r.kernel, r.M * r.N * r.K))
        )
    return path


def figure(rows: list[Row]):
    """GFLOP/s against problem size, one line per kernel and one for cuBLAS."""
    import matplotlib.pyplot as plt

    sizes = sorted({(r.M, r.N, r.K) for r in rows}, key=lambda s: s[0] * s[1] * s[2])
    x = np.arange(len(sizes))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for k in dict.fromkeys(r.kernel for r in rows):
        by_size = {(r.M, r.N, r.K): r.gflops for r in rows if r.kernel == k}
        ax.plot(x, [by_size.get(s, np.nan) for s in sizes], marker="o", label=k)
    cublas = {(r.M, r.N, r.K): r.cublas_gflops for r in rows}
    ax.plot(
        x,
        [cublas[s] for s in sizes],
        marker="s",
        color="black",
        linestyle="--",
        label="cuBLAS (FP32)",
    )
    ax.set_xticks(x, [f"{m}x{n}x{k}" for m, n, k in sizes], rotation=20)
    ax.set_yscale("log")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"SGEMM on {rows[0].gpu} ({rows[0].date}, CUDA {rows[0].cuda})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot(rows: list[Row], path: Path) -> Path:
    """figure(rows) written to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(rows)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)

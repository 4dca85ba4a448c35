"""Tensor cores and precision: the TF32 and 3xTF32 steps against cuBLAS with TF32 and
strict FP32 (book/data/beyond_*.csv), and the accuracy runs of TF32 and 3xTF32
(book/data/tf32_accuracy_*.txt, fp32_accuracy_*.csv).
"""

from __future__ import annotations

import math
import re
from statistics import geometric_mean

from IPython.display import Markdown

from autograder.judge import checker
from autograder.ladder import registry
from autograder.measure import accuracy, bench
from autograder.run import gpu, paths

from .common import (
    DATA,
    TENSOR_CORES_ON,
    _kernel,
    _run_source,
    beyond_results,
    tensor_core_sweep,
)
from .tuning import TUNED_ON


# The tensor-core steps' rows in the sweep: 12 (TF32) and 13 (3xTF32).
_TENSOR_CORE_STEPS = (_kernel("12"), _kernel("13"))


def tensor_core_sweep_table(gpu: str = TENSOR_CORES_ON) -> Markdown:
    """Steps 12 and 13 at every shape of the sweep and outside it, each beside the library
    it competes with, timed in one run: 12 against cuBLAS with TF32, 13 (FP32 results)
    against strict-FP32 cuBLAS; each ratio from the figures in its row (tensor_core_ratios),
    with their geometric means and minimums."""
    rows = tensor_core_sweep(gpu)
    by = {(r.kernel, r.M, r.N, r.K): r for r in rows}
    of = tensor_core_ratios(gpu)
    lines = [
        "| M×N×K | 12 (TF32), GFLOP/s | cuBLAS TF32 | 12 ÷ cuBLAS TF32 "
        "| 13 (3xTF32), GFLOP/s | cuBLAS strict FP32 | 13 ÷ strict FP32 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for shape in sorted(of["13"], key=math.prod):
        r12, r13, lib = (by[name, *shape] for name in (*_TENSOR_CORE_STEPS, bench.CUBLAS_TF32))
        lines.append(
            f"| {'×'.join(map(str, shape))} | {r12.gflops:.0f}{_mark(r12)} | {lib.gflops:.0f} "
            f"| {100 * of['12'][shape]:.1f}% | {r13.gflops:.0f}{_mark(r13)} "
            f"| {r13.cublas_gflops:.0f} | {of['13'][shape]:.2f}× |"
        )
    twelve, thirteen = of["12"].values(), of["13"].values()
    lines.append(
        f"| geometric mean | | | {100 * geometric_mean(twelve):.1f}% "
        f"| | | {geometric_mean(thirteen):.2f}× |"
    )
    lines.append(f"| minimum | | | {100 * min(twelve):.1f}% | | | {min(thirteen):.2f}× |")
    return Markdown(
        "\n".join(lines) + f"\n\n{_run_source(rows)} With `--sweep --outside`. Shapes of fewer "
        "blocks than SMs run in layers of K, large ones whose rows TMA cannot describe on "
        "zero-padded copies (`autograder/run/split_k.py`); \\* the tensor cores lost there "
        "to step 09's FP32 kernels, which ran instead, † blocks of fewer rows than the "
        "step's own won there (`autograder/run/paths.py`)."
    )


def _mark(row: bench.Row) -> str:
    """A row's mark: \\* where step 09's FP32 GEMM ran, † where blocks of fewer rows than
    the step's own did."""
    return "\\*" if row.ran_fp32 else "†" if _smaller_blocks([row]) else ""


def _smaller_blocks(rows: list[bench.Row]) -> list[bench.Row]:
    return [
        r
        for r in rows
        if not r.ran_fp32 and paths.block_rows(r.path) < registry.step(r.kernel).params["BM"]
    ]


def path_of(step: str, shape: tuple[int, int, int], gpu: str = TENSOR_CORES_ON) -> str:
    """What ran step 12 or 13 at a shape of the committed sweep, in the words bench
    recorded ('tensor cores, 128-row blocks, 22 layers of K, on padded copies')."""
    (row,) = [
        r for r in tensor_core_sweep(gpu) if r.kernel == _kernel(step) and (r.M, r.N, r.K) == shape
    ]
    return row.path


def smaller_block_shapes(step: str, gpu: str = TENSOR_CORES_ON) -> list[tuple[int, int, int]]:
    """The shapes of the committed sweep where step 12 or 13 ran blocks of fewer rows than
    its own (paths)."""
    ours = [r for r in tensor_core_sweep(gpu) if r.kernel == _kernel(step)]
    return [(r.M, r.N, r.K) for r in _smaller_blocks(ours)]


def race_us() -> float:
    """The largest product whose paths are timed, in microseconds of FP32 arithmetic at
    the GPU's peak (paths.RACE_S)."""
    return paths.RACE_S * 1e6


def race_gflop(gpu: str = TENSOR_CORES_ON) -> float:
    """The largest product, in GFLOP, whose paths the tensor-core GEMM times on the GPU
    of the sweep: paths.RACE_S at its FP32 peak (the peak bench divided by, row by row)."""
    r = max(tensor_core_sweep(gpu), key=lambda r: r.M * r.N * r.K)
    return paths.RACE_S * r.gflops / (r.pct_peak / 100)


def shape_list(shapes) -> str:
    """'128×128×128, 256×256×256 and 333×777×129'."""
    names = ["×".join(map(str, s)) for s in sorted(shapes, key=math.prod)]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def fp32_path_shapes(step: str, gpu: str = TENSOR_CORES_ON) -> list[tuple[int, int, int]]:
    """The shapes of the committed sweep where step 12 or 13 ran step 09's FP32 GEMM."""
    return [
        (r.M, r.N, r.K)
        for r in tensor_core_sweep(gpu)
        if r.kernel == _kernel(step) and r.ran_fp32
    ]


def tensor_core_ratios(gpu: str = TENSOR_CORES_ON) -> dict[str, dict[tuple, float]]:
    """12 ÷ cuBLAS TF32 and 13 ÷ strict cuBLAS at each shape of the committed sweep, for the
    table and the chapters' sentences: {"12": {(M, N, K): ratio}, "13": {...}}."""
    rows = tensor_core_sweep(gpu)
    lib = {(r.M, r.N, r.K): r.gflops for r in rows if r.kernel == bench.CUBLAS_TF32}
    shape = lambda r: (r.M, r.N, r.K)  # noqa: E731
    step12, step13 = _TENSOR_CORE_STEPS
    of12 = {shape(r): r.gflops / lib[shape(r)] for r in rows if r.kernel == step12}
    of13 = {shape(r): r.gflops / r.cublas_gflops for r in rows if r.kernel == step13}
    return {"12": of12, "13": of13}


# ---- what the tensor cores keep when they add: book/data/accumulator_<gpu>.csv ----


def accumulator_table(gpu: str = TENSOR_CORES_ON) -> Markdown:
    """The probe of the tensor cores' additions (book/tf32_accumulator.py): for a term added
    to 1 at each place, how many bits below the leading one it keeps, and which way the
    sum rounds, through the FP32 lanes (08), one wgmma accumulator over K (12) and slices
    promoted into FP32 registers (13)."""
    rows = accuracy.read(DATA / f"accumulator_{gpu}.csv", accuracy.Kept)
    kernels = list(dict.fromkeys(r.kernel for r in rows))
    cell = {(r.kernel, r.place): f"{r.bits} bits, {r.rounding}" for r in rows}
    lines = ["| a term added to 1 | " + " | ".join(kernels) + " |"]
    lines.append("|---" * (len(kernels) + 1) + "|")
    for place in accuracy.PLACES:
        lines.append(f"| {place} | " + " | ".join(cell[k, place] for k in kernels) + " |")
    first = rows[0]
    return Markdown(
        "\n".join(lines) + f'\n\nEach term exact in TF32 and FP32, B all ones; "bits": the '
        "largest e for which 1 + 2⁻ᵉ came out exactly (FP32 keeps 23); the rounding from "
        "1 + 1.75·2⁻²³ and 1 − 2⁻²⁵. "
        f"{first.gpu}, {first.date}, CUDA {first.cuda} (`book/tf32_accumulator.py`)."
    )


# ---- FP32 accuracy on tensor cores: book/data/fp32_accuracy_<gpu>.csv ----


# The data name their inputs as book/fp32_accuracy.py writes them (A near 2^-120); a
# table shows the powers as a reader reads them (2⁻¹²⁰), not as TeX left as text.
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _powers(text: str) -> str:
    return re.sub(r"\^(-?\d+)", lambda m: m[1].translate(_SUPERSCRIPT), text)


def fp32_accuracy(gpu: str = TENSOR_CORES_ON) -> list[accuracy.Row]:
    return accuracy.read(DATA / f"fp32_accuracy_{gpu}.csv")


STEP13, STRICT = "13_wgmma_3xtf32 (3xTF32)", "cuBLAS, strict FP32"


def fp32_accuracy_table(K: int = 4096, gpu: str = TENSOR_CORES_ON) -> Markdown:
    """Each result's largest and median error in FP32 units at one K, and its largest as a
    share of the checker's FP32 tolerance there: above 1, the checker fails it."""
    rows = [r for r in fp32_accuracy(gpu) if r.K == K]
    lines = [
        "| inputs | result | max e, in 2⁻²⁴ | median e, in 2⁻²⁴ | max e ÷ FP32 tolerance "
        "| ‖C − exact‖ / ‖exact‖ |",
        "|---|---|---:|---:|---:|---:|",
    ]
    tolerance = checker.tolerance_factor(K)
    for r in rows:
        lines.append(
            f"| {_powers(r.inputs)} | {r.result} | {r.max_e / checker.U:.1f} "
            f"| {r.median_e / checker.U:.2f} | {r.max_e / tolerance:.2f} | {r.relative_norm:.1e} |"
        )
    first = rows[0]
    return Markdown(
        "\n".join(lines) + f"\n\nM = N = 4096, K = {K}: e = |C − exact| / (|A||B|), element by "
        "element, against a float64 product; the FP32 tolerance is the checker's, (8 + 2√K) "
        f"2⁻²⁴. {first.gpu}, {first.date}, CUDA {first.cuda}, CuPy {first.cupy} "
        "(`book/fp32_accuracy.py`)."
    )


def fp32_accuracy_ratios(gpu: str = TENSOR_CORES_ON) -> dict[tuple[str, int], tuple[float, float]]:
    """Step 13's largest error and norm error over strict cuBLAS's, by (inputs, K)."""
    rows = {(r.inputs, r.K, r.result): r for r in fp32_accuracy(gpu)}
    return {
        (inputs, K): (r.max_e / rows[inputs, K, STRICT].max_e,
                      r.relative_norm / rows[inputs, K, STRICT].relative_norm)
        for (inputs, K, result), r in rows.items()
        if result == STEP13
    }  # fmt: skip


def fp32_accuracy_ratio_table(gpu: str = TENSOR_CORES_ON) -> Markdown:
    """Step 13 against strict cuBLAS at every K measured, input by input: its largest error
    and its norm error as multiples of strict FP32's (below 1: more accurate)."""
    ratios = fp32_accuracy_ratios(gpu)
    ks = sorted({K for _, K in ratios})
    kinds = list(dict.fromkeys(inputs for inputs, _ in ratios))
    lines = [
        "| inputs | " + " | ".join(f"K = {K}" for K in ks) + " |",
        "|---" + "|---:" * len(ks) + "|",
    ]
    for inputs in kinds:
        cells = [f"{ratios[inputs, K][0]:.2f} / {ratios[inputs, K][1]:.2f}" for K in ks]
        lines.append(f"| {_powers(inputs)} | " + " | ".join(cells) + " |")
    return Markdown(
        "\n".join(lines) + "\n\nEach cell: step 13's largest error ÷ strict cuBLAS's, then its "
        "‖C − exact‖ ÷ strict cuBLAS's, M = N = 4096, in the same run (`book/fp32_accuracy.py`)."
    )


# ---- the accuracy of TF32: book/data/tf32_accuracy_<gpu>.txt ----


def tf32_errors(gpu: str = TUNED_ON) -> dict[str, tuple[float, ...]]:
    """(max e, median e, max e / u32, max e / u, median e / u, relative norm error) of each
    result in the committed accuracy run, by its name."""
    import re

    text = (DATA / f"tf32_accuracy_{gpu}.txt").read_text()
    number = r"\s+(\d+\.?\d*(?:e-\d+)?)"
    found = {}
    for line in text.splitlines():
        m = re.match(r"(.+?)" + number * 6 + r"\s*$", line)
        if m:
            found[m.group(1).strip()] = tuple(float(v) for v in m.groups()[1:])
    return found


def tf32_accuracy_table(gpu: str = TUNED_ON) -> Markdown:
    """The committed accuracy run as a table (book/tf32_accuracy.py wrote it as text)."""
    head = (DATA / f"tf32_accuracy_{gpu}.txt").read_text().splitlines()[0]
    lines = [
        "| result | max e | median e | max e in FP32 units (2⁻²⁴) | max e in TF32 units (2⁻¹¹) "
        "| ‖C − exact‖ / ‖exact‖ |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, (emax, emed, in_u32, in_u, _, rel) in tf32_errors(gpu).items():
        lines.append(
            f"| {name} | {emax:.2e} | {emed:.2e} | {in_u32:.1f} | {in_u:.3f} | {rel:.2e} |"
        )
    return Markdown(
        "e = |C − exact| / (|A||B|), element by element, against a float64 product; "
        f"{head} (`book/tf32_accuracy.py`).\n\n" + "\n".join(lines)
    )


def tf32_table(step_id: str = "11") -> Markdown:
    """A TF32 step beside cuBLAS with TF32 and strict cuBLAS, all timed in one run
    (book/data/beyond_*.csv): each percentage computed from the figures in its row."""
    rows = beyond_results()
    timed = [r for r in rows if r.kernel == _kernel(step_id)]
    library = {(r.M, r.N, r.K): r for r in rows if r.kernel == bench.CUBLAS_TF32}
    # The committed run's GPU is an H100 (compute capability 9.0).
    tf32_peak_pct = 1 / gpu.tf32_per_fp32((9, 0))
    n = int(step_id)
    lines = [
        f"| M×N×K | {n}, GFLOP/s | cuBLAS TF32, GFLOP/s | {n}, % of cuBLAS TF32 "
        f"| {n}, % of the TF32 peak | cuBLAS strict FP32, GFLOP/s | {n} ÷ strict FP32 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(timed, key=lambda r: r.M * r.N * r.K):
        lib = library[r.M, r.N, r.K]
        lines.append(
            f"| {r.M}×{r.N}×{r.K} | {r.gflops:.0f} | {lib.gflops:.0f} "
            f"| {100 * r.gflops / lib.gflops:.1f}% | {r.pct_peak * tf32_peak_pct:.1f}% "
            f"| {r.cublas_gflops:.0f} | {r.gflops / r.cublas_gflops:.2f}× |"
        )
    return Markdown(
        "\n".join(lines) + f"\n\n{_run_source(rows)} The TF32 peak is the dense tensor-core "
        "rate at the boost clock the FP32 peak is "
        f"counted at, {gpu.tf32_per_fp32((9, 0)):.0f} times it on an H100."
    )

"""Tensor cores and precision: the TF32 and 3xTF32 steps against cuBLAS with TF32 and
strict FP32 (book/data/beyond_*.csv), and the accuracy runs of TF32 and 3xTF32
(book/data/tf32_accuracy_*.txt, fp32_accuracy_*.csv).
"""

from __future__ import annotations

import math
import re

from IPython.display import Markdown

from autograder.judge import checker
from autograder.measure import accuracy, bench
from autograder.run import gpu

from .common import (
    DATA,
    _kernel,
    _run_source,
    beyond_results,
)
from .tuning import TUNED_ON


def fp32_on_tensor_cores_table(step_id: str = "13", tf32_step: str = "12") -> Markdown:
    """An FP32-exact tensor-core step beside strict cuBLAS, the FP32-accurate peak (3xTF32's:
    a third of the TF32 peak) and the TF32 step it splits its inputs for, all timed in one
    run (book/data/beyond_*.csv): each ratio computed from the figures in its row."""
    rows = beyond_results()
    timed = {(r.M, r.N, r.K): r for r in rows if r.kernel == _kernel(step_id)}
    tf32 = {(r.M, r.N, r.K): r for r in rows if r.kernel == _kernel(tf32_step)}
    n, t = int(step_id), int(tf32_step)
    # The committed run's GPU is an H100: 3xTF32 peaks at a third of its TF32 rate.
    accurate_peak = gpu.tf32_per_fp32((9, 0)) / 3
    lines = [
        f"| M×N×K | {n}, GFLOP/s | cuBLAS strict FP32, GFLOP/s | {n} ÷ strict FP32 "
        f"| {n}, % of the 3xTF32 peak | {t} (TF32), GFLOP/s | {n} ÷ {t} |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, r in sorted(timed.items(), key=lambda kv: math.prod(kv[0])):
        lines.append(
            f"| {r.M}×{r.N}×{r.K} | {r.gflops:.0f} | {r.cublas_gflops:.0f} "
            f"| {r.gflops / r.cublas_gflops:.2f}× | {r.pct_peak / accurate_peak:.1f}% "
            f"| {tf32[key].gflops:.0f} | {r.gflops / tf32[key].gflops:.2f} |"
        )
    return Markdown(
        "\n".join(lines) + f"\n\n{_run_source(rows)} The 3xTF32 peak is a third of the dense "
        "TF32 tensor-core rate at the boost clock the FP32 peak "
        f"is counted at: {accurate_peak:.2f} times the FP32 peak on an H100."
    )


# ---- FP32 accuracy on tensor cores: book/data/fp32_accuracy_<gpu>.csv ----


# The data name their inputs as book/fp32_accuracy.py writes them (A near 2^-120); a
# table shows the powers as a reader reads them (2⁻¹²⁰), not as TeX left as text.
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _powers(text: str) -> str:
    return re.sub(r"\^(-?\d+)", lambda m: m[1].translate(_SUPERSCRIPT), text)


def fp32_accuracy(gpu: str = TUNED_ON) -> list[accuracy.Row]:
    return accuracy.read(DATA / f"fp32_accuracy_{gpu}.csv")


def fp32_accuracy_table(gpu: str = TUNED_ON) -> Markdown:
    """Each result's largest and median error in FP32 units, and its largest as a share
    of the checker's FP32 tolerance at that K: above 1, the checker fails it."""
    rows = fp32_accuracy(gpu)
    lines = [
        "| inputs | result | max e, in 2⁻²⁴ | median e, in 2⁻²⁴ | max e ÷ FP32 tolerance "
        "| ‖C − exact‖ / ‖exact‖ |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        tolerance = checker.tolerance_factor(r.K)
        lines.append(
            f"| {_powers(r.inputs)} | {r.result} | {r.max_e / checker.U:.1f} | {r.median_e / checker.U:.2f} "
            f"| {r.max_e / tolerance:.2f} | {r.relative_norm:.1e} |"
        )
    first = rows[0]
    return Markdown(
        "\n".join(lines) + f"\n\nAt {first.K}³, e = |C − exact| / (|A||B|), element by element, "
        f"against a float64 product; the FP32 tolerance is the checker's, (8 + 2√K) 2⁻²⁴ at "
        f"K = {first.K}. {first.gpu}, {first.date}, CUDA {first.cuda}, CuPy {first.cupy} "
        "(`book/fp32_accuracy.py`)."
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

"""The ladder's measurements (book/data/bench_*.csv, beyond_*.csv, clocks_*.csv): each
step against the one before it and cuBLAS, in plots and tables, the progression up the
ladder, the bonus kernels' run, and a chapter's "you are here".
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from IPython.display import Markdown

from autograder.ladder import registry
from autograder.measure import bench

from .common import (
    DATA,
    LARGEST,
    NOT_YET_MEASURED,
    SMALL,
    WIDTH,
    _before,
    _kernel,
    _size,
    _size_label,
    _step_and_before,
    _steps_timed,
    beyond_results,
    measured_earlier,
    not_measured,
    provenance,
    results,
    show,
    tensor_core_rows,
)


def clock_table():
    """The same work timed three ways (`python -m autograder clocks`,
    book/data/clocks_*.csv), as text."""
    from autograder.measure import clocks

    for path in sorted(DATA.glob("clocks_*.csv")):
        print(clocks.table(clocks.read_csv(path)))


def clock_row(work: str):
    """One row of the committed `clocks` measurement (the first GPU's)."""
    from autograder.measure import clocks

    for path in sorted(DATA.glob("clocks_*.csv")):
        for row in clocks.read_csv(path):
            if row.work == work:
                return row
    raise KeyError(f"no row {work!r} in book/data/clocks_*.csv: `python -m autograder clocks`")


def bench_plot(rows: list[bench.Row]):
    """GFLOP/s against problem size (M×N×K), one line per kernel and one for cuBLAS, as
    `bench --plot` draws it (bench.figure) but sized for the book's column: labelled axes,
    text of SMALL points and the legend under the axes, off the data."""
    sizes = sorted({(r.M, r.N, r.K) for r in rows}, key=lambda s: s[0] * s[1] * s[2])
    kernels = list(dict.fromkeys(r.kernel for r in rows))
    fig, ax = plt.subplots(figsize=(WIDTH, 3.6 + 0.25 * math.ceil((len(kernels) + 1) / 2)))
    for k in kernels:
        by_size = {(r.M, r.N, r.K): r.gflops for r in rows if r.kernel == k}
        ax.plot(range(len(sizes)), [by_size.get(s, math.nan) for s in sizes], marker="o", label=k)
    cublas = {(r.M, r.N, r.K): r.cublas_gflops for r in rows}
    ax.plot(range(len(sizes)), [cublas[s] for s in sizes], marker="s", color="black",
            linestyle="--", label="cuBLAS (FP32)")  # fmt: skip
    ax.set_xticks(range(len(sizes)), [f"{m}×{n}×{k}" for m, n, k in sizes], fontsize=SMALL)
    ax.tick_params(labelsize=SMALL)
    ax.set_xlabel("problem size M×N×K (C is M×N, the sum runs over K)", fontsize=SMALL + 1)
    ax.set_yscale("log")
    ax.set_ylabel("GFLOP/s (log scale)", fontsize=SMALL + 1)
    ax.set_title(f"SGEMM on the {rows[0].gpu} ({rows[0].date}, CUDA {rows[0].cuda})",
                 fontsize=SMALL + 1)  # fmt: skip
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=SMALL, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.22),
              frameon=False)  # fmt: skip
    fig.tight_layout()
    return fig


def ladder(kernels: list[str] | None = None):
    """GFLOP/s against size for some steps of the ladder (all by default) and cuBLAS."""
    rows = [r for r in results() if kernels is None or r.kernel in kernels]
    show(bench_plot(rows))
    names = kernels or [s.name for s in registry.STEPS]
    return Markdown(f"{provenance(rows)} {not_measured(names)}".strip())


def progression(size=LARGEST) -> Markdown:
    """The ladder at one size: GFLOP/s, % of cuBLAS, % of FP32 peak, gain over the step before."""
    measured = {r.kernel: r for r in results() if (r.M, r.N, r.K) == size}
    rows = [measured[s.name] for s in registry.STEPS if s.name in measured]
    lines = [
        "| step | GFLOP/s | % of cuBLAS | % of FP32 peak | × previous step |",
        "|---|---:|---:|---:|---:|",
    ]
    previous = None
    for step in registry.STEPS:
        r = measured.get(step.name)
        if r is None:
            if step.name in NOT_YET_MEASURED:
                lines.append(f"| {step.name} | not yet measured | | | |")
            continue
        gain = f"{r.gflops / previous.gflops:.1f}×" if previous else ""
        if previous and registry.step(previous.kernel[:2]) is not _before(step):
            gain += f" (over {previous.kernel})"
        lines.append(
            f"| {r.kernel} | {r.gflops:.0f} | {r.pct_cublas:.1f}% | {r.pct_peak:.1f}% | {gain} |"
        )
        previous = r
    lines.append(f"| cuBLAS | {rows[0].cublas_gflops:.0f} | 100% | | |")
    names = [s.name for s in registry.STEPS]
    caption = f"\n\nAt {size[0]}×{size[1]}×{size[2]}. {provenance(rows)} {not_measured(names)}"
    return Markdown("\n".join(lines) + caption)


def beyond() -> Markdown:
    """The bonus kernels, step 08 and cuBLAS, measured in one run
    (book/data/beyond_*.csv)."""
    rows = []
    for path in sorted(DATA.glob("beyond_*.csv")):
        rows += bench.read_csv(path)
    print(bench.table(rows))
    first = rows[0]
    steps = _steps_timed(rows)
    return Markdown(
        f"Measured by `python -m autograder bench {steps}` on an {first.gpu}, {first.date}, "
        f"CUDA {first.cuda}, CuPy {first.cupy}; cuBLAS is strict FP32 (TF32 off), timed in "
        "the same run, and cuBLAS_TF32 is cuBLAS with TF32 on (data: "
        '`book/data/beyond_*.csv`). For 11, 12 and 13, the "% FP32 peak" passes 100%: tensor '
        f"cores are not FP32 lanes.{measured_earlier(rows)}"
    )


def step_result(step_id: str) -> Markdown:
    """One step against the one before it and cuBLAS, at every measured size."""
    names = _step_and_before(step_id)
    rows = results()
    sizes = sorted({(r.M, r.N, r.K) for r in rows}, key=lambda s: s[0] * s[1] * s[2])
    cell = {(r.kernel, (r.M, r.N, r.K)): r for r in rows}
    lines = ["| size | " + " | ".join(names) + " | cuBLAS |", "|---|" + "---:|" * (len(names) + 1)]
    for size in sizes:
        shown = [cell.get((n, size)) for n in names]
        expected = [r for r, n in zip(shown, names) if n not in NOT_YET_MEASURED]
        if not expected or not all(expected):
            continue
        lines.append(
            f"| {size[0]}×{size[1]}×{size[2]} | "
            + " | ".join(f"{r.gflops:.0f} ({r.pct_cublas:.1f}%)" if r else "—" for r in shown)
            + f" | {expected[0].cublas_gflops:.0f} |"
        )
    text = "GFLOP/s (% of cuBLAS).\n\n" + "\n".join(lines) + f"\n\n{provenance(rows)}"
    return Markdown(f"{text} {not_measured(names)}".strip())


def step_plot(step_id: str):
    """GFLOP/s against size for a step, the step before it, and cuBLAS."""
    names = _step_and_before(step_id)
    rows = [r for r in results() if r.kernel in names]
    show(bench_plot(rows))
    missing = not_measured(names)
    return Markdown(f"The plot leaves out what was not measured. {missing}") if missing else None


def speedup_by_size(step_a: str, step_b: str) -> Markdown:
    """GFLOP/s of step_b over step_a at every size both were measured at."""
    a, b = _kernel(step_a), _kernel(step_b)
    rows = {(r.kernel, (r.M, r.N, r.K)): r for r in results()}
    sizes = sorted({z for k, z in rows if k == a and (b, z) in rows}, key=math.prod)
    lines = [f"| size | {a} | {b} | {b[:2]} / {a[:2]} |", "|---|---:|---:|---:|"]
    for z in sizes:
        ra, rb = rows[(a, z)], rows[(b, z)]
        lines.append(
            f"| {_size_label(z)} | {ra.gflops:,.0f} | {rb.gflops:,.0f} | "
            f"{rb.gflops / ra.gflops:.1f}× |"
        )
    return Markdown("\n".join(lines) + f"\n\nGFLOP/s. {provenance(results())}")


def naive_by_stride() -> Markdown:
    """Step 01 at every measured size, with the distance in bytes between the A
    elements that neighbouring lanes of a warp read (K floats)."""
    name = _kernel("01")
    rows = sorted((r for r in results() if r.kernel == name), key=lambda r: (r.K & (r.K - 1), r.K))
    lines = [
        "| size | K | lanes' A reads apart | a power of two? | GFLOP/s |",
        "|---|---:|---:|---|---:|",
    ]
    for r in rows:
        stride = 4 * r.K
        two = stride & (stride - 1) == 0
        lines.append(
            f"| {_size_label((r.M, r.N, r.K))} | {r.K} | {stride:,} B | "
            f"{'yes' if two else 'no'} | {r.gflops:,.0f} |"
        )
    return Markdown("\n".join(lines) + f"\n\n{provenance(results())}")


# ---- the ladder at a glance: each chapter's rung (the landing page's is landing.py) ----


def beyond_row(step, size=LARGEST) -> bench.Row:
    """A step's row in the bonus kernels' run (book/data/beyond_*.csv), which timed 08,
    10, 11 and cuBLAS together; or cuBLAS with TF32's (step = bench.CUBLAS_TF32)."""
    name = step if step == bench.CUBLAS_TF32 else _kernel(step)
    key = _size(size)
    for r in beyond_results():
        if r.kernel == name and (r.M, r.N, r.K) == key:
            return r
    raise KeyError(f"no row of {name} at {_size_label(size)} in book/data/beyond_*.csv")


def _rungs(size=LARGEST) -> list[bench.Row]:
    """The ladder's measured steps at one size, in order (book/data/bench_*.csv)."""
    measured = {r.kernel: r for r in results() if (r.M, r.N, r.K) == size}
    return [measured[s.name] for s in registry.STEPS if s.name in measured]


def fp32_peak(rows: list[bench.Row]) -> float:
    """The GPU's FP32 peak in GFLOP/s, as the bench reckoned it: each row's GFLOP/s over
    its % of peak (the CSV keeps both), from the fastest row, where the rounding of the
    percentage matters least."""
    best = max(rows, key=lambda r: r.gflops)
    return best.gflops * 100 / best.pct_peak


def you_are_here(step_id: str, size=LARGEST) -> Markdown:
    """Where a chapter's step stands on the ladder: one line that names its GFLOP/s, its
    share of cuBLAS and of the FP32 peak at one size, and every step's share of cuBLAS
    with this one in bold, linked to their chapters."""
    step = registry.step(step_id)
    rows = _rungs(size)
    if step.name in {r.kernel for r in rows}:
        r = next(r for r in rows if r.kernel == step.name)
        here = (
            f"**You are here: step {step.id}**, {r.gflops:,.0f} GFLOP/s at {_size_label(size)}, "
            f"{r.pct_cublas:.1f}% of cuBLAS and {r.pct_peak:.1f}% of the FP32 peak on an {r.gpu}."
        )
    elif step in registry.BEYOND:
        timed = tensor_core_rows(size)
        r, tf32 = timed[step.name], timed[bench.CUBLAS_TF32]
        here = (
            f"**You are here: beyond the ladder**, step {step.id}: {r.gflops:,.0f} GFLOP/s at "
            f"{_size_label(size)}, {r.pct_cublas:.1f}% of strict-FP32 cuBLAS timed in the same "
            f"run (cuBLAS with TF32: {tf32.pct_cublas:.1f}%), on an {r.gpu}."
        )
    else:
        first = rows[0]
        here = (
            f"**You are here: step {step.id}**, on the CPU, before the ladder's first GPU "
            f"step ({first.kernel[:2]}: {first.pct_cublas:.1f}% of cuBLAS at "
            f"{_size_label(size)})."
        )
    rungs = " · ".join(
        (f"**{r.kernel[:2]}: {r.pct_cublas:.0f}%**" if r.kernel == step.name
         else f"{{doc}}`{r.kernel[:2]} <{r.kernel}>`: {r.pct_cublas:.0f}%")
        for r in rows
    )  # fmt: skip
    return Markdown(
        f"```{{admonition}} The ladder at {_size_label(size)}\n:class: ladder-here\n\n{here}\n"
        f"Every step, % of cuBLAS: {rungs}. The whole ladder: {{doc}}`index`.\n```"
    )

"""The landing page and the exercises: the ladder at a glance (a chart that names every
step, with the steps beyond the FP32 ladder on their own scale, and a table), where the
ladder ends, the list of exercise notebooks, and each chapter's exercise line. The
steps, their names and their notebooks come from the registry and the assignments;
every number from book/data/bench_*.csv and tensor_cores_*.csv.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from IPython.display import Markdown

from autograder.course import pictures, repository
from autograder.course.assignments import ASSIGNMENTS, Assignment
from autograder.ladder import registry
from autograder.measure import bench

from .common import (
    LARGEST,
    NOT_YET_MEASURED,
    SMALL,
    _size_label,
    bench_row,
    measured_earlier,
    tensor_core_rows,
    tensor_core_sweep,
)
from .rungs import _rungs, fp32_peak

# The chart is about 315 px wide, to fit a phone's column at its own size; its steps'
# names, the longest text on it, are a point smaller than its other text (11 px still).
CHART_WIDTH, NAME = 3.15, SMALL - 1
ROW = 0.42  # inches per step: its name above its bar


def _precision(step: registry.Step) -> str:
    """How accurate a step's product is: TF32 where it rounds its inputs to TF32 (the
    registry says how far), FP32 otherwise (3xTF32 included: its three TF32 products
    keep FP32's accuracy)."""
    return "TF32" if step.input_roundoff else "FP32"


COLOURS = {"FP32": pictures.VERMILLION, "TF32": pictures.SKY}


def _panel(ax, rows: list[bench.Row], lines, title: str, size) -> None:
    """One panel of the ladder chart: each row's TFLOP/s as a bar, named above it by its
    step's number and title, coloured by how accurate it is; `lines` are
    (label, GFLOP/s, colour, style, side) drawn across it and named at its top, on the
    `side` of the line ("left" or "right") where the name has room. Names sit on white,
    above the lines that cross them."""
    steps = [registry.step(r.kernel[:2]) for r in rows]
    y = list(range(len(rows)))[::-1]
    colours = [COLOURS[_precision(s)] for s in steps]
    ax.barh(y, [r.gflops / 1e3 for r in rows], color=colours, height=0.45)
    on_white = {"facecolor": "white", "edgecolor": "none", "pad": 0.5}
    for at, step in zip(y, steps):
        ax.text(0, at + 0.3, f"{step.id} {step.title}", fontsize=NAME, va="bottom",
                bbox=on_white, zorder=3)  # fmt: skip
    top = len(rows) - 0.3
    for label, gflops, colour, style, side in lines:
        ax.axvline(gflops / 1e3, color=colour, ls=style, lw=1.2, zorder=2)
        name = f"{label} " if side == "left" else f" {label}"
        ax.text(gflops / 1e3, top, name, fontsize=NAME, color=colour, va="bottom",
                ha="right" if side == "left" else "left")  # fmt: skip
    right = max([r.gflops for r in rows] + [line[1] for line in lines]) / 1e3
    ax.set_xlim(0, right * 1.3)
    ax.set_ylim(-0.5, len(rows) + 0.35)
    ax.set_yticks([])
    ax.tick_params(labelsize=SMALL)
    ax.set_xlabel(f"TFLOP/s at {_size_label(size)}", fontsize=SMALL)
    ax.spines[["top", "right", "left"]].set_visible(False)
    ax.set_title(title, fontsize=SMALL, loc="left")


def ladder_chart(size=LARGEST):
    """Every step's TFLOP/s at one size, named by its number and title, in two panels on
    their own scales: the FP32 ladder (book/data/bench_*.csv) against cuBLAS in FP32 and
    the GPU's FP32 peak, and the steps beyond it (the tensor-core sweep: asynchronous
    copies, then tensor cores, which pass the FP32 peak) against cuBLAS in FP32 and in
    TF32, timed in their own run, each panel titled with its GPU."""
    ladder = _rungs(size)
    timed = tensor_core_rows(size)
    beyond = [timed[s.name] for s in registry.BEYOND]
    heights = [len(ladder) + 1.5, len(beyond) + 1.5]
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(CHART_WIDTH, ROW * sum(heights) + 0.5), height_ratios=heights
    )
    first = ladder[0]
    _panel(
        top,
        ladder,
        [
            ("cuBLAS FP32", first.cublas_gflops, "black", "--", "left"),
            ("FP32 peak", fp32_peak(ladder), pictures.BLUE, ":", "right"),
        ],
        f"The FP32 ladder, steps {ladder[0].kernel[:2]}–{ladder[-1].kernel[:2]}\n{_run(first)}",
        size,
    )
    _panel(
        bottom,
        beyond,
        [
            ("cuBLAS FP32", beyond[0].cublas_gflops, "black", "--", "right"),
            (
                "cuBLAS TF32",
                timed[bench.CUBLAS_TF32].gflops,
                pictures.BLUE,
                "-.",
                "left",
            ),
        ],
        f"Beyond it, steps {beyond[0].kernel[:2]}–{beyond[-1].kernel[:2]}, own scale\n"
        f"{_run(beyond[0])}",
        size,
    )
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    bottom.legend(handles, [f"{p} accuracy" for p in COLOURS], fontsize=NAME, ncol=2,
                  loc="upper left", bbox_to_anchor=(0, -0.27), frameon=False)  # fmt: skip
    fig.tight_layout()
    return fig


def _run(row: bench.Row) -> str:
    """Where and when a panel's run was timed: 'H100 80GB HBM3, 2026-11-23'."""
    return f"{row.gpu.replace('NVIDIA ', '')}, {row.date}"


def ladder_table(size=LARGEST) -> Markdown:
    """Every step at one size: GFLOP/s and % of cuBLAS, with cuBLAS and the peak."""
    rows = _rungs(size)
    lines = ["| step | GFLOP/s | % of cuBLAS |", "|---|---:|---:|"]
    for r in rows:
        step = registry.step(r.kernel[:2])
        lines.append(
            f"| {{doc}}`{step.id} {step.title} <{step.name}>` | {r.gflops:,.0f} | "
            f"{r.pct_cublas:.1f}% |"
        )
    lines.append(f"| cuBLAS (FP32) | {rows[0].cublas_gflops:,.0f} | 100% |")
    lines.append(f"| FP32 peak | {fp32_peak(rows):,.0f} | |")
    return Markdown("\n".join(lines))


def glue_ladder(size=LARGEST) -> None:
    """Glue the landing page's chart (ladder_chart) and table (ladder_table)."""
    from IPython.display import Image
    from myst_nb import glue as _glue

    fig = ladder_chart(size)
    _glue("ladder_chart", Image(pictures.png(fig)), display=False)
    plt.close(fig)
    _glue("ladder_table", ladder_table(size), display=False)


def ladder_says(size=LARGEST) -> Markdown:
    """What the landing page's chart and table show, and where their numbers come from."""
    rows = _rungs(size)
    first, beyond = rows[0], tensor_core_sweep()[0]
    return Markdown(
        f"**The ladder.** Each step's GFLOP/s at {_size_label(size)} on an {first.gpu}, "
        f"{first.date} (CUDA {first.cuda}, CuPy {first.cupy}), against cuBLAS in strict FP32 "
        "timed in the same run, and the GPU's FP32 peak as the bench reckons it "
        f"({fp32_peak(rows):,.0f} GFLOP/s: a step's GFLOP/s over its % of peak). Steps 10 "
        f"to 13 were timed in a run of their own, on an {beyond.gpu}, {beyond.date}, beside "
        "cuBLAS with TF32 on. "
        "Data: `book/data/bench_*.csv` and `tensor_cores_*.csv`, drawn as this page was built."
    )


def ladder_top(size=LARGEST) -> str:
    """The ladder's last step's share of cuBLAS at one size, for the landing page's first
    sentences ('102.6%'); the chart under them names the GPU."""
    return f"{bench_row(_last().id, size).pct_cublas:.1f}%"


def _last() -> registry.Step:
    return [s for s in registry.STEPS if s.name not in NOT_YET_MEASURED][-1]


def ladder_end(size=LARGEST) -> Markdown:
    """Where the ladder ends: its last step's measurement at 4096³, from the data."""
    last, first = _last(), registry.STEPS[0]
    r, r0 = bench_row(last.id, size), bench_row(first.id, size)
    return Markdown(
        f"**Where the ladder ends.** Step {last.id} ({last.title.lower()}) measured "
        f"{r.gflops:,.0f} GFLOP/s at {_size_label(size)}: **{r.pct_cublas:.1f}% of cuBLAS** "
        f"({r.cublas_gflops:,.0f} GFLOP/s, strict FP32, in the same run) and "
        f"{r.pct_peak:.1f}% of the GPU's FP32 peak, {r.gflops / r0.gflops:,.0f} times step "
        f"{first.id}. Measured on an {r.gpu}, {r.date} (`book/data/bench_*.csv`)."
        f"{measured_earlier([r])}"
    )


# ---- the exercises ----


def _colab(a: Assignment, home: repository.Repository) -> str:
    """The "Open in Colab" badge of an exercise, linked to its notebook at the course's
    release; nothing while the repository's URL is a placeholder, where it would lead
    nowhere."""
    if home.placeholder:
        return ""
    badge = "https://colab.research.google.com/assets/colab-badge.svg"
    return f"[![Open In Colab]({badge})]({home.colab_url(a.name)})"


def _runs_on(step: registry.Step) -> str:
    """Where a step's exercise runs and is graded, where not on every GPU."""
    return f"an {step.target} GPU (an H100 or H200)" if step.target else ""


def exercises() -> list[tuple[registry.Step, Assignment]]:
    """Every step that has an exercise notebook, in the ladder's order."""
    by_step = {a.step: a for a in ASSIGNMENTS}
    return [(s, by_step[s.id]) for s in registry.ALL_STEPS if s.id in by_step]


def exercise_list(home: repository.Repository | None = None) -> Markdown:
    """The landing page's list of exercises: each with its chapter, its notebook to
    download (the book carries a copy) and its Colab badge where the course is
    published (_config.yml's repository URL)."""
    home = home or repository.read()
    lines = []
    if home.placeholder:
        lines.append(
            "Download a notebook and open it in Colab (File > Upload notebook) or in your "
            "own Jupyter: it carries the course's checker and installs it itself. The "
            "Open in Colab badges appear once the course is published.\n"
        )
    for step, a in exercises():
        where = _runs_on(step)
        parts = [
            f"**{step.id}** {{doc}}`{step.title} <{a.name}>`",
            f"{{download}}`{a.name}.ipynb <../exercises/{a.name}/{a.name}.ipynb>`",
            where and f"runs on {where}",
            _colab(a, home),
        ]
        lines.append("- " + " · ".join(p for p in parts if p))
    return Markdown("\n".join(lines))


def exercise(step_id: str, home: repository.Repository | None = None) -> Markdown:
    """The chapter's exercise: its notebook, with an Open in Colab badge made from the
    repository URL and release in _config.yml (their one home) once it is published."""
    a = next(a for s, a in exercises() if s.id == step_id)
    where = _runs_on(registry.step(step_id))
    elsewhere = (
        f" It runs and is graded on {where}; anywhere else, Colab's T4 included, the "
        "notebook compiles your kernel for one and shows the pipeline."
        if where
        else ""
    )
    colab = _colab(a, home or repository.read())
    return Markdown(
        f"**Exercise.** The notebook {{download}}`{a.name}.ipynb <../exercises/{a.name}/"
        f"{a.name}.ipynb>` (it runs alone, on Colab or in your own Jupyter): write the part of "
        f"the kernel this chapter is about, check it on odd shapes, and see it graded."
        f"{elsewhere} {colab}".strip()
    )

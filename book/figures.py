"""Figures and tables for the book, drawn at build time from the repository's
own data and code: book/data/bench_*.csv (written by `python -m autograder
bench`), the registry, and the explorers' models. Nothing here is typed in.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown

from autograder.course import explorers, pictures
from autograder.judge import checker
from autograder.ladder import registry
from autograder.measure import accuracy, bench
from autograder.run import gpu

DATA = Path(__file__).resolve().parent / "data"
LARGEST = (4096, 4096, 4096)


def show(fig=None) -> None:
    """Show a figure (the current one by default) as a PNG written by pictures.png, which
    records the size of its smallest text for book/look.py to check, and close it."""
    from IPython.display import Image, display

    fig = fig or plt.gcf()
    display(Image(pictures.png(fig)))
    plt.close(fig)


def for_experts(title: str, *parts) -> Markdown:
    """Figures for experts (a tool's whole output, a search's tables, secondary
    counters) in one box that stays closed until the reader opens it, so that the page's
    argument reads straight through. The box is a dropdown admonition, like the
    chapters' own: a page renders a figure's Markdown as MyST (_config.yml). Four
    backticks, so that a part may hold a code block."""
    body = "\n\n".join(getattr(part, "data", part) for part in parts)
    return Markdown(f"````{{admonition}} {title}\n:class: dropdown\n\n{body}\n````")


# Steps of the ladder that book/data/bench_*.csv has no row for yet, and why.
# The pages say "not yet measured" where their numbers would be; nothing stands
# in for them. To measure one, run `python -m autograder bench STEP` on the GPU
# of the CSV, commit the CSV, and remove the step here (tests/test_book.py
# fails while the two disagree).
NOT_YET_MEASURED: dict[str, str] = {}


# The steps whose kernel is a whole GEMM: what the roofline, the instruction mix
# and the profiler's evidence are about. Step 09's kernel is split-K's
# reduction, a memory-bound pass over the layers; its evidence is the sweep.
GEMM_STEPS = [s for s in registry.STEPS if s.contract == "gemm"]


def not_measured(names) -> str:
    """The sentence a page shows for the steps among names that have no measurement."""
    missing = [n for n in names if n in NOT_YET_MEASURED]
    return " ".join(
        f"**{n}: not yet measured** ({NOT_YET_MEASURED[n]}; `python -m autograder bench "
        f"{n[:2]}` on a GPU adds it)."
        for n in missing
    )


def results() -> list[bench.Row]:
    """Every committed measurement, one GPU per CSV file."""
    rows = []
    for path in sorted(DATA.glob("bench_*.csv")):
        rows += bench.read_csv(path)
    return rows


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


def provenance(rows: list[bench.Row]) -> str:
    first = rows[0]
    return (
        f"Measured by `python -m autograder bench` on an {first.gpu}, {first.date}, "
        f"CUDA {first.cuda}, CuPy {first.cupy}; cuBLAS with TF32 off in the same run "
        f"(data: `book/data/bench_*.csv`)."
    )


# The book's column is 676 px wide: a figure 6.76 in wide at 100 dpi fills it, and text
# of 8 points or more is 11 px or more there (book/look.py checks it is at least 10).
WIDTH, SMALL = pictures.WIDTH, 9


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


def _before(step: registry.Step) -> registry.Step | None:
    """The CUDA step before step on the ladder (None for step 01)."""
    index = registry.STEPS.index(step)
    return registry.STEPS[index - 1] if index else None


def _step_and_before(step_id: str) -> list[str]:
    step = registry.step(step_id)
    return [s.name for s in (_before(step), step) if s]


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
        "cores are not FP32 lanes."
    )


def _steps_timed(rows: list[bench.Row]) -> str:
    """The steps a run timed, as `bench` takes them: '08 10 11 12' (cuBLAS's rows aside)."""
    return " ".join(dict.fromkeys(r.kernel[:2] for r in rows if r.kernel[:2].isdigit()))


def _run_source(rows: list[bench.Row]) -> str:
    """Where a run's figures come from: its GPU, date, versions, command and sampling."""
    first = rows[0]
    return (
        f"{first.gpu}, {first.date}, CUDA {first.cuda}, CuPy {first.cupy}: "
        f"`python -m autograder bench {_steps_timed(rows)}`; {bench.sampling(rows)}."
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


def warp_addresses(N: int = 777, K: int = 513):
    """Which bytes of A, B and C one warp touches at one k, for both thread mappings,
    and how many 32-byte sectors that is."""
    fig, axes = plt.subplots(2, 3, figsize=(WIDTH - 0.3, 4.6), sharex=True)
    for row, walk in enumerate(("rows", "columns")):
        for ax, access in zip(axes[row], explorers.warp_accesses(walk, N, K), strict=True):
            ax.scatter(range(32), [o * 4 for o in access.offsets], s=6)
            n = access.sectors
            ax.set_title(f"{access.matrix}, lanes walk the {walk}:\n{n} sector{'s' * (n != 1)}",
                         fontsize=SMALL)  # fmt: skip
            ax.tick_params(labelsize=SMALL)
            ax.yaxis.get_offset_text().set_fontsize(SMALL)
    for ax in axes[1]:
        ax.set_xlabel("lane of the warp", fontsize=SMALL)
    for ax in axes[:, 0]:
        ax.set_ylabel("byte address", fontsize=SMALL)
    fig.suptitle(f"One warp of a 32×32 block at one step k (N = {N}, K = {K})", fontsize=10)
    fig.tight_layout()
    show()


def _fragment_reads(step: registry.Step, warp: int = 0) -> list[tuple[str, list[int]]]:
    """The float4 reads of As and Bs that each thread of one warp makes at one k, as
    (matrix, the 32 lanes' offsets in floats) per instruction: the index arithmetic of
    kernels/06 (thread tiles) and 07-08 (warp tiles) at the registry's parameters."""
    p = step.params
    BN, TM, TN = p["BN"], p["TM"], p["TN"]
    lanes = [warp * 32 + lane for lane in range(32)]
    if "WM" not in p:  # 06: thread t owns rows t / (BN/TN) * TM..., columns t % (BN/TN) * TN...
        rows = [[t // (BN // TN) * TM] for t in lanes]
        cols = [[t % (BN // TN) * TN] for t in lanes]
    else:  # 07, 08: the warp's corner, then the lane's place in each sub-tile
        WM, WN, WNITER = p["WM"], p["WN"], p["WNITER"]
        WMITER = registry.warp_m_iterations(p)
        WSUBM, WSUBN = WM // WMITER, WN // WNITER
        corner_m, corner_n = warp // (BN // WN) * WM, warp % (BN // WN) * WN
        per_row = WSUBN // TN
        rows = [[corner_m + wm * WSUBM + t % 32 // per_row * TM for wm in range(WMITER)]
                for t in lanes]  # fmt: skip
        cols = [[corner_n + wn * WSUBN + t % 32 % per_row * TN for wn in range(WNITER)]
                for t in lanes]  # fmt: skip
    reads = []
    for matrix, starts, width in (("A", rows, TM), ("B", cols, TN)):
        for i in range(len(starts[0])):
            for j in range(0, width, 4):
                reads.append((matrix, [s[i] + j for s in starts]))
    return reads


def shared_passes(step_id: str) -> tuple[int, int, int, int]:
    """For warp 0 at one k: the distinct floats of As and Bs it reads, its FMAs, the
    float4 loads per thread, and the passes through the banks in the model of
    warp_shared_reads."""
    step = registry.step(step_id)
    reads = _fragment_reads(step)
    distinct = {(m, o + i) for m, offsets in reads for o in offsets for i in range(4)}
    passes = 0
    for _, offsets in reads:
        for quarter in range(4):
            words = {o + i for o in offsets[quarter * 8 : quarter * 8 + 8] for i in range(4)}
            banks = [sum(w % 32 == b for w in words) for b in range(32)]
            passes += max(banks)
    # Per k, one FMA per accumulator of each of the warp's threads.
    BM, BN = step.geometry.tile
    fmas = 32 * BM * BN // step.geometry.threads
    return len(distinct), fmas, len(reads), passes


def warp_shared_reads(step_ids=("06", "07")) -> Markdown:
    """What one warp reads from shared memory for one k, and a model of what it costs:
    a 128-bit load is served a quarter-warp (8 lanes) at a time, each quarter in as many
    passes as the most distinct 4-byte words it needs from one of the 32 banks."""
    lines = [
        "| step | floats of As and Bs the warp reads | FMAs of the warp | `float4` loads "
        "per thread | passes through the banks (model) |",
        "|---|---:|---:|---:|---:|",
    ]
    for step_id in step_ids:
        step = registry.step(step_id)
        distinct, fmas, loads, passes = shared_passes(step_id)
        lines.append(f"| {step.name} | {distinct} | {fmas} | {loads} | {passes} |")
    return Markdown(
        "\n".join(lines) + "\n\nComputed from each kernel's index arithmetic at the "
        "registry's parameters, for warp 0 at one k, as this page was built. The passes "
        "are a model of the hardware, not a measurement."
    )


def tile_hierarchy(step_id: str = "07"):
    """The block tile, one warp's tile, and one thread's tiles inside it, to scale."""
    p = registry.step(step_id).params
    BM, BN, WM, WN, TM, TN = (p[k] for k in ("BM", "BN", "WM", "WN", "TM", "TN"))
    WNITER = p["WNITER"]
    WMITER = registry.warp_m_iterations(p)
    WSUBM, WSUBN = WM // WMITER, WN // WNITER
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    ax.add_patch(plt.Rectangle((0, 0), BN, BM, fill=False, lw=2))
    for wr in range(BM // WM):
        for wc in range(BN // WN):
            ax.add_patch(
                plt.Rectangle(
                    (wc * WN, wr * WM), WN, WM, fill=False, lw=1, ls="--", color="tab:blue"
                )
            )
    for wm in range(WMITER):  # thread 0's tiles inside warp 0
        for wn in range(WNITER):
            ax.add_patch(plt.Rectangle((wn * WSUBN, wm * WSUBM), TN, TM, color="tab:red"))
    ax.set_xlim(-2, BN + 2)
    ax.set_ylim(BM + 2, -2)
    ax.set_aspect("equal")
    ax.set_xlabel("columns of the block tile (BN)")
    ax.set_ylabel("rows of the block tile (BM)")
    ax.set_title(
        f"block {BM}×{BN} (black), warps {WM}×{WN} (blue),\nthread 0's "
        f"{WMITER}×{WNITER} tiles of {TM}×{TN} (red)",
        fontsize=10,
    )
    show()


def roofline(gpu_name: str = "H100 SXM", size=LARGEST):
    """Each step at the arithmetic intensity it measured (FLOPs per byte DRAM moved, from
    the profile) and the GFLOP/s it measured (from the bench), under the GPU's two
    ceilings; a hollow marker at the intensity of its block tile (FLOPs per byte it
    requests from global memory) shows how much the caches saved."""
    spec = explorers.GPUS[gpu_name]
    peak = spec["fp32_tflops"] * 1e3
    bandwidth = spec["bandwidth_gbs"]
    fig, ax = plt.subplots(figsize=(WIDTH, 5.4))
    xs = [2**e for e in range(-3, 11)]
    ax.plot(xs, [min(peak, bandwidth * x) for x in xs], color="black", label=f"{gpu_name} roof")
    placed, steps = [], []
    for step in GEMM_STEPS:
        g = bench_row(step.id, size).gflops
        measured = measured_intensity(step.id, size)
        requested = requested_intensity(step.id)
        colour = plt.cm.tab10(GEMM_STEPS.index(step) % 10)
        ax.plot([requested, measured], [g, g], color=colour, lw=0.6, alpha=0.5, ls=":")
        ax.scatter([requested], [g], facecolors="none", edgecolors=[colour], s=24, zorder=3)
        steps.append(ax.scatter([measured], [g], color=colour, s=36, zorder=4, label=step.name))
        placed.append((measured, g, step.id))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(xs[0], xs[-1])
    ax.set_xlabel("arithmetic intensity (FLOP per byte)")
    ax.set_ylabel(f"GFLOP/s at {_size_label(size)}")
    ax.grid(True, which="both", alpha=0.3)
    kinds = [
        ax.plot([], [], color="black")[0],
        ax.scatter([], [], color="grey", s=36),
        ax.scatter([], [], facecolors="none", edgecolors="grey", s=24),
    ]
    first = ax.legend(kinds, [f"{gpu_name} roof", "measured: FLOPs per DRAM byte (ncu)",
                              "model: FLOPs per byte the block tile requests"],
                      fontsize=SMALL, loc="upper left")  # fmt: skip
    ax.add_artist(first)
    ax.legend(handles=steps, fontsize=SMALL, ncol=3, loc="upper center",
              bbox_to_anchor=(0.5, -0.14), frameon=False)  # fmt: skip
    fig.tight_layout()
    place_labels(ax, placed, fontsize=SMALL)
    show()
    p = profile_row("01", size)
    return Markdown(
        f"Filled: each step at {_size_label(size)}, its intensity from the DRAM bytes "
        f"Nsight Compute counted ({p['gpu']}, {p['date']}, {p['versions']}) and its "
        f"GFLOP/s from the bench ({provenance_short(size)}). Hollow: the same GFLOP/s at "
        "the intensity the block tile requests from global memory (steps 01 and 02: two "
        "floats per FMA). The roof is the datasheet's FP32 peak and bandwidth of the "
        f"{gpu_name}. Data: `book/data/profile_*.csv`, `book/data/bench_*.csv`."
    )


def place_labels(ax, points, fontsize=8):
    """Label each (x, y, text) of points beside its marker: at the first of a ring of
    places around it where the label overlaps no label placed before it and no marker,
    the farther places with a leader line. Returns the labels."""
    fig = ax.figure
    fig.canvas.draw()  # the axes' limits and transforms as they will be drawn
    renderer = fig.canvas.get_renderer()
    from matplotlib.transforms import Bbox

    def disc(x, y, r=5):
        cx, cy = ax.transData.transform((x, y))
        return Bbox([[cx - r, cy - r], [cx + r, cy + r]])

    markers = [disc(x, y) for x, y, _ in points]
    taken = []
    # (dx, dy) in points, with the alignment that keeps the label off its marker.
    near = [(7, 0, "left", "center"), (-7, 0, "right", "center"), (5, 5, "left", "bottom"),
            (5, -5, "left", "top"), (-5, 5, "right", "bottom"), (-5, -5, "right", "top"),
            (0, 8, "center", "bottom"), (0, -8, "center", "top")]  # fmt: skip
    far = [(dx * 3, dy * 3, ha, va) for dx, dy, ha, va in near]
    labels = []
    for x, y, text in sorted(points, key=lambda p: -p[1]):
        for dx, dy, ha, va in near + far:
            leader = {"arrowstyle": "-", "lw": 0.6, "color": "grey"} if (dx, dy) in [
                (f[0], f[1]) for f in far] else None  # fmt: skip
            label = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points",
                                fontsize=fontsize, ha=ha, va=va, arrowprops=leader)  # fmt: skip
            box = label.get_window_extent(renderer)
            if not any(box.overlaps(t) for t in taken + markers):
                break
            label.remove()
        else:  # nowhere free: the first place
            dx, dy, ha, va = near[0]
            label = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points",
                                fontsize=fontsize, ha=ha, va=va)  # fmt: skip
            box = label.get_window_extent(renderer)
        taken.append(box)
        labels.append(label)
    return labels


def step_plot(step_id: str):
    """GFLOP/s against size for a step, the step before it, and cuBLAS."""
    names = _step_and_before(step_id)
    rows = [r for r in results() if r.kernel in names]
    show(bench_plot(rows))
    missing = not_measured(names)
    return Markdown(f"The plot leaves out what was not measured. {missing}") if missing else None


def exercise(step_id: str) -> Markdown:
    """The chapter's exercise: its notebook, with an Open in Colab badge made from the
    repository URL and release in _config.yml (their one home)."""
    from autograder.course import repository
    from autograder.course.assignments import assignment

    a = assignment(step_id)
    colab = repository.read().colab_url(a.name)
    target = registry.step(step_id).target
    elsewhere = (
        f" It runs and is graded on an {target} GPU (an H100 or H200); anywhere else, Colab's "
        "T4 included, the notebook compiles your kernel for one and shows the pipeline."
        if target
        else ""
    )
    return Markdown(
        f"**Exercise.** Notebook `exercises/{a.name}/{a.name}.ipynb`: write the part of the "
        f"kernel this chapter is about, check it on odd shapes, and see it graded.{elsewhere} "
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab})"
    )


# ---- autotuning: book/data/tune_<step>_<gpu>.csv, written by `python -m autograder tune` ----

# The GPU whose searches the book shows (the file names' suffix, autograder.run.gpu.slug).
TUNED_ON = "h100_80gb_hbm3"
_TUNE_INTS = ("threads", "shared_bytes", "min_registers", "registers", "spill_bytes", "M", "N", "K")
_TUNE_FLOATS = ("gflops", "pct_cublas", "cublas_gflops")
# What each rule of stage 1 says, by a phrase of its reason (registry.py's rules, tune.limits).
_RULES = (
    ("warp tile is not", "the warp tile is not 32 threads × whole TM×TN tiles"),
    ("warp sub-tile is not", "the warp tile is not 32 threads × whole TM×TN tiles"),
    ("does not divide", "a tile does not divide the tile above it"),
    ("is not a multiple of", "a size is not a multiple of 4 (float4 copies)"),
    ("is not whole rounds", "a tile of A or B is not whole rounds of one copy per thread"),
    ("threads per block", "more than 1024 threads per block"),
    ("bytes of shared memory", "more than 48 KB of static shared memory"),
    ("registers per thread", "a register floor above 255 per thread"),
    ("registers x", "register floor × threads above an SM's 65,536 registers"),
)


def tune_rows(step_id: str, gpu: str = TUNED_ON) -> list[dict]:
    """Every configuration of a step's committed search on one GPU
    (book/data/tune_<step>_<gpu>.csv), best first: the CSV's columns, with numbers as
    numbers and empty cells as None."""
    import csv

    path = DATA / f"tune_{step_id}_{gpu}.csv"
    names = list(registry.step(step_id).params)
    rows = []
    with path.open(newline="") as f:
        for raw in csv.DictReader(f):
            row = dict(raw, file=path.name, params={n: int(raw[n]) for n in names})
            for key in _TUNE_INTS + _TUNE_FLOATS:
                kind = int if key in _TUNE_INTS else float
                row[key] = kind(raw[key]) if raw[key] else None
            rows.append(row)
    return rows


def _tune_label(step: registry.Step, params: dict) -> str:
    """'128×256×16, warps 32×64, WNITER 2' (07, 08), '128×128×16, threads 8×8' (05, 06)."""
    p = params
    label = f"{p['BM']}×{p['BN']}×{p['BK']}"
    if "WM" in p:
        return f"{label}, warps {p['WM']}×{p['WN']}, WNITER {p['WNITER']}"
    return f"{label}, threads {p['TM']}×{p['TN']}" if "TN" in p else f"{label}, TM {p['TM']}"


def tune_rule(reason: str) -> str:
    """The rule of stage 1 that a rejection's (first) reason names."""
    return next((rule for phrase, rule in _RULES if phrase in reason), reason)


def tune_dry_run(step_id: str = "08") -> Markdown:
    """Lines of `python -m autograder tune STEP --dry-run`, run as the page is built: its
    first line, two survivors, and the first rejection for each rule of stage 1, as a
    code block."""
    from autograder.measure import tune

    step = registry.step(step_id)
    trials = tune.candidates(step)
    lines = tune.dry_run_report(step, trials).splitlines()
    shown = lines[1:3]
    seen = set()
    for trial, line in zip(sorted(trials, key=lambda t: not t.alive), lines[1:]):
        if not trial.alive and tune_rule(trial.reason) not in seen:
            seen.add(tune_rule(trial.reason))
            shown.append(line)
    return Markdown(
        f"```text\n$ python -m autograder tune {step_id} --dry-run\n"
        + "\n".join([lines[0], *shown])
        + f"\n... (one line for each of the {len(trials)} configurations)\n```"
    )


def tune_costs(step_id: str, changes: list[dict]) -> Markdown:
    """What stage 1 computes for the registry's parameters changed by each of `changes`
    ({} is the registry's own), and the registers the compiler gives each survivor for a
    T4 (sm_75), compiled as the page is built."""
    from autograder.measure import tune
    from autograder.run import compiler

    step = registry.step(step_id)
    head = (
        "| configuration | threads | shared memory | register floor | stage 1 "
        "| compiled for sm_75 |"
    )
    lines = [head, "|---|---:|---:|---:|---|---|"]
    for change in changes:
        p = {**step.params, **change}
        name = _tune_label(step, p) + (" (the registry's)" if not change else "")
        reasons = step.tuning.rules(p)
        if reasons:
            lines.append(f"| {name} | | | | rejected: {'; '.join(reasons)} | |")
            continue
        threads, shared = step.layout(p).threads, step.tuning.shared_bytes(p)
        floor = step.tuning.registers(p)
        reasons = tune.limits(threads, shared, floor)
        compiled = ""
        if not reasons:
            spec = tune.spec_for(step, p)
            r = compiler.compile_for_arch(
                spec.source, [spec.name_expression], "sm_75", spec.filename
            ).resources[spec.name_expression]
            spilled = r.spill_store_bytes + r.spill_load_bytes
            compiled = f"{r.registers} registers, " + (
                f"spills {spilled} bytes" if spilled else "no spills"
            )
        verdict = f"rejected: {'; '.join(reasons)}" if reasons else "to compile"
        lines.append(f"| {name} | {threads} | {shared} B | {floor} | {verdict} | {compiled} |")
    return Markdown(
        "\n".join(lines) + f"\n\nComputed from `autograder/ladder/registry.py` as this "
        f"page was built; compiled with NVRTC {compiler.nvrtc_version()}."
    )


def tune_verdicts(step_id: str) -> Markdown:
    """How many configurations each stage of the committed search ruled out, and why."""
    rows = tune_rows(step_id)
    count = {}
    for r in rows:
        key = f"rejected: {tune_rule(r['reason'])}" if r["verdict"] == "rejected" else r["verdict"]
        count[key] = count.get(key, 0) + 1
    stages = [
        ("1. rules, before compiling", k)
        for k in sorted(count, key=lambda k: -count[k])
        if k.startswith("rejected")
    ]
    stages += [
        ("2. compile", "does not compile"),
        ("2. compile", "over limits"),
        ("2. compile", "spills"),
        ("3. check", "wrong"),
        ("3.–4. check, time", "crashed"),
        ("3.–4. check, time", "hung"),
        ("4. time", "not timed"),
        ("4. time", "timed"),
    ]
    lines = ["| stage | verdict | configurations |", "|---|---|---:|"]
    for stage, verdict in stages:
        if count.get(verdict) or verdict in ("spills", "wrong", "timed"):
            lines.append(f"| {stage} | {verdict} | {count.get(verdict, 0)} |")
    several = sum(";" in r["reason"] for r in rows if r["verdict"] == "rejected")
    first = rows[0]
    return Markdown(
        "\n".join(lines) + f"\n\nAll {len(rows)} configurations of "
        f"{registry.step(step_id).name}, searched on an {first['gpu']} on "
        f"{first['date']} (data: `book/data/{first['file']}`). A rejected "
        f"configuration is counted under the first rule it breaks; {several} "
        "broke more than one."
    )


def tune_top(step_id: str, n: int = 8) -> Markdown:
    """The n fastest configurations of the committed search, and the registry's own
    wherever it ranked."""
    step = registry.step(step_id)
    rows = [r for r in tune_rows(step_id) if r["gflops"]]
    rank = {id(r): i for i, r in enumerate(rows, 1)}
    shown = rows[:n] + [r for r in rows[n:] if r["params"] == step.params]
    head = (
        "| rank | configuration | threads | shared memory | registers (floor, compiler) "
        "| GFLOP/s | % of cuBLAS |"
    )
    lines = [head, "|---:|---|---:|---:|---:|---:|---:|"]
    for r in shown:
        name = _tune_label(step, r["params"])
        if r["params"] == step.params:
            name = f"**{name} (the registry's)**"
        lines.append(
            f"| {rank[id(r)]} | {name} | {r['threads']} | {r['shared_bytes']} B | "
            f"{r['min_registers']}, {r['registers']} | {r['gflops']:.0f} | "
            f"{r['pct_cublas']:.1f}% |"
        )
    first = rows[0]
    ours = next(
        (
            f"The registry's own configuration ranks {rank[id(r)]} of {len(rows)}, "
            f"{first['pct_cublas'] - r['pct_cublas']:.1f} points of cuBLAS behind the "
            "best. "
            for r in rows
            if r["params"] == step.params
        ),
        "",
    )
    return Markdown(
        "\n".join(lines) + f"\n\n{ours}Timed at {first['M']}×{first['N']}×"
        f"{first['K']} on an {first['gpu']}, {first['date']}: one median of "
        "CUDA-event timings per configuration; cuBLAS (TF32 off) "
        f"{first['cublas_gflops']:.0f} GFLOP/s "
        f"in the same process. Data: `book/data/{first['file']}`."
    )


def tune_plot(step_id: str):
    """Every timed configuration of the committed search, fastest at the top, in % of cuBLAS
    (GFLOP/s on the top axis), coloured by threads per block; the registry's is ringed."""
    step = registry.step(step_id)
    rows = [r for r in tune_rows(step_id) if r["gflops"]][::-1]
    threads = sorted({r["threads"] for r in rows})
    colours = dict(zip(threads, plt.cm.tab10.colors))
    fig, ax = plt.subplots(figsize=(WIDTH, 0.22 * len(rows) + 1.8), layout="constrained")
    y = range(len(rows))
    ax.hlines(
        y,
        min(r["pct_cublas"] for r in rows) - 2,
        [r["pct_cublas"] for r in rows],
        color="lightgray",
        lw=1,
    )
    for t in threads:
        mine = [(i, r) for i, r in enumerate(rows) if r["threads"] == t]
        ax.scatter(
            [r["pct_cublas"] for _, r in mine],
            [i for i, _ in mine],
            color=colours[t],
            zorder=3,
            label=f"{t} threads per block",
        )
    ours = [(i, r) for i, r in enumerate(rows) if r["params"] == step.params]
    for i, r in ours:
        ax.scatter(
            [r["pct_cublas"]],
            [i],
            s=160,
            facecolors="none",
            edgecolors="black",
            lw=1.5,
            zorder=4,
            label="the registry's",
        )
    ax.set_yticks(list(y), [_tune_label(step, r["params"]) for r in rows], fontsize=SMALL)
    for tick, r in zip(ax.get_yticklabels(), rows):
        if r["params"] == step.params:
            tick.set_fontweight("bold")
    cublas = rows[0]["cublas_gflops"]
    top = ax.secondary_xaxis(
        "top", functions=(lambda p: p * cublas / 100, lambda g: g * 100 / cublas)
    )
    top.set_xlabel("GFLOP/s")
    ax.set_xlabel(f"% of cuBLAS ({cublas:.0f} GFLOP/s, TF32 off)")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.08 * 30 / len(rows)),
              ncol=2, frameon=False)  # fmt: skip
    fig.suptitle(
        f"{step.name}: the {len(rows)} timed configurations,\n"
        f"{rows[0]['M']}×{rows[0]['N']}×{rows[0]['K']} on an {rows[0]['gpu']}",
        fontsize=10,
    )
    show()


def tune_waves(
    step_id: str, gpu_name: str = "H100 SXM", sizes=(LARGEST, (4095, 4097, 4093))
) -> Markdown:
    """Arithmetic, not a measurement: how many rounds of blocks the best configuration of the
    committed search and the registry's need at each size, with as many blocks per SM as
    autograder/ladder/hardware.py's occupancy allows (registers, shared memory, warps)."""
    from autograder.ladder import hardware

    step = registry.step(step_id)
    timed = [r for r in tune_rows(step_id) if r["gflops"]]
    chosen = [timed[0]] + [r for r in timed[1:] if r["params"] == step.params]
    sms = explorers.GPUS[gpu_name]["sms"]
    head = " | ".join(f"blocks at {M}×{N}×{K} | rounds | slots used" for M, N, K in sizes)
    lines = [
        f"| configuration | threads | registers | blocks per SM | {head} |",
        "|---|---:|---:|---:|" + "---:|---:|---:|" * len(sizes),
    ]
    for r in chosen:
        per_sm = hardware.occupancy(
            explorers.GPUS[gpu_name]["arch"], r["threads"], r["registers"], r["shared_bytes"]
        ).blocks
        slots = per_sm * sms
        cells = []
        for M, N, K in sizes:
            blocks = len(range(0, M, r["params"]["BM"])) * len(range(0, N, r["params"]["BN"]))
            rounds = -(-blocks // slots)
            cells.append(
                f"{blocks} | {blocks / slots:.2f} → {rounds} | "
                f"{100 * blocks / (rounds * slots):.0f}%"
            )
        name = _tune_label(step, r["params"])
        name += " (the registry's)" if r["params"] == step.params else " (the best)"
        lines.append(
            f"| {name} | {r['threads']} | {r['registers']} | {per_sm} | " + " | ".join(cells) + " |"
        )
    return Markdown(
        "\n".join(lines) + f"\n\nOn an {gpu_name} ({sms} SMs), with the registers "
        "the search's compiler gave each configuration. *Rounds*: blocks ÷ "
        "(blocks per SM × SMs), rounded up; *slots used*: the share of those "
        "rounds' block slots that hold a block. A model that ignores how blocks of "
        "one round finish at different times; nothing here was timed."
    )


# ---- hardware limits: autograder/ladder/hardware.py ----


def hardware_limits() -> Markdown:
    """The per-architecture limits that the compiler's report, the tuner, the explorers and
    the SASS report all read."""
    from autograder.ladder import hardware

    archs = list(hardware.ARCHS.values())
    rows = [
        ("threads per block", lambda a: a.max_threads_per_block),
        ("resident blocks per SM", lambda a: a.max_blocks_per_sm),
        ("resident warps per SM", lambda a: a.max_warps_per_sm),
        ("32-bit registers per SM", lambda a: f"{a.registers_per_sm:,}"),
        ("registers per thread", lambda a: a.max_registers_per_thread),
        ("shared memory per SM", lambda a: f"{a.shared_per_sm // 1024} KB"),
        ("static shared memory per block", lambda a: f"{a.shared_per_block_static // 1024} KB"),
        ("shared memory per block (opt-in)", lambda a: f"{a.shared_per_block_optin // 1024} KB"),
    ]
    lines = [
        "| | " + " | ".join(f"{a.name} ({a.family})" for a in archs) + " |",
        "|---|" + "---:|" * len(archs),
    ]
    lines += [f"| {name} | " + " | ".join(str(f(a)) for a in archs) + " |" for name, f in rows]
    return Markdown("\n".join(lines))


# ---- the compiler's evidence: autograder/measure/sass.py ----


def sass_mix(step_id: str, archs=("sm_75", "sm_90")) -> Markdown:
    """A step's main loop in machine code, counted as the page is built: each class of
    instruction per iteration, per k and per FFMA (LDS.128 per FFMA...), with registers,
    spills, shared memory and occupancy on a T4 and an H100. Fails the build, saying what
    to install, where nvdisasm is missing."""
    from autograder.measure import sass

    return Markdown(sass.markdown(step_id, archs))


def sass_ladder(arch: str = "sm_90") -> Markdown:
    """Every CUDA step's main loop on one architecture, per value of k."""
    from autograder.measure import sass

    return Markdown(sass.ladder_markdown(arch))


# ---- the measurements, one value at a time (for the chapters' sentences) ----


def _size(size) -> tuple[int, int, int]:
    """(M, N, K) from 4096, '4096', '4095x4097x4093' or a tuple."""
    if isinstance(size, tuple):
        return size
    return bench.parse_size(str(size))


def _size_key(size) -> str:
    M, N, K = _size(size)
    return f"{M}x{N}x{K}"


def _size_label(size) -> str:
    """'4096³' or '4095×4097×4093'."""
    M, N, K = _size(size)
    return f"{M}³" if M == N == K else f"{M}×{N}×{K}"


def _kernel(step) -> str:
    """A step's name ('05_blocktiling_2d') from its id, its name or the Step."""
    return step.name if isinstance(step, registry.Step) else registry.step(step).name


def bench_row(step, size=LARGEST) -> bench.Row:
    """The committed bench measurement of a step at a size (the ladder's CSV, then the
    bonus steps'); a KeyError says how to measure it where there is none."""
    name, key = _kernel(step), _size(size)
    for r in results() + beyond_results():
        if r.kernel == name and (r.M, r.N, r.K) == key:
            return r
    raise KeyError(
        f"no measurement of {name} at {_size_label(size)} in book/data/bench_*.csv or "
        f"beyond_*.csv: `python -m autograder bench {name[:2]} --sizes {_size_key(size)}` "
        "on a GPU adds it"
    )


def beyond_results() -> list[bench.Row]:
    rows = []
    for path in sorted(DATA.glob("beyond_*.csv")):
        rows += bench.read_csv(path)
    return rows


def provenance_short(size=LARGEST) -> str:
    r = bench_row("01", size)
    return f"{r.gpu}, {r.date}, CUDA {r.cuda}, CuPy {r.cupy}"


def profile_rows() -> dict[tuple[str, str], dict]:
    """Every committed Nsight Compute profile (book/data/profile_*.csv, written by
    `python -m autograder profile`), by (kernel, 'MxNxK')."""
    import csv

    rows = {}
    for path in sorted(DATA.glob("profile_*.csv")):
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                rows[(r["kernel"], r["size"])] = dict(r, file=path.name)
    return rows


def profile_row(step, size=LARGEST) -> dict:
    """One step's profile at one size: its columns, numbers as floats, the top stalls
    as [(reason, cycles per issued instruction)]. A KeyError says how to add it."""
    name, key = _kernel(step), _size_key(size)
    raw = profile_rows().get((name, key))
    if raw is None:
        raise KeyError(
            f"no profile of {name} at {_size_label(size)} in book/data/profile_*.csv: "
            f"`python -m autograder profile {name[:2]} --size {key}` on a GPU with Nsight "
            "Compute adds it"
        )
    row = dict(raw)
    for column, value in raw.items():
        if column not in ("kernel", "size", "top_stalls", "gpu", "date", "versions", "file"):
            row[column] = float(value) if value != "" else None
    row["stalls"] = [
        (reason, float(cycles))
        for reason, cycles in (s.rsplit(" ", 1) for s in raw["top_stalls"].split("; ") if s)
    ]
    return row


def dram_bytes(step, size=LARGEST) -> float:
    """Bytes DRAM read and wrote while the step's kernel ran (ncu)."""
    p = profile_row(step, size)
    return (p["dram_read_mb"] + p["dram_write_mb"]) * 1e6


def flops(size=LARGEST) -> int:
    M, N, K = _size(size)
    return 2 * M * N * K


def measured_intensity(step, size=LARGEST) -> float:
    """FLOPs per byte of DRAM traffic, as measured."""
    return flops(size) / dram_bytes(step, size)


def requested_intensity(step) -> float:
    """FLOPs per byte the kernel requests from global memory: 2 floats per FMA for the
    steps without tiles (01, 02), its block tile's for the others (the model)."""
    step = registry.step(_kernel(step))
    if not step.params:
        return 2 / 8
    return explorers.tile_costs(step.id).flops_per_global_byte


def warp_ffmas(step, size=LARGEST) -> float:
    """FFMA instructions the warps executed (ncu counts them per thread)."""
    return profile_row(step, size)["ffma"] / 32


def wavefronts_per_ffma(step, size=LARGEST) -> float:
    """Shared-memory load wavefronts per warp-wide FFMA: an SM's shared memory serves one
    wavefront (128 bytes) per clock while its 4 schedulers issue up to 4 FFMAs."""
    return profile_row(step, size)["shared_load_wavefronts"] / warp_ffmas(step, size)


def model_shared_floats(step) -> float:
    """The chapters' model: floats each thread reads from shared memory per FMA, at the
    registry's parameters. Per k a thread reads the A and B values of its thread tiles
    (WMITER x TM of A and WNITER x TN of B where a warp tile repeats them) and does one
    FMA per accumulator; steps 01 and 02 read no shared memory."""
    step = registry.step(_kernel(step))
    return explorers.shared_floats_per_fma(step.params)


def shared_ceiling(reads_per_ffma: float) -> float | None:
    """The share of FP32 peak that shared memory could feed, at one wavefront (32 floats)
    per clock and 4 warp FFMAs (128 FMAs) per clock per SM; None where nothing is read
    from shared memory. Above 1, shared memory is not the limit."""
    if not reads_per_ffma:
        return None
    return 1 / (4 * reads_per_ffma)


def _allows(reads_per_ffma: float) -> str:
    cap = shared_ceiling(reads_per_ffma)
    if cap is None:
        return "no limit (no shared memory)"
    return f"{cap:.1%} of FP32 peak" if cap < 1 else f"no limit ({cap:.0%} of FP32 peak)"


def sass_per(step, kinds, per: str = "k", arch: str = "sm_90") -> float:
    """Instructions of these classes in the step's main loop per value of k (per="k") or
    per FFMA (per="FFMA"), from its SASS compiled as the page is built."""
    from autograder.measure import sass

    e = sass.evidence(registry.step(_kernel(step)), arch)
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if per == "k":
        return sum(e.per_k(k) for k in kinds)
    return e.per_math(kinds)


def theoretical_occupancy(step, arch: str = "sm_90"):
    """hardware.Occupancy of the step's kernel as this build compiles it."""
    from autograder.measure import sass

    return sass.evidence(registry.step(_kernel(step)), arch).occupancy


def blocks(step, size) -> int:
    """Blocks in the step's grid at a size."""
    M, N, _ = _size(size)
    x, y = registry.step(_kernel(step)).geometry.grid(M, N)
    return x * y


def sms(gpu_name: str = "H100 SXM") -> int:
    return explorers.GPUS[gpu_name]["sms"]


class Text(str):
    """A string that a glue role shows as it is (a str's repr has quotes)."""

    def __repr__(self) -> str:
        return str(self)


def glue(**values) -> None:
    """Name values for the page's {glue:text} roles: each sentence's numbers are
    computed from the data here, not typed into the page."""
    from myst_nb import glue as _glue

    for name, value in values.items():
        _glue(name, Text(value) if isinstance(value, str) else value, display=False)


def missing_data() -> list[str]:
    """What the book's evidence needs and the committed data lacks: a bench row of every
    step of the ladder at every size the bench measured, and a profile row of every GEMM
    step at 4096³ (step 09's evidence is the sweep). Empty when nothing is missing."""
    problems = []
    sizes = sorted({(r.M, r.N, r.K) for r in results()})
    for step in registry.STEPS:
        if step.name in NOT_YET_MEASURED:
            continue
        for size in sizes:
            try:
                bench_row(step.id, size)
            except KeyError as e:
                problems.append(str(e))
        if step not in GEMM_STEPS:
            continue
        try:
            profile_row(step.id, LARGEST)
        except KeyError as e:
            problems.append(str(e))
    return problems


# ---- the profiler's evidence, beside the previous step's ----


def _pct(x) -> str:
    return "" if x is None else f"{x:.0f}%" if x >= 10 else f"{x:.1f}%"


def _duration(us: float) -> str:
    return f"{us / 1e3:,.1f} ms" if us >= 1000 else f"{us:,.0f} µs"


# Each row: the key a chapter names it by (`main=`), its label, its cell. A key may
# name several rows that read as one (the bank conflicts are a share of the
# wavefronts above them; the three largest stall reasons).
_PROFILE_ROWS = (
    ("time", "time of the profiled launch", lambda s, z, p: _duration(p["duration_us"])),
    ("dram", "DRAM read + written", lambda s, z, p: f"{dram_bytes(s, z) / 1e6:,.0f} MB"),
    ("intensity", "FLOPs per DRAM byte", lambda s, z, p: f"{measured_intensity(s, z):,.0f}"),
    ("l1", "L1 hit rate, global loads", lambda s, z, p: _pct(p["l1_hit_pct"])),
    ("l2", "L2 hit rate, reads", lambda s, z, p: _pct(p["l2_hit_pct"])),
    (
        "wavefronts",
        "shared-memory load wavefronts per warp FFMA",
        lambda s, z, p: f"{wavefronts_per_ffma(s, z):.3g}" if p["shared_load_wavefronts"] else "—",
    ),
    (
        "wavefronts",
        "… of them bank conflicts",
        lambda s, z, p: (
            f"{p['shared_load_conflicts'] / p['shared_load_wavefronts']:.0%}"
            if p["shared_load_wavefronts"]
            else "—"
        ),
    ),
    (
        "store conflicts",
        "shared-memory store bank conflicts",
        lambda s, z, p: (
            f"{p['shared_store_conflicts'] / 1e6:,.1f} M" if p["shared_load_wavefronts"] else "—"
        ),
    ),
    (
        "occupancy",
        "occupancy: achieved / theoretical",
        lambda s, z, p: (
            f"{_pct(p['occupancy_achieved_pct'])} / {_pct(p['occupancy_theoretical_pct'])}"
        ),
    ),
    ("sm throughput", "SM throughput (% of peak)", lambda s, z, p: _pct(p["sm_throughput_pct"])),
    *(
        (
            "stalls",
            f"stall reason {i + 1} (cycles per issued instruction)",
            lambda s, z, p, i=i: f"`{p['stalls'][i][0]}` {p['stalls'][i][1]:.1f}"
            if len(p["stalls"]) > i
            else "",
        )
        for i in range(3)
    ),
)  # fmt: skip
PROFILE_KEYS = tuple(dict.fromkeys(key for key, _, _ in _PROFILE_ROWS))

# What a row's numbers mean, said wherever the row is shown.
_PROFILE_TERMS = {
    "wavefronts": "A wavefront is one pass of shared memory's 32 banks (128 bytes): an SM's "
    "shared memory serves one per clock, while the SM can issue 4 warp-wide FFMAs per clock.",
    "stalls": "A stall reason's cycles are averaged over every instruction the warps issued.",
}


def profile_table(columns, note: str = "", main=None) -> Markdown:
    """The profile of each (step, size) in columns, one column each, with where it was
    measured and the commands that measure it again. `main` names the rows (keys of
    PROFILE_KEYS) that the page's text argues with: the table shows those, and a box
    under it, closed, the others. Without `main`, every row is in the table."""
    unknown = [key for key in main or () if key not in PROFILE_KEYS]
    if unknown:
        raise ValueError(f"no profile row {unknown}: the rows are {', '.join(PROFILE_KEYS)}")
    profiles = [(s, z, profile_row(s, z)) for s, z in columns]
    rows = []
    for key, label, cell in _PROFILE_ROWS:
        cells = [cell(s, z, p) for s, z, p in profiles]
        if all(c in ("", "—") for c in cells):
            continue  # a counter none of these kernels can have (shared memory in 01, 02)
        rows.append((key, f"| {label} | " + " | ".join(cells) + " |"))
    head = "| | " + " | ".join(f"{_kernel(s)[:2]} at {_size_label(z)}" for s, z, _ in profiles)
    rule = "|---|" + "---:|" * len(profiles)

    def table(keys) -> str:
        return "\n".join([head + " |", rule, *(line for key, line in rows if key in keys)])

    def terms(keys) -> str:
        return "".join(f" {_PROFILE_TERMS[k]}" for k in keys if k in _PROFILE_TERMS)

    present = list(dict.fromkeys(key for key, _ in rows))
    shown = [k for k in present if main is None or k in main]
    more = [k for k in present if k not in shown]
    by_size = {}
    for s, z, _ in profiles:
        by_size.setdefault(_size_key(z), []).append(_kernel(s)[:2])
    commands = "; ".join(
        f"`python -m autograder profile {' '.join(dict.fromkeys(ids))} --size "
        f"{key.split('x')[0] if len(set(key.split('x'))) == 1 else key}`"
        for key, ids in by_size.items()
    )
    first = profiles[0][2]
    parts = [table(shown)]
    if more:
        body = f"{table(more)}\n\n{terms(more)}".rstrip()
        parts.append(for_experts("More counters from the same profile", body).data)
    parts.append(
        f"Nsight Compute, one launch of each kernel after a warm-up, clocks left as they were, "
        f"on an {first['gpu']}, {first['date']} ({first['versions']}); {commands} measures it "
        f"again (data: `book/data/{first['file']}`).{terms(shown)} {note}".rstrip()
    )
    return Markdown("\n\n".join(parts))


def profile_compare(step_id: str, sizes=None, main=None) -> Markdown:
    """A step's profile beside the step before it, at 4096³ and at every other size
    where both were profiled; `main` as in profile_table."""
    step = registry.step(step_id)
    before = _before(step)
    rows = profile_rows()
    sizes = sizes or sorted(
        {z for (k, z) in rows if k == step.name}, key=lambda z: -math.prod(_size(z))
    )
    columns = []
    for z in sizes:
        if before is not None and (before.name, _size_key(z)) in rows:
            columns.append((before.id, z))
        columns.append((step.id, z))
    return profile_table(columns, main=main)


# ---- prediction, then measurement ----


def prediction(step_id: str, size=LARGEST) -> Markdown:
    """What the chapter's model predicts for a step, what the compiler made of it, and
    what the profiler and the bench measured, at one size."""
    from autograder.measure import sass

    step = registry.step(step_id)
    ev = sass.evidence(step, "sm_90")
    floats = model_shared_floats(step)
    requested = flops(size) / requested_intensity(step)
    lds = ev.per_math(sass.SHARED_LOADS)
    ldg = ev.per_math(sass.GLOBAL_LOADS)
    p = profile_row(step, size)
    r = bench_row(step, size)
    w = wavefronts_per_ffma(step, size) if p["shared_load_wavefronts"] else 0.0
    occ = ev.occupancy
    lines = [
        "| | the model | the compiler (SASS, sm_90) | measured (H100) |",
        "|---|---|---|---|",
        (
            f"| global memory | {requested / 1e9:,.1f} GB requested | {ldg:.3g} global loads "
            f"per FFMA | {dram_bytes(step, size) / 1e9:,.2f} GB from DRAM, L2 hit "
            f"{_pct(p['l2_hit_pct'])} |"
        ),
        (
            f"| shared-memory reads | {floats:.3g} floats per FMA | {lds:.3g} load "
            f"instructions per FFMA | {w:.3g} wavefronts per warp FFMA |"
            if floats
            else "| shared-memory reads | none | none | none |"
        ),
        (
            f"| what shared memory allows | {_allows(floats)} | | {_allows(w)}; reached: "
            f"{r.pct_peak:.1f}% of FP32 peak |"
        ),
        (
            f"| occupancy | | {occ.warps}/{occ.max_warps} warps ({occ.fraction:.0%}), limited "
            f"by {' and '.join(occ.limited_by)} | {_pct(p['occupancy_achieved_pct'])} "
            f"achieved of {_pct(p['occupancy_theoretical_pct'])} |"
        ),
    ]
    return Markdown(
        "\n".join(lines) + f"\n\nAt {_size_label(size)}. *The model*: the chapter's "
        "arithmetic, from the registry's tile parameters (`book/figures.py`): bytes "
        "the block tile requests from global memory, floats each thread reads from shared "
        "memory per FMA, and what that allows if shared memory serves 32 floats per clock "
        "against 128 FMAs. *The compiler*: the main loop's instructions, compiled with "
        f"{ev.compiler} as this page was built. *Measured*: Nsight Compute and the bench "
        f"({p['gpu']}, {p['date']}); *what shared memory allows* there uses the measured "
        "wavefronts (one per clock, against 4 warp FFMAs)."
    )


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


def grid_fill(step_ids, sizes, gpu_name: str = "H100 SXM") -> Markdown:
    """Blocks per grid against the GPU's SMs, with the theoretical and achieved
    occupancy where profiled: how much of the GPU a small problem can keep busy."""
    n = sms(gpu_name)
    lines = [
        (
            "| step | block tile | size | blocks | SMs with a block | blocks per SM (at most) "
            "| occupancy: theoretical, achieved | GFLOP/s |"
        ),
        "|---|---|---|---:|---:|---:|---|---:|",
    ]
    for step_id in step_ids:
        step = registry.step(step_id)
        occ = theoretical_occupancy(step)
        for z in sizes:
            count = blocks(step, z)
            try:
                p = profile_row(step, z)
                achieved = _pct(p["occupancy_achieved_pct"])
            except KeyError:
                achieved = "not profiled"
            lines.append(
                f"| {step.name} | {step.geometry.tile[0]}×{step.geometry.tile[1]} | "
                f"{_size_label(z)} | {count} | {min(count, n)} of {n} | {occ.blocks} | "
                f"{occ.fraction:.0%}, {achieved} | {bench_row(step, z).gflops:,.0f} |"
            )
    return Markdown(
        "\n".join(lines) + f"\n\nBlocks: the grid the registry launches. SMs: an {gpu_name} "
        f"has {n}. Theoretical occupancy from this build's compile "
        "(`autograder/ladder/hardware.py`); "
        f"achieved from Nsight Compute, averaged over the cycles an SM was active. "
        f"{provenance(results())}"
    )


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
            f"| {r.inputs} | {r.result} | {r.max_e / checker.U:.1f} | {r.median_e / checker.U:.2f} "
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


# ---- the landing page ----


def ladder_end(size=LARGEST) -> Markdown:
    """Where the ladder ends: its last step's measurement at 4096³, from the data."""
    last = [s for s in registry.STEPS if s.name not in NOT_YET_MEASURED][-1]
    first = registry.STEPS[0]
    r, r0 = bench_row(last.id, size), bench_row(first.id, size)
    return Markdown(
        f"**Where the ladder ends.** Step {last.id} ({last.title.lower()}) measured "
        f"{r.gflops:,.0f} GFLOP/s at {_size_label(size)}: **{r.pct_cublas:.1f}% of cuBLAS** "
        f"({r.cublas_gflops:,.0f} GFLOP/s, strict FP32, in the same run) and "
        f"{r.pct_peak:.1f}% of the GPU's FP32 peak, {r.gflops / r0.gflops:,.0f} times step "
        f"{first.id}. Measured on an {r.gpu}, {r.date} (`book/data/bench_*.csv`)."
    )


def glue_occupancy(prefix: str, step, arch: str = "sm_90") -> None:
    """Glue a step's theoretical occupancy as this build compiles it: {prefix}_regs,
    _blocks, _threads, _warps, _max_warps and _pct."""
    occ = theoretical_occupancy(step, arch)
    glue(**{
        f"{prefix}_regs": occ.registers, f"{prefix}_blocks": occ.blocks,
        f"{prefix}_threads": occ.threads, f"{prefix}_warps": occ.warps,
        f"{prefix}_max_warps": occ.max_warps, f"{prefix}_pct": 100 * occ.fraction,
    })  # fmt: skip


def tune_row(step_id: str, **params) -> dict:
    """The committed tuning search's row of a step at the registry's parameters changed
    by params (book/data/tune_<step>_<gpu>.csv); a KeyError where it was not searched."""
    wanted = {**registry.step(step_id).params, **params}
    for r in tune_rows(step_id):
        if r["params"] == wanted:
            return r
    raise KeyError(f"no configuration {wanted} in the committed search of step {step_id}")


def loop_versions(versions) -> Markdown:
    """Main loops side by side: for each (label, step id, parameter changes, measured row or
    None), the instructions per k of its SASS (sm_90, compiled as the page is built), its
    registers, and what was measured at 4096³ with where."""
    from autograder.measure import sass

    kinds = ("FFMA", "LDS.128", "LDG", "LDG.128", "STS", "STS.128", "BAR", "other")
    lines = [
        "| kernel | BK | " + " | ".join(f"{k} per k" for k in kinds)
        + " | registers | GFLOP/s at 4096³ |",
        "|---|---:|" + "---:|" * len(kinds) + "---:|---:|",
    ]  # fmt: skip
    for label, step_id, change, measured in versions:
        step = registry.step(step_id).with_params(**change)
        e = sass.evidence(step, "sm_90")
        cells = " | ".join(
            (f"{e.per_k(k):.3g}" + ("\\*" if e.loop.skippable[k] else ""))
            if e.loop.counts[k]
            else ""
            for k in kinds
        )  # fmt: skip
        lines.append(
            f"| {label} | {step.params['BK']} | {cells} | {e.resources.registers} | {measured} |"
        )
    return Markdown(
        "\n".join(lines) + "\n\nInstructions per value of k in each main loop, compiled with "
        f"{sass.evidence(registry.step(versions[0][1]), 'sm_90').compiler} for sm_90 as this "
        "page was built. \\* Some of these sit behind a branch (the scalar fallback of the "
        "float4 loads) and do not run where the rows are aligned, as at 4096³."
    )


def beyond_row(step, size=LARGEST) -> bench.Row:
    """A step's row in the bonus kernels' run (book/data/beyond_*.csv), which timed 08,
    10, 11 and cuBLAS together; or cuBLAS with TF32's (step = bench.CUBLAS_TF32)."""
    name = step if step == bench.CUBLAS_TF32 else _kernel(step)
    key = _size(size)
    for r in beyond_results():
        if r.kernel == name and (r.M, r.N, r.K) == key:
            return r
    raise KeyError(f"no row of {name} at {_size_label(size)} in book/data/beyond_*.csv")


def compile_report(step_id: str, changes: list[dict], arch: str = "sm_80") -> None:
    """Compile the step's kernel with each change of its parameters with NVRTC for arch,
    as the page is built, and print what ptxas reports: registers and shared memory, or
    why it refused."""
    from autograder.run import compiler

    for change in changes:
        step = registry.step(step_id).with_params(**change)
        try:
            r = compiler.compile_for_arch(
                step.source(), [step.name_expression], arch, step.path.name
            ).resources[step.name_expression]
            said = f"{r.registers} registers, {r.shared_bytes:,} bytes of static shared memory"
        except Exception as e:  # noqa: BLE001 -- whatever failed, its message says why
            import re

            errors = [line.strip() for line in str(e).splitlines() if "error" in line]
            said = "does not compile: " + (errors[-1] if errors else str(e).splitlines()[0])
            m = re.search(r"too much shared data \((0x[0-9a-f]+) bytes, (0x[0-9a-f]+) max\)", said)
            if m:
                used, most = (int(x, 16) for x in m.groups())
                said = (f"does not compile: ptxas says it uses too much shared data, "
                        f"{used:,} bytes where {most:,} is the most")  # fmt: skip
        print(f"{step.name_expression} on {arch}: {said}")
    print(f"(NVRTC {compiler.nvrtc_version()}; a block may declare at most 48 KB = 49,152 "
          "bytes of static shared memory)")  # fmt: skip


# ---- the shape sweep (`bench --sweep`), for step 09 ----------------------------------------


def sweep_results() -> list[bench.Row]:
    """Every committed sweep measurement (book/data/sweep_*.csv)."""
    rows = []
    for path in sorted(DATA.glob("sweep_*.csv")):
        rows += bench.read_csv(path)
    return rows


def _sweep_shapes() -> list[tuple[str, tuple[int, int, int]]]:
    return [(group, bench.parse_size(s)) for group, sizes in bench.SWEEP.items() for s in sizes]


def sweep_plot(steps: list[str]):
    """% of cuBLAS at every shape of the sweep, one bar per step, grouped by the sweep's
    classes; the steps not measured yet are named under it."""
    names = [_kernel(s) for s in steps]
    rows = [r for r in sweep_results() if r.kernel in names]
    measured = [n for n in names if any(r.kernel == n for r in rows)]
    cell = {(r.kernel, (r.M, r.N, r.K)): r.pct_cublas for r in rows}
    shapes = [(g, s) for g, s in _sweep_shapes() if any((n, s) in cell for n in measured)]
    fig, ax = plt.subplots(figsize=(WIDTH, 5.0))
    width = 0.8 / max(1, len(measured))
    for i, name in enumerate(measured):
        x = [j + (i - (len(measured) - 1) / 2) * width for j in range(len(shapes))]
        ax.bar(x, [cell.get((name, s), math.nan) for _, s in shapes], width, label=name)
    ax.axhline(100, color="black", linestyle="--", linewidth=1, label="cuBLAS (FP32)")
    labels = [f"{m}×{n}×{k}" for _, (m, n, k) in shapes]
    ax.set_xticks(range(len(shapes)), labels, rotation=60, ha="right", fontsize=SMALL)
    ax.tick_params(labelsize=SMALL)
    top = max(100, *(v for v in cell.values() if v == v)) * 1.18  # room for the classes' names
    ax.set_ylim(0, top)
    for j, (group, _) in enumerate(shapes):
        if j == 0 or shapes[j - 1][0] != group:
            ax.axvline(j - 0.5, color="grey", linewidth=0.5)
            ax.text(j - 0.4, top * 0.98, group, fontsize=SMALL, va="top")
    ax.set_xlabel("shape M×N×K", fontsize=SMALL + 1)
    ax.set_ylabel("% of cuBLAS (FP32, same run)", fontsize=SMALL + 1)
    first = rows[0]
    ax.set_title(f"The shape sweep on the {first.gpu} ({first.date}, CUDA {first.cuda})",
                 fontsize=SMALL + 1,
                 pad=6 + 16 * math.ceil((len(measured) + 1) / 3))  # the legend's rows  # fmt: skip
    ax.legend(fontsize=SMALL, ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0),
              frameon=False)  # fmt: skip
    fig.tight_layout()
    show()
    missing = not_measured([n for n in names if n not in measured])
    return Markdown(f"The plot leaves out what was not measured. {missing}") if missing else None


def sweep_summary(steps: list[str]) -> Markdown:
    """Each step's geometric mean and minimum (% of cuBLAS) over the sweep, and its
    worst shape."""
    lines = ["| step | geometric mean | minimum | at |", "|---|---:|---:|---|"]
    for name in (_kernel(s) for s in steps):
        rows = [r for r in sweep_results() if r.kernel == name]
        if not rows:
            lines.append(f"| {name} | not yet measured | | |")
            continue
        worst = min(rows, key=lambda r: r.pct_cublas)
        mean = math.exp(sum(math.log(r.pct_cublas) for r in rows) / len(rows))
        lines.append(
            f"| {name} | {mean:.1f}% | {worst.pct_cublas:.1f}% | "
            f"{_size_label((worst.M, worst.N, worst.K))} |"
        )
    return Markdown("\n".join(lines))


def sweep_row(step, size) -> bench.Row:
    """A step's committed sweep measurement at one shape."""
    name, key = _kernel(step), _size(size)
    for r in sweep_results():
        if r.kernel == name and (r.M, r.N, r.K) == key:
            return r
    raise KeyError(f"no sweep row of {name} at {_size_label(size)}: `bench --sweep` adds it")


def dispatch_plans(gpu_name: str = "H100 SXM", shapes=None) -> Markdown:
    """What the rule of thumb (by_shape.rule_of_thumb) chooses at each sweep shape, for a
    GPU with that many SMs, and what the plan costs (explorers.plan_costs)."""
    from autograder.run import by_shape

    count = sms(gpu_name)
    lines = [
        "| shape | plan | blocks | waves | split-K's extra traffic |",
        "|---|---|---:|---:|---:|",
    ]
    for _, (M, N, K) in shapes or _sweep_shapes():
        plan = by_shape.rule_of_thumb(M, N, K, count)
        c = explorers.plan_costs(M, N, K, plan, count)
        extra = f"{c.split_bytes / c.product_bytes:.0%}" if c.split_bytes else "none"
        lines.append(
            f"| {_size_label((M, N, K))} | {plan} | {c.blocks} | {c.waves:.2f} | {extra} |"
        )
    return Markdown("\n".join(lines))


def dispatch_table() -> Markdown:
    """The measured dispatch tables committed (`tune 09`): each class's plan, and its
    share of cuBLAS over the class's four shapes beside step 08 alone's."""
    from autograder.measure import tune_plans

    parts = []
    for path in sorted(DATA.glob("dispatch_*.json")):
        table, timings = tune_plans.read(path)
        lines = [
            f"**{table.gpu}** ({table.sms} SMs), {table.measured}:",
            "",
            "| class (its measured shape) | rows of A and B | plan | % of cuBLAS | 08 alone |",
            "|---|---|---|---:|---:|",
        ]
        for r in tune_plans.class_results(table, timings):
            lines.append(
                f"| {_size_label(r.shape)} | {'aligned' if r.aligned else 'unaligned'} "
                f"| {r.plan} | {r.pct_cublas:.1f}% | {r.alone_pct_cublas:.1f}% |"
            )
        parts.append("\n".join(lines))
    return Markdown(
        "\n\n".join(parts) or "**No table measured yet**: `python -m autograder tune 09`."
    )


# ---- the last FP32 step's ablation (`bench --ablation`) ------------------------------------


def ablation_table(step_id: str = "08") -> Markdown:
    """A step with each of its tricks taken out (autograder/measure/ablation.py): % of
    cuBLAS in the same run, and what the trick is worth, at each size measured."""
    from autograder.measure import ablation

    whole = registry.step(step_id).name
    variants = ablation.variants(step_id)
    rows = _ablation_rows(step_id)
    command = "python -m autograder bench --ablation"
    if step_id != ablation.STEP:
        command += f" {step_id}"
    if not rows:
        return Markdown(
            f"**Not yet measured**: `{command}` on a GPU times "
            f"{whole} with each of these taken out in turn: "
            + "; ".join(v.trick for v in variants)
            + "."
        )
    sizes = sorted({(r.M, r.N, r.K) for r in rows}, key=lambda s: s[0] * s[1] * s[2])
    cell = {(r.kernel, (r.M, r.N, r.K)): r for r in rows}
    # A TF32 step against the library a reader would use instead: cuBLAS with TF32,
    # timed in the same run; an FP32 step against strict cuBLAS.
    tf32 = registry.step(step_id).input_roundoff > 0
    library = "cuBLAS TF32" if tf32 else "cuBLAS"

    def pct(r: bench.Row) -> float:
        if tf32:
            return 100 * r.gflops / cell[bench.CUBLAS_TF32, (r.M, r.N, r.K)].gflops
        return r.pct_cublas

    head = " | ".join(f"{_size_label(s)}: % of {library} (the trick's worth)" for s in sizes)
    lines = [f"| kernel | {head} |", "|---|" + "---:|" * len(sizes)]
    for label in [whole, *(v.label for v in variants)]:
        shown = []
        for size in sizes:
            r, full = cell.get((label, size)), cell.get((whole, size))
            if r is None or full is None:
                shown.append("—")
            elif label == whole:
                shown.append(f"{pct(r):.1f}%")
            else:
                shown.append(f"{pct(r):.1f}% ({_worth(full, r):+.0%})")
        lines.append(f"| {label} | " + " | ".join(shown) + " |")
    first = rows[0]
    lines.append(
        f"\nMeasured by `{command}` on an {first.gpu}, "
        f"{first.date}, CUDA {first.cuda}, CuPy {first.cupy}."
    )
    return Markdown("\n".join(lines))


def _ablation_rows(step_id: str) -> list[bench.Row]:
    """The committed rows of a step's ablation run: the whole kernel, its variants and
    cuBLAS with TF32 where the run timed it."""
    from autograder.measure import ablation

    labels = {registry.step(step_id).name, bench.CUBLAS_TF32}
    labels |= {v.label for v in ablation.variants(step_id)}
    return [
        r
        for path in sorted(DATA.glob(f"{ablation.kind(step_id)}_*.csv"))
        for r in bench.read_csv(path)
        if r.kernel in labels
    ]


def _worth(whole: bench.Row, variant: bench.Row) -> float:
    """What a trick is worth: the whole kernel's rate over the variant's, less 1."""
    return whole.gflops / variant.gflops - 1


def ablation_worth(step_id: str, trick: str, size=LARGEST) -> float:
    """What the trick that starts with `trick` is worth in the step's committed ablation
    run, in per cent, as its table says it (negative: the whole kernel was the slower)."""
    from autograder.measure import ablation

    (variant,) = [v for v in ablation.variants(step_id) if v.trick.startswith(trick)]
    rows = {r.kernel: r for r in _ablation_rows(step_id) if (r.M, r.N, r.K) == _size(size)}
    return 100 * _worth(rows[registry.step(step_id).name], rows[variant.label])


# ---- the ladder at a glance: the landing page's chart and table, each chapter's rung ----


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


def ladder_chart(size=LARGEST, highlight: str | None = None):
    """Every step's GFLOP/s at one size as a bar, against cuBLAS and the FP32 peak of the
    GPU it was measured on; the step `highlight` (an id) drawn in colour, the others grey
    where one is highlighted. Narrow enough (about 305 px) to stand beside a table on a
    desktop, where the landing page's grid gives it 312 px, and to fit a phone's column."""
    rows = _rungs(size)
    peak = fp32_peak(rows)
    cublas = rows[0].cublas_gflops
    fig, ax = plt.subplots(figsize=(3.15, 0.3 * len(rows) + 1.6))
    y = range(len(rows))[::-1]
    colours = [
        pictures.VERMILLION if highlight is None or r.kernel[:2] == highlight else pictures.GREY
        for r in rows
    ]
    ax.barh(list(y), [r.gflops / 1e3 for r in rows], color=colours, height=0.7)
    ax.set_yticks(list(y), [r.kernel[:2] for r in rows], fontsize=SMALL)
    ax.axvline(cublas / 1e3, color="black", ls="--", lw=1)
    ax.axvline(peak / 1e3, color=pictures.BLUE, ls=":", lw=1.5)
    top = len(rows) - 0.4
    ax.text(cublas / 1e3, top, "cuBLAS ", ha="right", va="bottom", fontsize=SMALL)
    ax.text(peak / 1e3, top, " FP32\n peak", ha="left", va="bottom", fontsize=SMALL,
            color=pictures.BLUE)  # fmt: skip
    ax.set_xlim(0, peak / 1e3 * 1.25)
    ax.set_ylim(-0.6, len(rows) + 0.6)
    ax.tick_params(labelsize=SMALL)
    ax.set_xlabel(f"TFLOP/s at {_size_label(size)}", fontsize=SMALL)
    ax.set_ylabel("step", fontsize=SMALL)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(f"{rows[0].gpu.replace('NVIDIA ', '')}, {rows[0].date}", fontsize=SMALL)
    fig.tight_layout()
    return fig


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
        r = beyond_row(step, size)
        r08 = beyond_row("08", size)
        here = (
            f"**You are here: beyond the ladder**, step {step.id}: {r.gflops:,.0f} GFLOP/s at "
            f"{_size_label(size)}, {r.pct_cublas:.1f}% of strict-FP32 cuBLAS, against step "
            f"08's {r08.pct_cublas:.1f}% in the same run, on an {r.gpu}."
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


def ladder_says(size=LARGEST) -> Markdown:
    """What the landing page's chart and table show, and where their numbers come from."""
    rows = _rungs(size)
    first = rows[0]
    return Markdown(
        f"**The ladder.** Each step's GFLOP/s at {_size_label(size)} on an {first.gpu}, "
        f"{first.date} (CUDA {first.cuda}, CuPy {first.cupy}), against cuBLAS in strict FP32 "
        "timed in the same run, and the GPU's FP32 peak as the bench reckons it "
        f"({fp32_peak(rows):,.0f} GFLOP/s: a step's GFLOP/s over its % of peak). "
        "Data: `book/data/bench_*.csv`, drawn as this page was built."
    )

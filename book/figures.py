"""Figures and tables for the book, drawn at build time from the repository's
own data and code: book/data/bench_*.csv (written by `python -m autograder
bench`), the registry, and the explorers' models. Nothing here is typed in.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown

from autograder import bench, explorers, registry

DATA = Path(__file__).resolve().parent / "data"
LARGEST = (4096, 4096, 4096)


def results() -> list[bench.Row]:
    """Every committed measurement, one GPU per CSV file."""
    rows = []
    for path in sorted(DATA.glob("bench_*.csv")):
        rows += bench.read_csv(path)
    return rows


def provenance(rows: list[bench.Row]) -> str:
    first = rows[0]
    return (f"Measured by `python -m autograder bench` on an {first.gpu}, {first.date}, "
            f"CUDA {first.cuda}, CuPy {first.cupy}; cuBLAS with TF32 off in the same run "
            f"(data: `book/data/bench_*.csv`).")


def ladder(kernels: list[str] | None = None):
    """GFLOP/s against size for some steps of the ladder (all by default) and cuBLAS."""
    rows = [r for r in results() if kernels is None or r.kernel in kernels]
    bench.figure(rows)
    plt.show()
    return Markdown(provenance(rows))


def progression(size=LARGEST) -> Markdown:
    """The ladder at one size: GFLOP/s, % of cuBLAS, % of FP32 peak, gain over the step before."""
    rows = [r for r in results() if (r.M, r.N, r.K) == size]
    lines = ["| step | GFLOP/s | % of cuBLAS | % of FP32 peak | × previous step |",
             "|---|---:|---:|---:|---:|"]
    previous = None
    for r in rows:
        gain = f"{r.gflops / previous:.1f}×" if previous else ""
        lines.append(f"| {r.kernel} | {r.gflops:.0f} | {r.pct_cublas:.1f}% | {r.pct_peak:.1f}% "
                     f"| {gain} |")
        previous = r.gflops
    lines.append(f"| cuBLAS | {rows[0].cublas_gflops:.0f} | 100% | | |")
    caption = f"\n\nAt {size[0]}×{size[1]}×{size[2]}. {provenance(rows)}"
    return Markdown("\n".join(lines) + caption)


def step_result(step_id: str) -> Markdown:
    """One step against the one before it and cuBLAS, at every measured size."""
    step = registry.step(step_id)
    before = registry.STEPS[registry.STEPS.index(step) - 1] if step_id != "01" else None
    rows = results()
    sizes = sorted({(r.M, r.N, r.K) for r in rows}, key=lambda s: s[0] * s[1] * s[2])
    cell = {(r.kernel, (r.M, r.N, r.K)): r for r in rows}
    names = [s.name for s in (before, step) if s]
    lines = ["| size | " + " | ".join(names) + " | cuBLAS |",
             "|---|" + "---:|" * (len(names) + 1)]
    for size in sizes:
        shown = [cell.get((n, size)) for n in names]
        if not all(shown):
            continue
        lines.append(f"| {size[0]}×{size[1]}×{size[2]} | "
                     + " | ".join(f"{r.gflops:.0f} ({r.pct_cublas:.1f}%)" for r in shown)
                     + f" | {shown[0].cublas_gflops:.0f} |")
    return Markdown("GFLOP/s (% of cuBLAS).\n\n" + "\n".join(lines) + f"\n\n{provenance(rows)}")


def warp_addresses(N: int = 777, K: int = 513):
    """Which bytes of A, B and C one warp touches at one k, for both thread mappings."""
    fig, axes = plt.subplots(2, 3, figsize=(10, 5), sharex=True)
    for row, walk in enumerate(("rows", "columns")):
        for ax, access in zip(axes[row], explorers.warp_accesses(walk, N, K), strict=True):
            ax.scatter(range(32), [o * 4 for o in access.offsets], s=10)
            ax.set_title(f"{access.matrix}, threads walk the {walk}: {access.segments} "
                         f"transaction{'s' * (access.segments != 1)}", fontsize=9)
    for ax in axes[1]:
        ax.set_xlabel("lane of the warp")
    for ax in axes[:, 0]:
        ax.set_ylabel("byte address")
    fig.suptitle(f"One warp of a 32×32 block at one step k (N = {N}, K = {K})")
    fig.tight_layout()
    plt.show()


def tile_hierarchy(step_id: str = "07"):
    """The block tile, one warp's tile, and one thread's tiles inside it, to scale."""
    p = registry.step(step_id).params
    BM, BN, WM, WN, TM, TN = (p[k] for k in ("BM", "BN", "WM", "WN", "TM", "TN"))
    WNITER = p["WNITER"]
    WMITER = (WM * WN) // (32 * TM * TN * WNITER)
    WSUBM, WSUBN = WM // WMITER, WN // WNITER
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    ax.add_patch(plt.Rectangle((0, 0), BN, BM, fill=False, lw=2))
    for wr in range(BM // WM):
        for wc in range(BN // WN):
            ax.add_patch(plt.Rectangle((wc * WN, wr * WM), WN, WM, fill=False, lw=1,
                                       ls="--", color="tab:blue"))
    for wm in range(WMITER):  # thread 0's tiles inside warp 0
        for wn in range(WNITER):
            ax.add_patch(plt.Rectangle((wn * WSUBN, wm * WSUBM), TN, TM, color="tab:red"))
    ax.set_xlim(-2, BN + 2)
    ax.set_ylim(BM + 2, -2)
    ax.set_aspect("equal")
    ax.set_xlabel("columns of the block tile (BN)")
    ax.set_ylabel("rows of the block tile (BM)")
    ax.set_title(f"block {BM}×{BN} (black), warps {WM}×{WN} (blue),\nthread 0's "
                 f"{WMITER}×{WNITER} tiles of {TM}×{TN} (red)", fontsize=10)
    plt.show()


def roofline(gpu_name: str = "H100 SXM"):
    """Each step at its block tile's arithmetic intensity, under the GPU's two ceilings."""
    spec = explorers.GPUS[gpu_name]
    peak = spec["fp32_tflops"] * 1e3
    bandwidth = spec["bandwidth_gbs"]
    measured = {r.kernel: r.gflops for r in results() if (r.M, r.N, r.K) == LARGEST}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = [2 ** e for e in range(-3, 8)]
    ax.plot(xs, [min(peak, bandwidth * x) for x in xs], color="black", label=f"{gpu_name} roof")
    for step in registry.STEPS:
        if step.name not in measured:
            continue
        # Steps 01-02 read A and B straight from global memory: 2 floats per FMA.
        intensity = 0.25 if step.id in ("01", "02") else explorers.tile_costs(
            step.id).flops_per_global_byte
        ax.scatter([intensity], [measured[step.name]], zorder=3)
        ax.annotate(step.name, (intensity, measured[step.name]), fontsize=8,
                    xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("FLOPs per byte requested from global memory (block tile)")
    ax.set_ylabel("GFLOP/s at 4096³")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    plt.show()


def step_plot(step_id: str):
    """GFLOP/s against size for a step, the step before it, and cuBLAS."""
    step = registry.step(step_id)
    index = registry.STEPS.index(step)
    names = [s.name for s in registry.STEPS[max(index - 1, 0) : index + 1]]
    rows = [r for r in results() if r.kernel in names]
    bench.figure(rows)
    plt.show()


def exercise(step_id: str) -> Markdown:
    """The chapter's exercise: its notebook, with an Open in Colab badge made from the
    repository URL in _config.yml (its one home)."""
    from autograder.assignments import assignment
    from autograder.notebooks import colab_url

    a = assignment(step_id)
    colab = colab_url(a.name)
    return Markdown(
        f"**Exercise.** Notebook `exercises/{a.name}/{a.name}.ipynb`: write the part of the "
        f"kernel this chapter is about, check it on odd shapes, and see it graded. "
        f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab})")

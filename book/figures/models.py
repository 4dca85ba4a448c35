"""The chapters' models, drawn beside the measurements: the addresses a warp touches, its
passes through shared memory's banks, the tile hierarchy, the roofline, and the arithmetic
the chapters' sentences quote (intensities, floats per FMA, blocks, SMs).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from IPython.display import Markdown

from autograder.course import explorers
from autograder.ladder import registry

from .common import (
    GEMM_STEPS,
    LARGEST,
    SMALL,
    WIDTH,
    _kernel,
    _size,
    _size_label,
    bench_row,
    profile_row,
    provenance_short,
    show,
)


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


def blocks(step, size) -> int:
    """Blocks in the step's grid at a size."""
    M, N, _ = _size(size)
    x, y = registry.step(_kernel(step)).geometry.grid(M, N)
    return x * y


def sms(gpu_name: str = "H100 SXM") -> int:
    return explorers.GPUS[gpu_name]["sms"]

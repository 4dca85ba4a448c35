"""The pictures of steps 00 to 03: the CPU triple loop's two loop orders and how each
walks B in memory (00); one thread per element of C and the addresses one warp reads
(01, 02); the tiles of A and B that a block copies to shared memory (03).
"""

from __future__ import annotations

import itertools

from autograder.ladder import registry

from .ink import (
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    SKY,
    SMALL,
    TEXT,
    TILE_GREY,
    VERMILLION,
    WIDTH,
    _box,
    _caption,
    _counts,
    _grid,
    _lane_colour,
    _panel,
    _plural,
    _text,
)

# --- Step 00: the CPU triple loop ---------------------------------------------------

# The example: small enough to number every element.
CPU_M, CPU_N, CPU_K = 4, 6, 5
CPU_I, CPU_J, CPU_KK = 1, 2, 3  # the row of C, its column, and i-k-j's fixed k


def _gemm_origins(M, N, K, gap=1.0):
    """Top-left corners of A, B and C in the textbook layout: B above C, A to its left."""
    return (0, K + gap), (K + gap, 0), (K + gap, K + gap)


def _cpu_triple_loop(fig, step):
    M, N, K = CPU_M, CPU_N, CPU_K
    fig.set_size_inches(WIDTH, 4.4)
    # Each order: its title, then the elements of A, B and C that one pass of
    # its inner loop touches, in order.
    orders = (
        (
            "i-j-k: the inner loop walks k",
            [(CPU_I, k) for k in range(K)],
            [(k, CPU_J) for k in range(K)],
            [(CPU_I, CPU_J)] * K,
        ),
        (
            "i-k-j: the inner loop walks j",
            [(CPU_I, CPU_KK)] * N,
            [(CPU_KK, j) for j in range(N)],
            [(CPU_I, j) for j in range(N)],
        ),
    )
    colours = {"A": ORANGE, "B": SKY, "C": GREEN}
    (ax_, ay), (bx, by), (cx, cy) = _gemm_origins(M, N, K)
    for o, (title, a_cells, b_cells, c_cells) in enumerate(orders):
        ax = _panel(
            fig, (0.01 + 0.5 * o, 0.33, 0.47, 0.54), (-1.6, bx + N + 0.2), (-1.2, cy + M + 1.3)
        )
        _text(ax, (bx + N) / 2, -1.2, title, va="bottom", fontweight="bold")
        for name, (x, y), rows, cols, cells in (
            ("A", (ax_, ay), M, K, a_cells),
            ("B", (bx, by), K, N, b_cells),
            ("C", (cx, cy), M, N, c_cells),
        ):
            _grid(ax, x, y, rows, cols, 1, 1, lw=0.4)
            _box(ax, x, y, cols, rows, lw=1.2)
            for order, cell in enumerate(cells):
                if len(set(cells)) == 1:  # the same element on every pass: drawn once
                    label = f"1–{len(cells)}"
                    if order:
                        continue
                else:
                    label = str(order + 1)
                _box(ax, x + cell[1], y + cell[0], 1, 1, fc=colours[name], ec="black", lw=0.6)
                _text(ax, x + cell[1] + 0.5, y + cell[0] + 0.5, label, size=SMALL)
        _text(ax, ax_ - 0.3, ay + M / 2, "A", ha="right")
        _text(ax, bx - 0.3, by + K / 2, "B", ha="right")
        _text(ax, cx + N / 2, cy + M + 0.3, "C", va="top")
    # B as it lies in memory, one row after another, numbered in the order read.
    for o, (title, _, b_cells, _) in enumerate(orders):
        ax = _panel(fig, (0.03, 0.17 - 0.15 * o, 0.94, 0.1), (-0.1, K * N + 0.1), (-0.1, 1.1))
        read = {r * N + c: n + 1 for n, (r, c) in enumerate(b_cells)}
        for addr in range(K * N):
            _box(ax, addr, 0, 1, 1, fc=SKY if addr in read else "white", ec=GREY, lw=0.5)
            if addr in read:
                _text(ax, addr + 0.5, 0.5, str(read[addr]), size=SMALL)
        for r in range(1, K):
            ax.plot([r * N, r * N], [-0.25, 1.25], color="black", lw=1.5)
        (r0, c0), (r1, c1) = b_cells[:2]
        stride = (r1 - r0) * N + (c1 - c0)
        walk = "next to each other" if stride == 1 else f"N = {stride} floats apart"
        _text(
            ax,
            0,
            -0.3,
            f"{title[:5]}: B in memory, row after row; its reads are {walk}",
            ha="left",
            va="bottom",
            size=TEXT - 1,
        )


# --- Steps 01 and 02: one thread per element of C ------------------------------------

GRID_BLOCKS = (3, 3)  # the example C: this many block rows and block columns
NAIVE_K = 16  # the example K
SHOWN_BLOCK = (1, 2)  # the block row and block column zoomed into
SECTOR = 32  # bytes: global memory is read in sectors of 32 bytes


def _warp_cells(geometry: registry.Geometry, warp: int = 0):
    """(row, column) inside the block tile of each lane of a warp, for kernels with
    one thread per element: threadIdx.x varies fastest, and walks the rows of C
    when rows_on is 'x', else its columns."""
    bx = geometry.block[0]
    cells = []
    for lane in range(32):
        t = warp * 32 + lane
        tx, ty = t % bx, t // bx
        cells.append((tx, ty) if geometry.rows_on == "x" else (ty, tx))
    return cells


def _warp_reads(name: str, offsets: list[int]) -> str:
    """What one warp's 32 addresses (in floats) cost, in words."""
    distinct = sorted(set(offsets))
    sectors = len({4 * o // SECTOR for o in offsets})
    cost = _plural(sectors, "sector")
    if len(distinct) == 1:
        return f"{name}: 1 float for all 32 lanes: {cost}"
    gaps = {b - a for a, b in itertools.pairwise(distinct)}
    if gaps == {1}:
        return f"{name}: {len(distinct)} floats in a row: {cost}"
    if len(gaps) == 1:
        return f"{name}: {len(distinct)} floats, {gaps.pop()} apart: {cost}"
    return f"{name}: {len(distinct)} floats: {cost}"


def _one_thread_per_element(fig, step):
    g = step.geometry
    TR, TC = g.tile
    K, k = NAIVE_K, NAIVE_K // 4
    rows_b, cols_b = GRID_BLOCKS
    N = cols_b * TC  # the example C's width, for B's addresses
    fig.set_size_inches(WIDTH, 4.3)
    # Left: the grid of blocks over C, each with its blockIdx (x, y).
    gx = _panel(fig, (0.06, 0.5, 0.26, 0.33), (-0.1, cols_b + 0.1), (-0.1, rows_b + 0.1))
    for br in range(rows_b):
        for bc in range(cols_b):
            shown = (br, bc) == SHOWN_BLOCK
            _box(gx, bc, br, 1, 1, fc=TILE_GREY if shown else "white", lw=2 if shown else 0.8)
            idx = (br, bc) if g.rows_on == "x" else (bc, br)
            _text(gx, bc + 0.5, br + 0.5, f"{idx[0]},{idx[1]}", size=SMALL + 1)
    across = "y" if g.rows_on == "x" else "x"
    _text(
        gx,
        cols_b / 2,
        -0.15,
        f"blocks over C,\nblockIdx (x, y); {across} →",
        va="bottom",
        size=SMALL + 1,
    )
    _text(gx, -0.15, rows_b / 2, f"{g.rows_on} →", ha="right", rotation=-90, size=SMALL + 1)
    # Right: the shaded block, its strips of A and B, and warp 0 at one k.
    cells = _warp_cells(g)
    (ax_, ay), (bx, by), (cx, cy) = _gemm_origins(TR, TC, K, gap=2)
    zx = _panel(fig, (0.36, 0.03, 0.62, 0.84), (-3, cx + TC + 0.5), (-0.5, cy + TR + 4))
    _box(zx, ax_, ay, K, TR, lw=1.2)
    _box(zx, bx, by, TC, K, lw=1.2)
    _box(zx, cx, cy, TC, TR, fc=TILE_GREY, lw=1.5)
    _text(zx, ax_ - 0.6, ay + TR / 2, "A", ha="right")
    _text(zx, bx - 0.6, by + K / 2, "B", ha="right")
    row0, col0 = SHOWN_BLOCK[0] * TR, SHOWN_BLOCK[1] * TC  # the block's corner in C
    a_offsets = [(row0 + r) * K + k for r, _ in cells]
    b_offsets = [k * N + col0 + c for _, c in cells]
    for lane, (r, c) in enumerate(cells):
        colour = _lane_colour(lane)
        _box(zx, cx + c, cy + r, 1, 1, fc=colour, ec="none")
        for x, y, shared in (
            (ax_ + k, ay + r, len(set(a_offsets)) == 1),
            (bx + c, by + k, len(set(b_offsets)) == 1),
        ):
            _box(zx, x, y, 1, 1, fc="black" if shared else colour, ec="none")
    for name, (x, y), offsets in (
        ("A", (ax_ + k, ay + cells[0][0]), a_offsets),
        ("B", (bx + cells[0][1], by + k), b_offsets),
    ):
        if len(set(offsets)) == 1:
            _text(zx, x, y + 1.3, "↑ all 32\nlanes", ha="left", va="top", size=SMALL + 1)
    for lane in (0, 31):
        r, c = cells[lane]
        if g.rows_on == "x":  # the warp runs down a column: name its ends beside it
            _text(
                zx,
                cx + c + 1.5,
                cy + r + (0 if lane == 0 else 1),
                f"lane {lane}",
                size=SMALL + 1,
                ha="left",
                va="top" if lane == 0 else "bottom",
            )
        else:  # along a row: below it
            _text(
                zx,
                cx + c + 0.5,
                cy + r + 1.3,
                f"lane {lane}",
                size=SMALL + 1,
                va="top",
                ha="left" if lane == 0 else "right",
            )
    caption = f"C: one block, {TR}×{TC};\nthreadIdx.x walks its {g.x_walks}"
    _caption(zx, cx + TC / 2, cy + TR + 0.6, caption)
    _text(zx, ax_ + k + 0.5, ay + TR + 0.6, f"k = {k}", va="top", size=SMALL + 1)
    _counts(
        fig, 0.02, 0.42, "Each thread, each k", ["1 load of A, 1 of B", "1 FMA"], size=SMALL + 1
    )
    _counts(
        fig,
        0.02,
        0.24,
        f"Warp 0, each k (K = {K})",
        [_warp_reads("A", a_offsets), _warp_reads("B", b_offsets)],
        size=SMALL + 1,
    )


# --- Step 03: shared-memory tiling ---------------------------------------------------

SMEM_TILES_K = 3  # the example K, in tiles


def _smem_tiling(fig, step):
    BS = step.params["BS"]
    T = SMEM_TILES_K
    K = T * BS
    ty, tx = BS // 4, BS // 2  # the thread shown
    fig.set_size_inches(WIDTH, 4.4)
    gap = BS / 8
    (ax_, ay), (bx, by), (cx, cy) = _gemm_origins(BS, BS, K, gap=gap)
    ax = _panel(fig, (0.0, 0.02, 0.6, 0.86), (-gap * 2, bx + BS + 1), (-1, cy + BS + gap * 4))
    tile_colours = (SKY, ORANGE, GREEN, PURPLE)
    for t in range(T):
        colour = tile_colours[t % len(tile_colours)]
        for x, y in ((ax_ + t * BS, ay), (bx, by + t * BS)):
            _box(ax, x, y, BS, BS, fc=colour, ec="none", alpha=0.35)
            _box(ax, x, y, BS, BS, lw=1)
            _text(ax, x + BS * 0.8, y + BS * 0.78, str(t + 1), size=16, fontweight="bold")
            # The element this thread copies from each tile.
            ax.plot(x + tx + 0.5, y + ty + 0.5, "o", color="black", ms=5)
    _text(ax, ax_ - gap / 3, ay + BS / 2, "A", ha="right")
    _text(ax, bx - gap / 3, by + K / 2, "B", ha="right")
    _box(ax, cx, cy, BS, BS, fc=TILE_GREY, lw=1.5)
    ax.plot(cx + tx + 0.5, cy + ty + 0.5, "o", color=VERMILLION, ms=6)
    _text(
        ax,
        cx + BS / 2,
        cy + BS + gap / 3,
        f"C: block {BS}×{BS},\n● this thread's",
        va="top",
        size=SMALL + 1,
    )
    _counts(
        ax,
        0,
        0,
        f"Thread ty = {ty}, tx = {tx},\neach k-step",
        [
            "",
            "global loads: 1 of A, 1 of B",
            "shared stores: 2",
            f"shared reads (floats): {2 * BS}",
            f"FMAs: {BS}",
            "__syncthreads(): 2",
        ],
        size=SMALL + 1,
    )
    _text(
        ax,
        0,
        K * 0.9,
        f"K = {K}: k-steps 1 to {T},\none tile of A and B each",
        ha="left",
        size=SMALL + 1,
    )
    # Right: the two tiles in shared memory, and what the thread reads from them.
    for i, (name, along) in enumerate((("As", "row"), ("Bs", "column"))):
        sx = _panel(fig, (0.6, 0.5 - 0.45 * i, 0.38, 0.36), (-BS * 1.1, BS + 1), (-1, BS + 1))
        _box(sx, 0, 0, BS, BS, fc=TILE_GREY, lw=1)
        if along == "row":
            _box(sx, 0, ty, BS, 1, fc=VERMILLION, ec="none")
        else:
            _box(sx, tx, 0, 1, BS, fc=VERMILLION, ec="none")
        sx.plot(tx + 0.5, ty + 0.5, "o", color="black", ms=5)
        _text(
            sx,
            -1,
            BS / 2,
            f"{name} (shared):\n● stored to\n[{ty}][{tx}];\n{along} "
            f"{ty if along == 'row' else tx} read",
            ha="right",
            size=SMALL + 1,
        )

"""The pictures of steps 04 to 06: one thread's TM x TN results and the values of As and
Bs that one k multiplies (register blocking, 04 and 05); which float4 each lane of a warp
loads, and where the transposed store puts A's (06).
"""

from __future__ import annotations

from autograder.ladder import registry

from .ink import (
    ORANGE,
    SKY,
    SMALL,
    TILE_GREY,
    VERMILLION,
    WIDTH,
    _arrow,
    _below,
    _box,
    _caption,
    _counts,
    _grid,
    _ink,
    _lane_colour,
    _panel,
    _text,
)

# --- Steps 04 and 05: register blocking ---------------------------------------------

REG_K = 2  # the k shown


def _register_blocking(fig, step):
    """One thread's TM x TN results (TN = 1 in step 04), the values of As and Bs
    that one k multiplies, and where the thread's piece sits in the block tile."""
    p = step.params
    BM, BN, BK, TM = p["BM"], p["BN"], p["BK"], p["TM"]
    TN = p.get("TN", 1)
    one_d = "TN" not in p
    g = step.geometry
    k = min(REG_K, BK - 1)
    height = 4.0
    fig.set_size_inches(WIDTH, height)
    # Left: the block tile, its threads, and the one shown.
    per_row = BN // TN
    thread = per_row + per_row // 3  # a thread of the second row of threads
    t_row, t_col = thread // per_row, thread % per_row
    h = 0.62
    w = min(h * height * BN / BM / WIDTH, 0.24)
    ox = _panel(fig, (0.02, 0.27, w, h), (-0.5, BN + 0.5), (-0.5, BM + 0.5))
    ox.set_anchor("SW")
    _grid(ox, 0, 0, BM, BN, TM, TN, lw=0.3)
    _box(ox, 0, 0, BN, BM, lw=1.2)
    _box(ox, t_col * TN, t_row * TM, TN, TM, fc=VERMILLION, ec=VERMILLION, lw=1)
    said = fig.text(
        0.02, 0.24, f"C: block {BM}×{BN},\n{g.threads} threads\nof {TM}×{TN};",
        fontsize=SMALL + 1, va="top",
    )  # fmt: skip
    _below(said, f"■ thread {thread}", colour=VERMILLION)
    # Right: the outer product at one k. In 1D, beside the thread's column, its
    # row of threads (BN of them, one column each: they read the same As values).
    cols, tc = (BN, t_col) if one_d else (TN, 0)  # columns of Bs drawn; the thread's first
    gap = 1.5
    ry = BK + gap  # the row of regN (b in step 04)
    ay = cy = ry + 1 + gap  # As's slice and the accumulators
    rx = BK + gap  # regM's column (2D)
    cx = bx = rx if one_d else rx + 1 + gap
    left = max(w, 0.14) + 0.05
    ax = _panel(fig, (left, 0.02, 0.99 - left, 0.85), (-1, cx + cols + 7), (-0.5, cy + TM + 4))
    ax.set_anchor("W")
    _box(ax, 0, ay, BK, TM, fc=TILE_GREY, lw=1)
    _box(ax, k, ay, 1, TM, fc=ORANGE, ec="black", lw=0.8)
    _text(ax, BK / 2, ay + TM + 0.4, f"As: {TM} rows × BK", va="top", size=SMALL + 1)
    _box(ax, bx, 0, cols, BK, fc=TILE_GREY, lw=1)
    _box(ax, bx + tc, k, TN, 1, fc=SKY, ec="black", lw=0.8)
    _text(ax, bx + cols + 0.4, BK * 0.7, f"Bs:\nBK × {cols}", ha="left", size=SMALL + 1)
    _text(ax, bx + cols + 0.4, k + 0.5, f"k = {k}", ha="left", size=SMALL + 1)
    for n in range(TN):
        _box(ax, cx + tc + n, ry, 1, 1, fc=SKY, ec="black", lw=0.8)
    _arrow(ax, (bx + tc + TN / 2, k + 1), (cx + tc + TN / 2, ry))
    _text(
        ax,
        cx + tc + TN + 0.4,
        ry + 0.5,
        "b, in a register" if one_d else "regN",
        ha="left",
        size=SMALL + 1,
    )
    if not one_d:
        for m in range(TM):
            _box(ax, rx, ay + m, 1, 1, fc=ORANGE, ec="black", lw=0.8)
        _arrow(ax, (k + 1, ay + TM / 2), (rx, ay + TM / 2))
        _text(ax, rx + 0.5, ay + TM + 0.4, "regM", va="top", size=SMALL + 1)
    else:
        _arrow(ax, (k + 1, ay + TM / 2), (cx, ay + TM / 2))
    _box(ax, cx, cy, cols, TM, fc=TILE_GREY, lw=1)
    for m in range(TM):
        for n in range(TN):
            _box(ax, cx + tc + n, cy + m, 1, 1, fc=VERMILLION, ec="white", lw=0.6)
    # One FMA traced: acc[m][n] += (As value m) * (Bs value n).
    m, n = TM // 2, tc + TN - 1
    _box(ax, cx + n, cy + m, 1, 1, fc="black", ec="black")
    src_x = k + 1 if one_d else rx + 1
    ax.plot([src_x, cx + n], [cy + m + 0.5] * 2, color="black", lw=0.8, ls=":")
    ax.plot([cx + n + 0.5] * 2, [ry + 1, cy + m], color="black", lw=0.8, ls=":")
    if one_d:
        said = _caption(ax, cx + cols / 2, cy + TM + 0.4, f"C: the {BN} threads of this row;")
        _below(said, f"■ this thread's {TM} accumulators", colour=VERMILLION)
    else:
        _text(ax, cx + TN + 0.4, cy + TM / 2, f"acc:\n{TM}×{TN}", ha="left", size=SMALL + 1)
    # Above As, left of Bs: the counts.
    loads = TM + 1 if one_d else TM + TN
    fmas = TM * TN
    # Floats read, not instructions: the compiler reads several per LDS.128, and
    # each chapter's SASS table counts the instructions.
    if one_d:
        lines = [
            "1 float of Bs → b,",
            f"{TM} floats of As,",
            f"{fmas} FMAs, all with b:",
            f"{loads / fmas:.2f} floats per FMA",
            "(step 03: 2)",
        ]
    else:
        before = registry.step("blocktiling_1d").params["TM"]
        lines = [
            f"{TM} floats of As → regM,",
            f"{TN} floats of Bs → regN,",
            f"{TM}×{TN} = {fmas} FMAs:",
            f"{loads / fmas:.2f} floats per FMA",
            f"(step 04: {(before + 1) / before:.2f})",
        ]
    lines += [
        "",
        "Each BK slice: global",
        f"loads, {BM * BK // g.threads} of A + {BK * BN // g.threads} of B",
    ]
    _counts(ax, -1, 0, "Each thread, each k", lines, size=SMALL + 1)


# --- Step 06: vectorized loads ------------------------------------------------------


def _vectorized(fig, step):
    """Which float4 of A's and B's tiles each lane of warp 0 loads, and where the
    transposed store puts A's."""
    p = step.params
    BM, BN, BK = p["BM"], p["BN"], p["BK"]
    threads = step.geometry.threads
    fig.set_size_inches(WIDTH, 4.8)
    # The kernel's index arithmetic (kernels/06_vectorized.cu), first load, warp 0.
    per_row_a, per_row_b = BK // 4, BN // 4  # float4s per row of each tile
    a_loads = [(lane // per_row_a, lane % per_row_a * 4) for lane in range(32)]
    b_loads = [(lane // per_row_b, lane % per_row_b * 4) for lane in range(32)]
    rows_a = a_loads[-1][0] + 1  # rows of A's tile that warp 0 loads
    # A's tile in global memory (the rows warp 0 loads), then As, transposed.
    gap = 4
    sx = BK + gap
    ax = _panel(
        fig, (0.02, 0.25, 0.66, 0.64), (-2, sx + rows_a + 0.5), (-2.6, max(rows_a, BK) + 1.3)
    )
    _box(ax, 0, 0, BK, rows_a, fc=TILE_GREY, lw=1)
    _box(ax, sx, 0, rows_a, BK, fc=TILE_GREY, lw=1)
    for lane, (r, c) in enumerate(a_loads):
        colour, ink = _lane_colour(lane), _ink(_lane_colour(lane))
        _box(ax, c, r, 4, 1, fc=colour, ec="white", lw=1)
        _text(ax, c + 2, r + 0.5, str(lane), size=SMALL, color=ink)
        _box(ax, sx + r, c, 1, 4, fc=colour, ec="white", lw=1)
        _text(ax, sx + r + 0.5, c + 2, str(lane), size=SMALL, color=ink, rotation=90)
    _text(
        ax,
        BK / 2,
        -0.4,
        f"A's tile in global memory:\nrows 0–{rows_a - 1} of {BM}, k 0–{BK - 1}",
        va="bottom",
        size=SMALL + 1,
    )
    _text(ax, sx + rows_a / 2, -0.4, "As[k][m] in shared:\ntransposed", va="bottom", size=SMALL + 1)
    _text(ax, -0.3, rows_a / 2, "m ↓", ha="right", size=SMALL + 1)
    _text(ax, BK / 2, rows_a + 0.3, "k →", va="top", size=SMALL + 1)
    _text(ax, sx - 0.3, BK / 2, "k ↓", ha="right", size=SMALL + 1)
    _text(ax, sx + rows_a / 2, BK + 0.3, "m →", va="top", size=SMALL + 1)
    _arrow(ax, (BK + 0.5, rows_a / 2), (sx - 1.2, rows_a / 2), lw=1.5)
    # B's tile: warp 0's float4s, along its first row, straight into Bs.
    b_rows = b_loads[-1][0] + 1
    gb = fig.add_axes((0.03, 0.04, 0.64, 0.06))
    gb.set_xlim(-0.5, BN + 0.5)
    gb.set_ylim(b_rows, 0)
    gb.axis("off")
    inside = per_row_b <= 16  # room for every lane's number inside its float4
    for lane, (r, c) in enumerate(b_loads):
        colour = _lane_colour(lane)
        _box(gb, c, r, 4, 1, fc=colour, ec="white", lw=0.8)
        if inside:
            _text(gb, c + 2, r + 0.5, str(lane), size=SMALL, color=_ink(colour))
        elif lane % 4 == 0 or lane == 31:  # then the warp fills one row: number it above
            _text(gb, c + 2, -0.1, str(lane), size=SMALL, va="bottom")
    shown = f"row 0 of {BK}" if b_rows == 1 else f"rows 0–{b_rows - 1} of {BK}"
    fig.text(
        0.03,
        0.16,
        f"B's tile, {shown}: each lane loads 4 floats of a row, stored to Bs as they are",
        fontsize=SMALL + 1,
    )
    a_each = BM * BK // (4 * threads)
    b_each = BK * BN // (4 * threads)
    lines = [
        f"A: {a_each} float4 loads",
        "  (4 k of one row)",
        f"  → {4 * a_each} scalar stores",
        f"B: {b_each} float4 loads",
        f"  → {b_each} float4 stores",
        "",
        "lane t's next float4 is",
        f"thread t + {threads}'s place",
        "below these",
    ]
    _counts(fig, 0.72, 0.84, "Each thread,\neach BK slice", ["", *lines], size=SMALL + 1)

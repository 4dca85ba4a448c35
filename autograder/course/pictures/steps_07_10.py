"""The pictures of steps 07 to 10: a block tile cut into warp tiles and every lane's
pieces (07); the timelines of double buffering (08) and of cp.async's slices in flight
(10); split-K filling the SMs a small C leaves idle (09).
"""

from __future__ import annotations

from matplotlib.colors import to_rgb
from matplotlib.patches import Rectangle

from autograder.ladder import registry

from .ink import (
    BLUE,
    GREY,
    SLICE_COLOURS,
    SMALL,
    TILE_GREY,
    VERMILLION,
    WIDTH,
    _arrow,
    _box,
    _ink,
    _lane_colour,
    _panel,
    _text,
)

# --- Steps 07, 08 and 10: warp tiles ------------------------------------------------


def _warp_shape(p):
    """WMITER, WSUBM, WSUBN as the kernels derive them (kernels/07_warptiling.cu)."""
    WMITER = registry.warp_m_iterations(p)
    return WMITER, p["WM"] // WMITER, p["WN"] // p["WNITER"]


def _warptiling(fig, step):
    p = step.params
    BM, BN, WM, WN, TM, TN, WNITER = (p[k] for k in ("BM", "BN", "WM", "WN", "TM", "TN", "WNITER"))
    WMITER, WSUBM, WSUBN = _warp_shape(p)
    per_row = WSUBN // TN  # thread tiles across a sub-tile: lane % per_row is the column
    fig.set_size_inches(WIDTH, 3.9)
    # Left: the block tile cut into warp tiles, numbered.
    bx = _panel(fig, (0.01, 0.14, 0.3, 0.7), (-1, BN + 1), (-1, BM + 1))
    warps_across = BN // WN
    for w in range((BM // WM) * warps_across):
        r, c = w // warps_across * WM, w % warps_across * WN
        _box(bx, c, r, WN, WM, fc=TILE_GREY if w == 0 else "white", lw=2 if w == 0 else 0.8)
        _text(bx, c + WN / 2, r + WM / 2, f"warp {w}" if WN >= 2 * WM else str(w), size=SMALL + 1)
    _box(bx, 0, 0, BN, BM, lw=1.5)
    _text(bx, BN / 2, BM + 2, f"block {BM}×{BN},\nwarp tiles {WM}×{WN}", va="top", size=SMALL + 1)
    # Right: warp 0's tile, its sub-tiles, every lane's TM x TN pieces.
    wx = _panel(fig, (0.36, 0.18, 0.62, 0.62), (-0.5, WN + 0.5), (-0.5, WM + 0.5))
    for wm in range(WMITER):
        for wn in range(WNITER):
            for lane in range(32):
                r = wm * WSUBM + lane // per_row * TM
                c = wn * WSUBN + lane % per_row * TN
                colour = _lane_colour(lane)
                _box(wx, c, r, TN, TM, fc=colour, ec="white", lw=0.6)
                _text(wx, c + TN / 2, r + TM / 2, str(lane), size=SMALL, color=_ink(colour))
            _box(wx, wn * WSUBN, wm * WSUBM, WSUBN, WSUBM, lw=1.5)
    # Lane 0's pieces, outlined: one thread, WMITER x WNITER tiles, WSUBM / WSUBN apart.
    for wm in range(WMITER):
        for wn in range(WNITER):
            _box(wx, wn * WSUBN, wm * WSUBM, TN, TM, ec=VERMILLION, lw=2.5)
    _text(
        wx,
        WN / 2,
        -0.8,
        f"warp 0: {WMITER}×{WNITER} sub-tiles of {WSUBM}×{WSUBN};\n"
        f"each lane owns one {TM}×{TN} piece of each",
        va="bottom",
        size=SMALL + 1,
    )
    _text(
        wx,
        WN / 2,
        WM + 0.8,
        f"lane 0 (outlined): {WMITER * WNITER * TM * TN} results;\n"
        f"per k, {WMITER * TM} + {WNITER * TN} floats from shared",
        va="top",
        size=SMALL + 1,
    )


def _timeline_axes(fig, rect, labels):
    """Axes for a timeline: one lane per label, top to bottom, time to the right."""
    ax = fig.add_axes(rect)
    ax.set_ylim(len(labels) - 0.4, -0.75)
    ax.set_yticks(range(len(labels)), labels, fontsize=SMALL + 1)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return ax


def _bar(ax, lane, start, length, colour, label=None, light=False):
    fc = tuple(0.55 + 0.45 * v for v in to_rgb(colour)) if light else colour
    ax.add_patch(
        Rectangle((start, lane - 0.35), length, 0.7, facecolor=fc, edgecolor="white", lw=0.6)
    )
    if label:
        _text(ax, start + length / 2, lane, label, size=SMALL, color=_ink(fc))


def _pipelining(fig, step):
    """A timeline of a few BK slices: what each thread loads while what is computed."""
    p = step.params
    BK = p["BK"]
    WMITER, _, _ = _warp_shape(p)
    fmas = WMITER * p["TM"] * p["WNITER"] * p["TN"]
    threads = step.geometry.threads
    loads = (p["BM"] + p["BN"]) * BK // (4 * threads)
    slices = 3
    fig.set_size_inches(WIDTH, 3.2)
    glob, stash, frag, fma = range(4)
    labels = [
        "global → registers\n(the next slice)",
        "registers → shared\n(the other buffer)",
        "shared → fragments\n(sets 0 and 1)",
        "FMAs",
    ]
    ax = _timeline_axes(fig, (0.21, 0.24, 0.77, 0.58), labels)

    def colour(s):
        return SLICE_COLOURS[s % len(SLICE_COLOURS)]

    # Before the loop: slice 0 into shared memory, its first fragments into registers.
    _text(ax, 3, -0.6, "start", va="bottom", size=SMALL + 1)
    _bar(ax, glob, 0, 5, colour(0), "slice 0", light=True)
    _bar(ax, stash, 5, 1, colour(0))
    ax.axvline(6, color="black", lw=1.2, ls="--")
    _bar(ax, frag, 6, 1, colour(0))
    t = 7
    for s in range(slices):
        more = s + 1 < slices
        _text(ax, t + BK / 2, -0.6, f"slice {s}, buffer {s % 2}", va="bottom", size=SMALL + 1)
        if more:  # issued first, used only after this slice's FMAs
            _bar(ax, glob, t, BK - 1, colour(s + 1), f"slice {s + 1}", light=True)
        for k in range(BK):
            if k + 1 < BK:  # the fragments of k + 1 load while the FMAs of k run
                _bar(ax, frag, t + k, 1, colour(s), light=k % 2 == 0)
            elif more:  # hand over: store the next slice, one barrier, its first fragments
                _bar(ax, stash, t + k, 1, colour(s + 1))
                ax.axvline(t + k + 1, color="black", lw=1.2, ls="--")
                _bar(ax, frag, t + k + 1, 1, colour(s + 1))
                t += 1
            _bar(ax, fma, t + k, 1, colour(s), light=k % 2 == 1)
        t += BK
    ax.set_xlim(-0.3, t + 0.3)
    ax.set_xlabel("time →", fontsize=SMALL + 1, loc="right")
    fig.text(
        0.02,
        0.02,
        f"One box: one k, {fmas} FMAs per thread; BK = {BK} per slice.  "
        "- - -  __syncthreads()\nDark, light: fragment sets 0, 1.  Each thread has "
        f"{loads} float4 loads in flight per slice.",
        fontsize=SMALL + 1,
    )


def _cp_async(fig, step):
    """A timeline of cp.async's slices in flight, STAGES buffers deep."""
    p = step.params
    STAGES, BM, BN, BK = p["STAGES"], p["BM"], p["BN"], p["BK"]
    threads = step.geometry.threads
    slices = STAGES + 2
    height = 1.9 + 0.5 * STAGES
    fig.set_size_inches(WIDTH, height)
    copies = STAGES - 1  # slices in flight, one lane each
    labels = ["cp.async:\nglobal → shared" if i == 0 else "" for i in range(copies)] + ["FMAs"]
    ax = _timeline_axes(fig, (0.2, 0.75 / height, 0.78, 1 - 1.3 / height), labels)
    length = 4  # one slice's FMAs, in the picture's time units
    # Before the loop, slices 0 to STAGES - 2 start together; then each
    # iteration waits for its slice, and starts the one STAGES - 1 ahead.
    start = {s: 0 for s in range(copies)}
    for s in range(slices):
        begin = (s + 1) * length
        start[s + copies] = begin
        colour = SLICE_COLOURS[s % len(SLICE_COLOURS)]
        _bar(ax, copies, begin, length, colour, f"on slice {s}\n(buffer {s % STAGES})")
        ax.axvline(begin, color="black", lw=1.2, ls="--", zorder=0.5)
        _bar(
            ax,
            s % copies,
            start[s],
            begin - start[s],
            colour,
            f"slice {s}\n→ buffer {s % STAGES}",
            light=True,
        )
    ax.set_xlim(-0.3, (slices + 1) * length + 0.3)
    a_copies, b_copies = BM * BK // threads, BK * BN // (4 * threads)
    ax.set_xlabel("time →", fontsize=SMALL + 1, loc="right")
    fig.text(
        0.02,
        0.02,
        f"- - -  wait for the oldest slice, then __syncthreads().  {STAGES} "
        f"buffers in shared memory.\nEach thread starts {a_copies} 4-byte copies of A and "
        f"{b_copies} 16-byte of B per slice, none through registers.",
        fontsize=SMALL + 1,
    )


# --- Step 09: choosing by shape -------------------------------------------------------

SHAPE_TILES = (2, 2)  # the example C, in tile rows and tile columns
SHAPE_SMS = 16  # the example GPU's SMs, drawn two rows of eight
SHAPE_K = 4096  # the example K: long enough to split


def _sm_row(ax, y, colours, per_row=8):
    """The example GPU's SMs from (0, y) on, per_row to a row: each coloured by the
    block it runs, or white where it has none."""
    for i, colour in enumerate(colours):
        x, row = i % per_row, i // per_row
        busy = colour is not None
        _box(
            ax,
            x + 0.1,
            y + row,
            0.8,
            0.8,
            fc=colour if busy else "white",
            ec="black" if busy else GREY,
        )
    _text(ax, -0.15, y + 0.9, "SMs", ha="right", size=SMALL + 1)


def _by_shape(fig, step):
    """A small C in 128 x 128 tiles leaves most SMs idle; split into S layers of K
    (as by_shape.rule_of_thumb splits it on the example GPU), every SM has a block,
    and step 09's kernel adds the layers up."""
    from autograder.run import by_shape

    tiles = by_shape.TILES[by_shape.MEASURE_TILES]
    BM, BN = tiles["BM"], tiles["BN"]
    rows, cols = SHAPE_TILES
    M, N, K = rows * BM, cols * BN, SHAPE_K
    count = by_shape.tile_count(M, N, by_shape.MEASURE_TILES)
    S = by_shape.rule_of_thumb(M, N, K, SHAPE_SMS).splits
    fig.set_size_inches(WIDTH, 3.9)
    T = 1.3  # a tile's side, in the units of an SM's box
    sms_y = rows * T + 2.7  # the first row of SMs
    ylim = (-1.2, sms_y + SHAPE_SMS / 8 + 0.2)

    def tiles_at(ax, x, y, colour, lw=1.0):
        for r in range(rows):
            for c in range(cols):
                _box(ax, x + c * T, y + r * T, T, T, fc=colour, lw=lw)

    # Left: step 08's grid, one block per tile.
    left = _panel(fig, (0.03, 0.13, 0.45, 0.74), (-1.2, 8.1), ylim)
    _text(left, 3.5, -1.1, "Step 08 alone: one layer", va="top", fontweight="bold", size=SMALL + 1)
    x0 = 4 - cols * T / 2
    tiles_at(left, x0, 0, BLUE)
    _text(left, 4, rows * T + 0.2, f"C: {count} tiles of {BM}×{BN}", va="top", size=SMALL + 1)
    _sm_row(left, sms_y, [BLUE] * count + [None] * (SHAPE_SMS - count))
    idle = SHAPE_SMS - count
    _text(left, 4, sms_y - 0.3, f"{count} blocks: {idle} SMs idle", va="bottom", size=SMALL + 1)
    # Right: S layers of partial products, each its own run of K, added into C.
    right = _panel(fig, (0.52, 0.13, 0.47, 0.74), (-1.2, 8.3), ylim)
    _text(
        right,
        3.6,
        -1.1,
        f"Split-K: K in S = {S} layers",
        va="top",
        fontweight="bold",
        size=SMALL + 1,
    )
    d = 0.3  # how far each layer lies behind the one in front
    for s in reversed(range(S)):
        tiles_at(right, s * d, (S - 1 - s) * d, SLICE_COLOURS[s % len(SLICE_COLOURS)])
    stack_w = cols * T + (S - 1) * d
    _text(
        right,
        stack_w / 2,
        rows * T + (S - 1) * d + 0.2,
        "partial[0 … S−1]",
        va="top",
        size=SMALL + 1,
    )
    cx = stack_w + 1.6
    mid = (S - 1) * d + rows * T / 2
    _arrow(right, (stack_w + 0.15, mid), (cx - 0.15, mid))
    _text(right, (stack_w + cx) / 2, mid - 0.25, "sum", va="bottom", size=SMALL)
    tiles_at(right, cx, (S - 1) * d, TILE_GREY, lw=1.5)
    _text(right, cx + cols * T / 2, rows * T + (S - 1) * d + 0.2, "C", va="top", size=SMALL + 1)
    layers = [SLICE_COLOURS[b // count % len(SLICE_COLOURS)] for b in range(count * S)]
    _sm_row(right, sms_y, (layers + [None] * SHAPE_SMS)[:SHAPE_SMS])
    busy = min(count * S, SHAPE_SMS)
    _text(
        right,
        4,
        sms_y - 0.3,
        f"{count} × {S} = {count * S} blocks: {busy} SMs busy",
        va="bottom",
        size=SMALL + 1,
    )
    fig.text(
        0.02,
        0.02,
        f"M = {M}, N = {N}, K = {K} on a GPU of {SHAPE_SMS} SMs. Layer s multiplies its own "
        f"run of K into partial[s];\nstep 09's kernel adds the layers: 2 × 4 × S × M × N "
        "more bytes written and read back.",
        fontsize=SMALL + 1,
    )

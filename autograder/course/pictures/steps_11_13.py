"""The pictures of steps 11 to 13: which lane holds which element of an mma.sync tile
(11); the warpgroups' share of a block tile and TMA's 128-byte swizzle (12), and the
pipeline over time; one FP32 number split into two TF32 numbers (13).
"""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg

from autograder.ladder import registry

from .ink import (
    BLUE,
    DPI,
    GREY,
    ORANGE,
    SKY,
    SLICE_COLOURS,
    SMALL,
    TEXT,
    TILE_GREY,
    WIDTH,
    _arrow,
    _box,
    _caption,
    _ink,
    _lane_colour,
    _panel,
    _plural,
    _text,
)
from .show import Picture

# --- Step 11: tensor cores ----------------------------------------------------------

MMA_M, MMA_N, MMA_K = 16, 8, 8  # the shape of one mma.sync (kernels/11_tensor_core_tf32.cu)


def _mma_lane(matrix: str, r: int, c: int) -> int:
    """The lane that holds element (r, c) of an m16n8k8 tile (the PTX manual's
    layout, quoted in kernels/11_tensor_core_tf32.cu): g = lane / 4, q = lane % 4."""
    if matrix == "A":  # A[g][q], A[g + 8][q], A[g][q + 4], A[g + 8][q + 4]
        return 4 * (r % 8) + c % 4
    if matrix == "B":  # B[q][g], B[q + 4][g]
        return 4 * c + r % 4
    return 4 * (r % 8) + c // 2  # C[g][2q], C[g][2q + 1], C[g + 8][2q], C[g + 8][2q + 1]


def _tensor_core(fig, step):
    """A warp tile cut into m16n8k8 tiles, and which lane holds which element of one."""
    p = step.params
    BM, BN, BK, WM, WN = p["BM"], p["BN"], p["BK"], p["WM"], p["WN"]
    M_TILES, N_TILES = WM // MMA_M, WN // MMA_N
    fig.set_size_inches(WIDTH, 4.6)
    wx = _panel(fig, (0.01, 0.42, 0.19, 0.4), (-1, WN + 1), (-1, WM + 1))
    for i in range(M_TILES):
        for j in range(N_TILES):
            first = i == j == 0
            _box(
                wx,
                j * MMA_N,
                i * MMA_M,
                MMA_N,
                MMA_M,
                fc=TILE_GREY if first else "white",
                lw=2 if first else 0.6,
            )
    _box(wx, 0, 0, WN, WM, lw=1.5)
    fig.text(
        0.01,
        0.4,
        f"warp tile {WM}×{WN}:\n{M_TILES}×{N_TILES} tiles of {MMA_M}×{MMA_N};\n"
        f"{BK // MMA_K} k-steps of {MMA_K}\nper slice; block\n{BM}×{BN}: "
        f"{(BM // WM) * (BN // WN)} warps;\nshaded: the tile\non the right",
        fontsize=SMALL + 1,
        va="top",
    )
    # Right: one mma.sync, A (16 x 8) x B (8 x 8) = C (16 x 8), every element's lane.
    gap = 2
    x_of = {"A": 0, "B": MMA_K + gap, "C": MMA_K + gap + MMA_N + gap}
    mx = _panel(fig, (0.22, 0.01, 0.77, 0.8), (-0.2, x_of["C"] + MMA_N + 0.2), (-1.6, MMA_M + 0.2))
    for matrix, rows, cols in (("A", MMA_M, MMA_K), ("B", MMA_K, MMA_N), ("C", MMA_M, MMA_N)):
        x, y = x_of[matrix], (MMA_M - rows) / 2
        for r in range(rows):
            for c in range(cols):
                lane = _mma_lane(matrix, r, c)
                colour = _lane_colour(lane)
                _box(mx, x + c, y + r, 1, 1, fc=colour, ec="white", lw=0.5)
                _text(mx, x + c + 0.5, y + r + 0.5, str(lane), size=SMALL, color=_ink(colour))
        _box(mx, x, y, cols, rows, lw=1.2)
        _text(mx, x + cols / 2, y - 0.3, f"{matrix}: {rows}×{cols}", va="bottom", size=SMALL + 1)
    _text(mx, MMA_K + gap / 2, MMA_M / 2, "×", size=18)
    _text(mx, x_of["C"] - gap / 2, MMA_M / 2, "→", size=18)
    fig.text(
        0.22,
        0.87,
        f"one mma.sync m{MMA_M}n{MMA_N}k{MMA_K}: {MMA_M * MMA_N * MMA_K} FMAs by "
        "one warp; each lane\nholds 4 values of A, 2 of B, 4 of C (the numbers: which lane)",
        fontsize=SMALL + 1,
        va="top",
    )


# --- Step 12: wgmma and TMA ---------------------------------------------------------

SWIZZLE_ROWS, SWIZZLE_CHUNKS = 8, 8  # a 1024-byte block: 8 rows of 8 chunks of 16 bytes


def _wgmma(fig, step):
    """The block tile as the warpgroups share it, and the 128-byte swizzle TMA writes
    and wgmma reads (kernels/12_wgmma_tf32.cu)."""
    BM, BK, BN = step.params["BM"], registry.WGMMA_BK, step.params["BN"]
    consumers = BN // 64
    fig.set_size_inches(WIDTH, 4.6)
    # Left: C's block tile, BM rows x BN columns, a column strip per consumer warpgroup.
    left = _panel(fig, (0.02, 0.03, 0.3, 0.63), (-1, BN + 1), (-4, BM + 1))
    for c in range(consumers):
        colour = SLICE_COLOURS[c % len(SLICE_COLOURS)]
        _box(left, 64 * c, 0, 64, BM, fc=colour, lw=1)
        _text(left, 64 * c + 32, BM / 2, f"warp-\ngroup {c + 1}", size=SMALL + 1)
    _box(left, 0, 0, BN, BM, lw=1.5)
    _text(left, BN / 2, -3, f"block tile of C: {BM}×{BN}", va="bottom", size=SMALL + 1)
    fig.text(
        0.02,
        0.9,
        f"Each consumer warpgroup owns 64 columns of C; one wgmma adds a\n"
        f"64-column × {BM}-row × 8 product ({64 * BM * 8:,} FMAs) to them. "
        f"A slice is {BK} of k:\n{BK // 8} wgmmas per warpgroup, fed by one TMA copy of A "
        f"and {BN // 32} of B.",
        fontsize=SMALL + 1,
        va="top",
    )
    # Right: which 16-byte chunk of a row lands where: chunk c of row r at c ^ (r % 8).
    right = _panel(fig, (0.4, 0.03, 0.58, 0.63), (-1.6, SWIZZLE_CHUNKS + 0.2), (-1.2, 8.4))
    for r in range(SWIZZLE_ROWS):
        for c in range(SWIZZLE_CHUNKS):
            placed = c ^ r
            colour = _lane_colour(4 * c)
            _box(right, placed, r, 1, 1, fc=colour, ec="white", lw=0.8)
            _text(right, placed + 0.5, r + 0.5, str(c), size=SMALL, color=_ink(colour))
        _text(right, -0.2, r + 0.5, f"row {r}", ha="right", size=SMALL)
    _box(right, 0, 0, SWIZZLE_CHUNKS, SWIZZLE_ROWS, lw=1.2)
    _text(
        right,
        SWIZZLE_CHUNKS / 2,
        -0.2,
        "a 1024-byte block of shared memory:\nchunk c (4 floats) of row r sits at c XOR r",
        va="bottom",
        size=SMALL + 1,
    )


# --- Step 13: 3xTF32 -------------------------------------------------------------

MANTISSA, TF32_BITS = 23, 10  # FP32's stored mantissa bits, and the ones TF32 keeps


def _split(fig, step):
    """One FP32 number split into two TF32 numbers, and the three wgmmas that
    multiply the parts (kernels/13_wgmma_3xtf32.cu)."""
    fig.set_size_inches(WIDTH, 3.3)
    # Top: the mantissa bits each part holds.
    top = _panel(fig, (0.03, 0.52, 0.94, 0.3), (-9.5, MANTISSA + 0.5), (-1.6, 2.6))
    parts = (
        (0, TF32_BITS, BLUE, "big = tf32(x): the first 10"),
        (TF32_BITS, TF32_BITS + 1, ORANGE, "small = tf32(x − big): the next 11"),
        (2 * TF32_BITS + 1, MANTISSA - 2 * TF32_BITS - 1, GREY, ""),
    )
    _box(top, -9, 0, 1, 1, fc=GREY)
    _text(top, -8.5, 0.5, "s", size=SMALL)
    _box(top, -8, 0, 8, 1, fc=SKY)
    _text(top, -4, 0.5, "exponent: 8 bits", size=SMALL)
    for first, count, colour, label in parts:
        for b in range(first, first + count):
            _box(top, b, 0, 1, 1, fc=colour, ec="white", lw=0.8)
        _box(top, first, 0, count, 1, lw=1)
        _caption(top, first + count / 2, 1.2, label)
    _text(top, 0, -0.3, "FP32 x: 23 mantissa bits", ha="left", va="bottom", size=SMALL + 1)
    _text(top, MANTISSA, -0.3, "the last 2: rounded into small", ha="right", va="bottom",
          size=SMALL + 1)  # fmt: skip
    # Bottom: the sum of products, as the consumers issue it.
    terms = (
        ("big_a · small_b", ORANGE),
        ("small_a · big_b", ORANGE),
        ("big_a · big_b", BLUE),
    )
    fig.text(0.03, 0.33, "a · b ≈", fontsize=TEXT, va="center")
    for i, (term, colour) in enumerate(terms):
        x = 0.15 + 0.22 * i
        fig.text(x + 0.1, 0.33, term, fontsize=TEXT, ha="center", va="center",
                 bbox={"facecolor": colour, "alpha": 0.35, "edgecolor": "black"})  # fmt: skip
        if i < len(terms) - 1:
            fig.text(x + 0.21, 0.33, "+", fontsize=TEXT, ha="center", va="center")
    p = step.params
    slice_kb = (step.geometry.shared_bytes - 1024) // p["STAGES"] // 1024
    fig.text(
        0.03,
        0.2,
        "Three wgmmas where step 12 issued one, small terms first; small_a · small_b,\n"
        "at most 2⁻²² of |a b|, is left out. The producer splits A's slices in shared\n"
        f"memory ({slice_kb} KB a slice with the small parts: {p['STAGES']} in flight), "
        f"the {_plural(p['BN'] // 64, 'consumer')}\nsplit B's fragments as they load them.",
        fontsize=SMALL + 1,
        va="top",
    )


# The timeline's model (a schematic, not a measurement): one consumer warpgroup's
# wgmmas on one slice take a unit of time, and a TMA copy COPY_UNITS units from
# being asked for to landing.
COPY_UNITS, TIMELINE_SLICES = 3, 10


def pipeline_schedule(stages: int, consumers: int):
    """When each slice's copy is asked for and lands, and when each consumer's wgmmas on
    it run, in the model above: the tensor cores take the consumers' bursts in turn; a
    slice's burst waits for its copy (full[s]); slice t's copy waits until every
    consumer is done with slice t - stages, whose buffer it reuses (empty[s])."""
    asked, landed, bursts = [], [], []
    free = 0.0  # when the tensor cores are next free
    for t in range(TIMELINE_SLICES):
        asked.append(0.0 if t < stages else bursts[t - stages][-1][1])
        landed.append(asked[t] + COPY_UNITS)
        runs = []
        for _ in range(consumers):
            start = max(free, landed[t])
            runs.append((start, start + 1))
            free = start + 1
        bursts.append(runs)
    return asked, landed, bursts


def timeline(step_id: str | registry.Step = "12") -> Picture:
    """Step 12's pipeline over time (or a Step's, such as step 12 at other parameters),
    as a schematic: the producer asks for each slice, the copy engine brings it, the
    consumer warpgroups multiply it in turn, and the barriers hand each of the STAGES
    buffers back and forth."""
    step = step_id if isinstance(step_id, registry.Step) else registry.step(step_id)
    stages, consumers = step.params["STAGES"], step.params["BN"] // 64
    asked, landed, bursts = pipeline_schedule(stages, consumers)
    end = bursts[-1][-1][1]
    fig = Picture(figsize=(WIDTH, 3.6), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = _panel(fig, (0.17, 0.2, 0.81, 0.62), (-0.2, end + 0.2), (-0.2, 3 + consumers + 0.2))
    ax.set_aspect("auto")
    names = ["producer", "copy engine"] + [f"consumer {c + 1}" for c in range(consumers)]
    for row, name in enumerate(names):
        fig.text(0.16, 0.82 - 0.62 * (row + 0.6) / (3 + consumers), name, ha="right",
                 va="center", fontsize=SMALL + 1)  # fmt: skip
    for t in range(TIMELINE_SLICES):
        colour = SLICE_COLOURS[t % len(SLICE_COLOURS)]
        _box(ax, asked[t], 0.15, 0.12, 0.7, fc=colour, lw=0.6)
        _box(ax, asked[t], 1.15 + 0.1 * (t % stages), COPY_UNITS, 0.3, fc=colour, lw=0.4)
        for c, (start, stop) in enumerate(bursts[t]):
            _box(ax, start, 2.15 + c, stop - start, 0.7, fc=colour, lw=0.6)
            _text(ax, (start + stop) / 2, 2.5 + c, str(t), size=SMALL, color=_ink(colour))
    _arrow(ax, (0, 2.1 + consumers), (end, 2.1 + consumers), lw=0.8)
    _text(ax, end, 2.35 + consumers, "time", ha="right", va="top", size=SMALL + 1)
    fig.text(
        0.02,
        0.02,
        f"Slices 0…{TIMELINE_SLICES - 1}, {stages} buffers (a schematic: a copy takes "
        f"{COPY_UNITS} bursts). A copy lands: full[t % {stages}]\nlets the consumers "
        f"start; all are done with slice t: empty[t % {stages}] lets the producer ask "
        f"for t + {stages}.",
        fontsize=SMALL + 1,
    )
    fig.suptitle(f"Step {step.id}: the pipeline over time", fontsize=13, fontweight="bold")
    return fig

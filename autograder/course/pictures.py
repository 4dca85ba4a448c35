"""A picture of every step of the ladder: which thread touches what, and how often.
The book draws them, and the exercises' explorers redraw them for the parameters a
learner chooses.

`picture("05")` draws step 05's one idea. Every size in it comes from the
registry (autograder/ladder/registry.py): the step's template parameters and its
launch geometry, so a tuned parameter set redraws it. The only numbers typed in
here are the small example problems the pictures are drawn on (how many blocks
of C, how long K is) and which thread or k they pick to show.

    python -m autograder.course.pictures /tmp/pictures     # every picture as a PNG
"""

from __future__ import annotations

import io
import itertools
import sys
from collections.abc import Callable

import matplotlib
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.transforms import ScaledTranslation

from autograder.ladder import registry

# Okabe and Ito's palette: told apart with every common kind of colour blindness.
BLUE, ORANGE, SKY, GREEN = "#0072B2", "#E69F00", "#56B4E9", "#009E73"
VERMILLION, PURPLE, GREY = "#D55E00", "#CC79A7", "#BBBBBB"
TILE_GREY = "#EEEEEE"  # the background of a tile
# Lanes of a warp: cividis, a ramp read the same with and without colour vision.
LANE_MAP = matplotlib.colormaps["cividis"]
# The book's column is 676 px wide; at 100 dpi a figure 6.76 in wide fills it.
WIDTH, DPI = 6.76, 100
TEXT = 10  # points: names of matrices and headings
SMALL = 8  # points: numbers inside cells, the smallest size used at all (sentences: 9)


# --- How a picture shows itself -----------------------------------------------------


class Picture(Figure):
    """A step's picture: a Figure that pyplot does not hold, which a notebook shows as
    the value of its cell, as a PNG written by `png`."""

    def _ipython_display_(self):
        from IPython.display import Image, display

        display(Image(png(self)))


def smallest_text(fig: Figure) -> float:
    """The font size, in points, of the smallest text drawn on fig (0 where it has none)."""
    from matplotlib.text import Text

    fig.draw_without_rendering()  # tick labels get their text when they are drawn
    sizes = [
        t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
    ]
    return min(sizes, default=0)


def png(fig: Figure) -> bytes:
    """fig as a PNG, cropped to what is drawn, that says in its metadata (min-text-px)
    the size of its smallest text in the image's pixels: book/look.py scales it by how
    wide a browser shows the image, to check the reader can read it."""
    dpi = fig.dpi
    out = io.BytesIO()
    fig.savefig(
        out,
        format="png",
        dpi=dpi,
        bbox_inches="tight",
        metadata={"min-text-px": f"{smallest_text(fig) * dpi / 72:.2f}"},
    )
    return out.getvalue()


def picture(step_id: str | registry.Step) -> Picture:
    """Draw the picture of a step (an id such as "05", a name, or a Step, for
    instance a tuned `registry.step("05").with_params(TM=4)`) on a Figure of its own,
    which a notebook shows as its cell's value. pyplot never holds it: an explorer
    draws it in a widget's callback, which JupyterLab 4.4+ with ipykernel 7 runs on a
    thread beside the cell being run (jupyterlab/jupyterlab#19719), and a figure that
    pyplot held could then be shown half drawn at that cell's end."""
    step = step_id if isinstance(step_id, registry.Step) else registry.step(step_id)
    draw = DRAWINGS.get(step.slug)
    if draw is None:
        raise KeyError(
            f"step {step.name} has no picture: add a function that draws it to "
            "DRAWINGS in autograder/course/pictures.py"
        )
    fig = Picture(figsize=(WIDTH, 4), dpi=DPI)
    FigureCanvasAgg(fig)  # what draws it, as pyplot would give it
    draw(fig, step)
    fig.suptitle(f"Step {step.id}: {step.title}", fontsize=13, fontweight="bold")
    return fig


# --- Drawing helpers: matrices are drawn with rows going down, one unit per element --


def _panel(fig, rect, xlim, ylim) -> Axes:
    """Axes at rect (figure fractions) in element units, y growing downwards."""
    ax = fig.add_axes(rect)
    ax.set_xlim(*xlim)
    ax.set_ylim(ylim[1], ylim[0])
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _box(ax, x, y, w, h, fc="none", ec="black", lw=1.0, **kw) -> Rectangle:
    """A rectangle w columns wide and h rows tall whose top-left corner is column x, row y."""
    return ax.add_patch(Rectangle((x, y), w, h, facecolor=fc, edgecolor=ec, lw=lw, **kw))


def _grid(ax, x, y, rows, cols, row_step, col_step, colour=GREY, lw=0.6):
    """Lines every row_step rows and col_step columns inside a rows x cols matrix."""
    for r in range(row_step, rows, row_step):
        ax.plot([x, x + cols], [y + r, y + r], color=colour, lw=lw)
    for c in range(col_step, cols, col_step):
        ax.plot([x + c, x + c], [y, y + rows], color=colour, lw=lw)


def _text(ax, x, y, s, size=TEXT, **kw):
    kw.setdefault("ha", "center")
    kw.setdefault("va", "center")
    return ax.text(x, y, s, fontsize=size, **kw)


def _caption(ax, x, y, s, **kw):
    """Words under a tile, hanging from y."""
    return _text(ax, x, y, s, va="top", size=SMALL + 1, **kw)


def _below(text, s, colour):
    """A line of words in colour, naming what is drawn in that colour, under a text."""
    lines = text.get_text().count("\n") + 1
    drop = lines * text.get_fontsize() * 1.2 / 72  # matplotlib's line spacing, in inches
    move = ScaledTranslation(0, -drop, text.get_figure(root=True).dpi_scale_trans)
    x, y = text.get_position()
    where = text.axes or text.get_figure(root=True)
    return where.text(
        x, y, s, transform=text.get_transform() + move, fontsize=text.get_fontsize(),
        ha=text.get_horizontalalignment(), va="top", color=colour, fontweight="bold",
    )  # fmt: skip


def _arrow(ax, start, end, colour="black", lw=1.2, style="-|>"):
    ax.annotate(
        "", xy=end, xytext=start, arrowprops={"arrowstyle": style, "color": colour, "lw": lw}
    )


def _lane_colour(lane: int, lanes: int = 32):
    return LANE_MAP(lane / max(lanes - 1, 1))


def _ink(colour) -> str:
    """Black or white, whichever reads on colour."""
    r, g, b = to_rgb(colour)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _counts(where, x, y, title, lines, size=TEXT):
    """A block of per-thread counts at (x, y) of an Axes (data units) or a Figure
    (fractions): a bold heading, then one line per count."""
    base = where.transData if isinstance(where, Axes) else where.transFigure
    below = base + ScaledTranslation(0, -1.5 * size / 72, where.figure.dpi_scale_trans)
    kw = {"fontsize": size, "ha": "left", "va": "top"}
    where.text(x, y, title, transform=base, fontweight="bold", **kw)
    return where.text(x, y, "\n".join(lines), transform=below, linespacing=1.45, **kw)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


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


SLICE_COLOURS = (BLUE, ORANGE, GREEN, PURPLE, VERMILLION, SKY)


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
    BM, BK, BN = registry.WGMMA_BM, registry.WGMMA_BK, step.params["BN"]
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


# Every step's picture, by slug (tests/test_pictures.py checks that none is missing).
DRAWINGS: dict[str, Callable[[Figure, registry.Step], None]] = {
    "cpu_triple_loop": _cpu_triple_loop,
    "naive": _one_thread_per_element,
    "coalescing": _one_thread_per_element,
    "smem_tiling": _smem_tiling,
    "blocktiling_1d": _register_blocking,
    "blocktiling_2d": _register_blocking,
    "vectorized": _vectorized,
    "warptiling": _warptiling,
    "pipelining": _pipelining,
    "cp_async": _cp_async,
    "by_shape": _by_shape,
    "tensor_core_tf32": _tensor_core,
    "wgmma_tf32": _wgmma,
    "wgmma_3xtf32": _split,
}


def main(argv: list[str]) -> None:
    """Write every step's picture to DIR/NN_slug.png."""
    from pathlib import Path

    out = Path(argv[0] if argv else "pictures")
    out.mkdir(parents=True, exist_ok=True)
    for step in registry.ALL_STEPS:
        (out / f"{step.name}.png").write_bytes(png(picture(step)))
        print(out / f"{step.name}.png")


if __name__ == "__main__":
    main(sys.argv[1:])

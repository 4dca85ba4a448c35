"""The ink every picture is drawn with: the palette (Okabe and Ito's colours, cividis for a
warp's lanes), the sizes of the book's column and of text, and the drawing primitives:
panels in element units with rows going down, boxes, grids, words, arrows, counts.
"""

from __future__ import annotations

import matplotlib
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.patches import Rectangle
from matplotlib.transforms import ScaledTranslation

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


# Slices of K in turn, and split-K's layers and wgmma's warpgroups: one colour each.
SLICE_COLOURS = (BLUE, ORANGE, GREEN, PURPLE, VERMILLION, SKY)


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

"""A step's picture as a Figure of its own (Picture), and how it shows itself: as a PNG
cropped to what is drawn, which records the size of its smallest text for book/look.py.
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure

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

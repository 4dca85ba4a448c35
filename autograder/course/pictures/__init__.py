"""A picture of every step of the ladder: which thread touches what, and how often.
The book draws them, and the exercises' explorers redraw them for the parameters a
learner chooses.

`picture("05")` draws step 05's one idea. Every size in it comes from the
registry (autograder/ladder/registry.py): the step's template parameters and its
launch geometry, so a tuned parameter set redraws it. The only numbers typed in
here are the small example problems the pictures are drawn on (how many blocks
of C, how long K is) and which thread or k they pick to show.

    python -m autograder.course.pictures /tmp/pictures     # every picture as a PNG

Here: `picture` and the drawings it picks from (DRAWINGS). Beside it: show (the Picture
type and its PNG), ink (colours, sizes and drawing primitives), and the drawings of steps
00-03, 04-06, 07-10 and 11-13 (steps_00_03 ... steps_11_13, the last with step 12's
pipeline `timeline`); __main__ is the command above.
"""

from __future__ import annotations

from collections.abc import Callable

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from autograder.ladder import registry

from .ink import (
    BLUE, DPI, GREEN, GREY, LANE_MAP, ORANGE, PURPLE, SKY, SMALL, TEXT, TILE_GREY, VERMILLION, WIDTH,
)  # fmt: skip
from .show import Picture, png, smallest_text
from .steps_00_03 import _cpu_triple_loop, _one_thread_per_element, _smem_tiling
from .steps_04_06 import _register_blocking, _vectorized
from .steps_07_10 import _by_shape, _cp_async, _pipelining, _warptiling
from .steps_11_13 import _split, _tensor_core, _wgmma, pipeline_schedule, timeline

# What the book, the explorers and the tests use.
__all__ = [
    "BLUE", "DPI", "DRAWINGS", "GREEN", "GREY", "LANE_MAP", "ORANGE", "PURPLE", "SKY", "SMALL",
    "TEXT", "TILE_GREY", "VERMILLION", "WIDTH",
    "Picture", "picture", "pipeline_schedule", "png", "smallest_text", "timeline",
]  # fmt: skip


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
            "DRAWINGS in autograder/course/pictures/__init__.py"
        )
    fig = Picture(figsize=(WIDTH, 4), dpi=DPI)
    FigureCanvasAgg(fig)  # what draws it, as pyplot would give it
    draw(fig, step)
    fig.suptitle(f"Step {step.id}: {step.title}", fontsize=13, fontweight="bold")
    return fig


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

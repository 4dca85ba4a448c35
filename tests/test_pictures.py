"""The pictures of the ladder (autograder/course/pictures/): every step has one, each
draws on the CPU and fits the book's column, and each is drawn from the step's
registry parameters and launch geometry, not from sizes typed into the picture."""

from dataclasses import replace

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from autograder.course import pictures
from autograder.ladder import registry

matplotlib.use("Agg")  # no display, no GPU: what the book's build has

STEPS = registry.ALL_STEPS  # the ladder, step 00 included, and the bonus steps

# For each step with parameters, a change its kernel accepts (its tuning rules
# say so where it has them): the picture must come out different.
RETUNED = {
    "03": {"BS": 16},
    "04": {"TM": 8},
    "05": {"TM": 4},
    "06": {"TM": 4},
    "07": {"WM": 64},
    "08": {"BM": 128},
    "10": {"STAGES": 3},
    "11": {"WM": 32},
    "12": {"BN": 64},
    "13": {"BN": 64},
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def drawn(fig: Figure, title: bool = True) -> list:
    """What a picture shows, comparable between two drawings: every rectangle
    (place, size, colour), every line, every piece of text."""
    shown = []
    for ax in fig.axes:
        for p in ax.patches:
            if isinstance(p, Rectangle):
                box = (p.get_x(), p.get_y(), p.get_width(), p.get_height())
                shown.append(("box", *(round(v, 3) for v in box), p.get_facecolor()))
        for line in ax.lines:
            shown.append(("line", tuple(map(tuple, line.get_xydata().round(3)))))
        shown += [("text", t.get_text()) for t in ax.texts]
        if ax.axison:  # the timelines name their lanes on the y axis
            shown += [("tick", t.get_text()) for t in ax.get_yticklabels()]
    shown += [("text", t.get_text()) for t in fig.texts if title or t is not fig._suptitle]
    return sorted(shown, key=repr)


def texts(fig: Figure) -> list:
    """Every piece of text in a picture that is drawn."""
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_text() and t.get_visible()]


def test_every_step_has_a_picture():
    missing = [s.name for s in STEPS if s.slug not in pictures.DRAWINGS]
    assert not missing, (
        f"no picture for {', '.join(missing)}: add a function that draws it to "
        "DRAWINGS in autograder/course/pictures/__init__.py"
    )
    stale = set(pictures.DRAWINGS) - {s.slug for s in STEPS}
    assert not stale, f"pictures of steps the registry no longer has: {sorted(stale)}"


def test_a_step_without_a_picture_is_refused_by_name():
    new = replace(registry.step("05"), id="12", slug="new_idea")
    with pytest.raises(KeyError, match="12_new_idea has no picture"):
        pictures.picture(new)


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.name)
def test_every_picture_draws_on_the_cpu_titled_with_its_step(step):
    fig = pictures.picture(step.id)
    assert isinstance(fig, Figure)
    fig.canvas.draw()  # renders every artist with Agg: no GPU, no display
    assert fig._suptitle.get_text() == f"Step {step.id}: {step.title}"
    assert len(fig.axes) >= 1 and any(ax.patches for ax in fig.axes), "nothing drawn"


@pytest.mark.parametrize("step", STEPS, ids=lambda s: s.name)
def test_every_picture_fits_the_books_676_px_column(step):
    fig = pictures.picture(step.id)
    width, height = fig.get_size_inches() * pictures.DPI
    assert width <= 676 + 1, f"{width:.0f} px wide"
    assert 250 <= height <= 500, f"{height:.0f} px tall: a few hundred px, a phone's screen"


@pytest.mark.parametrize(
    "step",
    [pytest.param(s, id=s.name) for s in STEPS]
    + [
        pytest.param(
            registry.step(i).with_params(**p),
            id=f"{i}-" + "-".join(f"{k}{v}" for k, v in p.items()),
        )
        for i, p in RETUNED.items()
    ],
)
def test_no_label_is_cut_off_or_too_small_to_read(step):
    fig = pictures.picture(step)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    for t in texts(fig):
        assert t.get_fontsize() >= pictures.SMALL, f"{t.get_text()!r}: {t.get_fontsize()} pt"
        box = t.get_window_extent(renderer)
        inside = (
            box.x0 >= page.x0 - 1
            and box.x1 <= page.x1 + 1
            and box.y0 >= page.y0 - 1
            and box.y1 <= page.y1 + 1
        )
        assert inside, f"{t.get_text()!r} runs off the picture ({box.bounds}, page {page.bounds})"


def test_the_pipeline_timeline_draws_readably_and_never_lets_a_consumer_start_early():
    fig = pictures.timeline("12")
    width, height = fig.get_size_inches() * pictures.DPI
    assert width <= 676 + 1 and 250 <= height <= 500
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for t in texts(fig):
        assert t.get_fontsize() >= pictures.SMALL, t.get_text()
        box = t.get_window_extent(renderer)
        assert fig.bbox.x0 - 1 <= box.x0 and box.x1 <= fig.bbox.x1 + 1, t.get_text()
    stages = registry.step("12").params["STAGES"]
    asked, landed, bursts = pictures.pipeline_schedule(stages, 2)
    for t, runs in enumerate(bursts):
        assert all(start >= landed[t] for start, _ in runs)  # full[s]: the copy has landed
        if t >= stages:  # empty[s]: every consumer is done with the buffer's last slice
            assert asked[t] >= max(stop for _, stop in bursts[t - stages])


def test_every_step_with_parameters_has_a_retuning_to_check():
    assert set(RETUNED) == {s.id for s in STEPS if s.params}


@pytest.mark.parametrize("step_id", sorted(RETUNED))
def test_retuned_parameters_redraw_the_picture(step_id):
    step = registry.step(step_id)
    tuned = step.with_params(**RETUNED[step_id])
    if step.tuning:
        assert step.tuning.rules(tuned.params) == [], "the change must be one the kernel accepts"
    before = drawn(pictures.picture(step))
    after = drawn(pictures.picture(tuned))
    assert before != after, f"step {step_id}'s picture ignores {RETUNED[step_id]}"


def test_naive_and_coalescing_pictures_differ_only_by_the_registrys_rows_on():
    naive, coalescing = registry.step("01"), registry.step("02")
    assert naive.geometry.rows_on != coalescing.geometry.rows_on
    swapped = replace(naive, layout=coalescing.layout)
    assert drawn(pictures.picture(swapped), title=False) == drawn(
        pictures.picture(coalescing), title=False
    )
    assert drawn(pictures.picture(naive), title=False) != drawn(
        pictures.picture(coalescing), title=False
    )


def test_naive_warp_reads_a_in_32_sectors_and_coalesced_warp_reads_b_in_4():
    said = {
        step_id: " ".join(t.get_text() for t in texts(pictures.picture(step_id)))
        for step_id in ("01", "02")
    }
    assert "A: 32 floats, 16 apart: 32 sectors" in said["01"]
    assert "B: 1 float for all 32 lanes: 1 sector" in said["01"]
    assert "A: 1 float for all 32 lanes: 1 sector" in said["02"]
    assert "B: 32 floats in a row: 4 sectors" in said["02"]


def test_warptiling_picture_numbers_each_lane_once_per_sub_tile():
    """kernels/07_warptiling.cu: WMITER = WM * WN / (32 * TM * TN * WNITER); each of
    the 32 lanes owns one TM x TN piece of each of the WMITER x WNITER sub-tiles."""
    for params in ({}, RETUNED["07"]):
        step = registry.step("07").with_params(**params)
        p = step.params
        wmiter = p["WM"] * p["WN"] // (32 * p["TM"] * p["TN"] * p["WNITER"])
        fig = pictures.picture(step)
        numbers = [t.get_text() for t in fig.axes[1].texts if t.get_text().isdigit()]
        pieces = wmiter * p["WNITER"]
        assert sorted(numbers) == sorted(str(lane) for lane in range(32) for _ in range(pieces))


def test_a_picture_is_drawn_beside_pyplot_and_shown_once_as_its_cells_value(monkeypatch):
    """An explorer draws pictures on a widget's thread while a cell may be running:
    pyplot, whose figures a cell's end shows, must never hold one (a half-drawn picture
    was seen so in JupyterLab 4.6 with ipykernel 7)."""
    display = pytest.importorskip("IPython.display")
    shown = []
    monkeypatch.setattr(display, "display", shown.append)
    before = plt.get_fignums()
    fig = pictures.picture("05")
    assert plt.get_fignums() == before and shown == []
    fig._ipython_display_()  # what IPython does with a cell's value
    (image,) = shown
    assert b"min-text-px" in image.data  # book/look.py reads the size of its smallest text

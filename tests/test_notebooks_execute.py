"""Every exercise notebook runs top to bottom as a learner would run it (here:
no GPU, so the CPU backend): the setup cell, the check cell; untouched stubs
say "not implemented yet"; solutions pass every correctness test. Run with the
interpreter of a Colab-like environment too (see .ci/run), so the widgets are
proven with ipywidgets 7 and 8.

The explorer cell is tagged skip-execution (see notebooks._explorer_cell), so
each explorer widget is built here directly instead.
"""

import pytest

from autograder.course.assignments import ASSIGNMENTS
from autograder.course.notebooks import ROOT, cell_text, execute_and_score
from autograder.ladder import registry

pytest.importorskip("nbclient", reason="nbclient is not installed")
NAMES = [a.name for a in ASSIGNMENTS]


def errors(nb, grade_id: str) -> list:
    cell = next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == grade_id)
    return [o for o in cell.outputs if o.output_type == "error"]


def run(folder: str, name: str, tmp_path):
    """Execute a copy (the check cells write kernel files next to the notebook)."""
    copy = tmp_path / f"{name}.ipynb"
    copy.write_text((ROOT / folder / name / f"{name}.ipynb").read_text())
    return execute_and_score(copy)


@pytest.mark.parametrize("name", NAMES)
def test_learner_notebook_runs_and_every_stub_says_not_implemented_yet(name, tmp_path):
    nb, scores = run("exercises", name, tmp_path)
    assert not errors(nb, "setup"), cell_text(nb, "setup")
    assert "not implemented yet" in cell_text(nb, "check")
    for grade_id, (earned, _, error) in scores.items():
        if not error:  # the hidden tests are blank in a learner's copy
            continue
        assert earned == 0
        assert "not implemented yet" in error or "needs a GPU" in error, (grade_id, error)
        # The grader's message alone, as nbgrader records it: no traceback through autograder.
        (shown,) = errors(nb, grade_id)
        assert shown.traceback == [error], shown.traceback


@pytest.mark.parametrize("name", NAMES)
def test_explorer_widget_builds(name):
    import matplotlib

    matplotlib.use("Agg")
    ipywidgets = pytest.importorskip("ipywidgets")
    from autograder.course import explorers

    assert isinstance(explorers.explorer_for(name), ipywidgets.Widget)


@pytest.mark.parametrize("name", NAMES)
def test_solution_notebook_earns_every_correctness_point(name, tmp_path):
    nb, scores = run("solutions", name, tmp_path)
    for grade_id, (earned, points, error) in scores.items():
        if grade_id == "test_fast_enough" and "needs a GPU" in error:
            continue  # scores zero on a machine without a GPU, by design
        assert earned == points, (grade_id, error)
    if registry.step(name).is_cuda:
        assert "PASSED" in cell_text(nb, "check"), cell_text(nb, "check")

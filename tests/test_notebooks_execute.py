"""Every exercise notebook runs top to bottom as a learner would run it, copied alone into
an empty folder (here: no GPU, so the CPU backend): the setup cell, the check cell; untouched stubs
say "not implemented yet"; solutions pass every correctness test, and run
headless without an error (the speed test scores zero and says why, on
stderr, as nbgrader counts a failure), so `jupyter nbconvert --execute`
exits 0 for right work and 1 for a stub. Run with the
interpreter of a Colab-like environment too (see .ci/run), so the widgets are
proven with ipywidgets 7 and 8.

The explorer cell is tagged skip-execution (see notebooks._explorer_cell), so
each explorer widget is built here directly instead.
"""

import functools
import os
import shutil
import subprocess
import sys

import pytest

from autograder.course.assignments import ASSIGNMENTS
from autograder.course.notebooks import ROOT, cell_text, execute_and_score
from autograder.ladder import registry
from autograder.run import compiler

pytest.importorskip("nbclient", reason="nbclient is not installed")
nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed")
NAMES = [a.name for a in ASSIGNMENTS]


def _nvrtc_here() -> bool:
    """Whether this environment compiles without a GPU (Colab's may not: no bindings)."""
    try:
        compiler.nvrtc_version()
    except compiler.NvrtcUnavailable:
        return False
    return True


# Where a step's kernel cannot run, its notebook compiles it for its GPU, and so shows
# the stub, when NVRTC's bindings are here; else it says they are missing.
NOT_COMPILED = "not compiled here either: compiling without a GPU needs NVRTC's Python bindings"


def errors_in(cell) -> list:
    return [o for o in cell.get("outputs", []) if o.output_type == "error"]


def errors(nb, grade_id: str) -> list:
    return errors_in(next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == grade_id))


# A notebook's kernel as a learner's: without the PYTHONPATH that lets these tests import
# the checkout. Where the course is installed (requirements.txt: `-e .`) the setup cell
# imports it; where it is not (the Colab-like run of .ci/run), it unpacks its own copy.
ALONE = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


@functools.cache
def course_installed() -> bool:
    """Whether a learner's kernel here imports the course without the copy it carries."""
    found = subprocess.run(
        [sys.executable, "-c", "import autograder"], env=ALONE, cwd="/", capture_output=True
    )
    return found.returncode == 0


def run(folder: str, name: str, tmp_path):
    """Execute a copy alone in an empty folder outside the repository (the check cells
    write kernel files next to the notebook)."""
    copy = tmp_path / f"{name}.ipynb"
    copy.write_text((ROOT / folder / name / f"{name}.ipynb").read_text())
    return execute_and_score(copy, env=ALONE)


@pytest.mark.parametrize("name", NAMES)
def test_learner_notebook_runs_and_every_stub_says_not_implemented_yet(name, tmp_path):
    nb, scores = run("exercises", name, tmp_path)
    assert not errors(nb, "setup"), cell_text(nb, "setup")
    said = "not implemented yet"
    if registry.step(name).target and not _nvrtc_here():
        said = NOT_COMPILED
    assert said in cell_text(nb, "check")
    for grade_id, (earned, _, error) in scores.items():
        if not error:  # the hidden tests are blank in a learner's copy
            continue
        assert earned == 0
        assert said in error or "needs a GPU" in error, (grade_id, error)
        # A cell that raises shows the grader's message alone, as nbgrader records it: no
        # traceback through autograder.
        for shown in errors(nb, grade_id):
            assert shown.traceback == [f"{shown.ename}: {shown.evalue}"], shown.traceback


@pytest.mark.parametrize("name", NAMES)
def test_explorer_widget_builds(name):
    import matplotlib

    matplotlib.use("Agg")
    ipywidgets = pytest.importorskip("ipywidgets")
    from autograder.course import explorers

    assert isinstance(explorers.explorer_for(name), ipywidgets.Widget)


@pytest.mark.parametrize("name", [a.name for a in ASSIGNMENTS if not registry.step(a.step).target])
def test_solution_notebook_earns_every_correctness_point(name, tmp_path):
    nb, scores = run("solutions", name, tmp_path)
    for grade_id, (earned, points, error) in scores.items():
        if grade_id == "test_fast_enough" and "needs a GPU" in error:
            assert earned == 0 and "it scores zero here" in error
            continue  # scores zero on a machine without a GPU, by design
        assert earned == points, (grade_id, error)
    raised = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if errors_in(c)]
    assert raised == [], "a right notebook must run headless without an error"
    if registry.step(name).is_cuda:
        assert "PASSED" in cell_text(nb, "check"), cell_text(nb, "check")


@pytest.mark.parametrize("name", [a.name for a in ASSIGNMENTS if registry.step(a.step).target])
def test_a_notebook_for_another_gpu_compiles_the_kernel_and_scores_nothing_here(name, tmp_path):
    """Steps 12 and 13 run on an sm_90a GPU alone. Here (no GPU) their right notebook
    still compiles the kernel for it, says why nothing ran, and earns nothing, without
    raising, as a test that needs a GPU does."""
    nb, scores = run("solutions", name, tmp_path)
    checked = cell_text(nb, "check")
    if _nvrtc_here():
        assert "compiled: sgemm_" in checked and "0 bytes spilled" in checked, checked
    else:
        assert NOT_COMPILED in checked, checked
    assert "not run: " in checked and "runs on an sm_90a GPU alone" in cell_text(nb, "setup")
    for grade_id, (earned, _, error) in scores.items():
        assert earned == 0 and "runs on an sm_90a GPU alone" in error, (grade_id, error)
    assert [c for c in nb.cells if errors_in(c)] == []


@pytest.mark.parametrize("folder, status", [("solutions", 0), ("exercises", 1)])
def test_headless_execution_exits_0_for_right_work_without_a_gpu_and_1_for_a_stub(
    folder, status, tmp_path
):
    """What a learner or CI sees from `jupyter nbconvert --execute`: right work exits 0
    though the speed test could not run; a stub fails its grade cells and exits 1."""
    pytest.importorskip("nbconvert", reason="nbconvert is not installed")
    name = "01_naive"
    copy = tmp_path / f"{name}.ipynb"
    shutil.copy(ROOT / folder / name / f"{name}.ipynb", copy)
    result = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", "--inplace", copy],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # the setup cell imports this checkout
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == status, result.stderr[-3000:]
    if status == 0:
        speed = cell_text(nbformat.read(copy, as_version=4), "test_fast_enough")
        assert "the performance test needs a GPU" in speed and "it scores zero here" in speed


def test_a_notebook_alone_unpacks_the_course_it_carries_once(tmp_path):
    """Where the course is not installed (Colab, a downloaded notebook), the setup cell
    unpacks the copy it carries beside the notebook and installs what is missing; run
    again in a new kernel, it finds both there and does neither again."""
    if course_installed():
        pytest.skip("the course is installed in this environment: .ci/run runs this test in "
                    "the Colab-like one, where it is not")
    for run_number in (1, 2):
        nb, _ = run("exercises", "03_smem_tiling", tmp_path)
        assert not errors(nb, "setup"), cell_text(nb, "setup")
        assert "not implemented yet" in cell_text(nb, "check")
        (home,) = tmp_path.glob("sgemm-course-*")
        if run_number == 1:
            unpacked = home.stat().st_mtime_ns
        else:
            assert home.stat().st_mtime_ns == unpacked and "Installing" not in cell_text(nb, "setup")
        setup = next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "setup")
        timing = setup.metadata.get("execution", {})
        print(f"run {run_number}: setup cell from {timing.get('iopub.execute_input')} to "
              f"{timing.get('shell.execute_reply')}: {cell_text(nb, 'setup').strip()}")


def test_a_damaged_copy_of_the_course_says_so_in_one_sentence(tmp_path):
    """A notebook whose carried course was changed (a bad download, an edit) unpacks
    nothing and says what to do."""
    if course_installed():
        pytest.skip("the course is installed in this environment: .ci/run runs this test in "
                    "the Colab-like one, where it is not")
    name = "01_naive"
    nb = nbformat.read(ROOT / "exercises" / name / f"{name}.ipynb", as_version=4)
    setup = next(c for c in nb.cells if c.metadata["nbgrader"]["grade_id"] == "setup")
    at = setup.source.index('    "', setup.source.index("COURSE = (")) + 10
    setup.source = setup.source[:at] + ("0" if setup.source[at] != "0" else "1") + setup.source[at + 1 :]
    copy = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, copy)
    nb, _ = execute_and_score(copy, env=ALONE)
    (error,) = errors(nb, "setup")
    assert error.traceback == [
        "This notebook's copy of the course is damaged (its checksum differs): download the "
        "notebook again, or on Colab open it again from its link."
    ]
    assert list(tmp_path.glob("sgemm-course-*")) == []

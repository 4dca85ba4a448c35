"""The grading pipeline end to end, through nbgrader's own command line, on the
CPU backend (no GPU): generate, submit, autograde, export.

Submissions of 02_coalescing: the solution earns every correctness point;
untouched stubs earn none; an off-by-one on the N bound keeps the whole-tile
points and loses the odd-shape ones; a kernel that hangs on odd shapes still
gets its other points. Without a GPU the speed test scores zero.
"""

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import the_machine

from autograder.course import notebooks

nbgrader_api = pytest.importorskip("nbgrader.api", reason="nbgrader is not installed")

ROOT = Path(__file__).resolve().parent.parent
CUDA, PYTHON = "02_coalescing", "00_cpu_triple_loop"
BOUND = "if (row < M && col < N) {"
HANG = "float acc = 0.0f;"


def nbgrader(root: Path, *args: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args, "--log-level=WARN"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def submit(root: Path, student: str, assignment: str, edit=None, source="solutions") -> None:
    """The notebook from solutions/ (or exercises/), its kernel cell edited."""
    nb = json.loads((root / source / assignment / f"{assignment}.ipynb").read_text())
    for cell in nb["cells"]:
        cell.pop("outputs", None) if cell["cell_type"] != "code" else cell.update(outputs=[])
        if edit and cell["metadata"]["nbgrader"]["grade_id"] == "kernel":
            text = "".join(cell["source"])
            cell["source"] = edit(text)
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True)
    (folder / f"{assignment}.ipynb").write_text(json.dumps(nb))


def replace_once(old: str, new: str):
    def edit(text: str) -> str:
        assert text.count(old) == 1, old
        return text.replace(old, new)

    return edit


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    with the_machine(tmp_path_factory, alone=True):  # it grades on the CPU (conftest.py)
        return _graded(tmp_path_factory)


def _graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions", root / "solutions")
    for assignment in (CUDA, PYTHON):
        nbgrader(root, "generate_assignment", assignment, "--force")
    submit(root, "solved", CUDA)
    submit(root, "untouched", CUDA, source="exercises")
    submit(root, "offbyone", CUDA, replace_once(BOUND, "if (row < M && col <= N) {"))
    submit(
        root,
        "hangs",
        CUDA,
        replace_once(
            HANG,
            HANG + " while ((N & 1) && *(volatile const float*)A == *(volatile const float*)A) {}",
        ),
    )
    submit(root, "solved", PYTHON)
    submit(root, "untouched", PYTHON, source="exercises")
    for student in ("solved", "untouched", "offbyone", "hangs"):
        nbgrader(root, "db", "student", "add", student)
    for assignment in (CUDA, PYTHON):
        nbgrader(root, "autograde", assignment, "--force")
    nbgrader(root, "export", "--to", "grades.csv")
    return root


def scores(root: Path, student: str, assignment: str) -> dict[str, float]:
    with nbgrader_api.Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(assignment, assignment, student)
        return {grade.name: grade.score for grade in nb.grades}


def test_the_solution_earns_every_correctness_point_and_no_speed_point_without_a_gpu(graded):
    assert scores(graded, "solved", CUDA) == {
        "test_whole_tiles": 3,
        "test_odd_shapes": 4,
        "test_fast_enough": 0,
    }
    assert scores(graded, "solved", PYTHON) == {
        "test_matmul_small": 3,
        "test_matmul_odd": 3,
        "test_matmul_ikj": 2,
        "test_gflops": 2,
    }


def test_untouched_stubs_earn_nothing(graded):
    assert set(scores(graded, "untouched", CUDA).values()) == {0}
    assert set(scores(graded, "untouched", PYTHON).values()) == {0}


def test_an_off_by_one_on_n_loses_only_the_odd_shape_points(graded):
    assert scores(graded, "offbyone", CUDA) == {
        "test_whole_tiles": 3,
        "test_odd_shapes": 0,
        "test_fast_enough": 0,
    }


def test_a_kernel_that_hangs_costs_only_its_own_points(graded):
    assert scores(graded, "hangs", CUDA) == {
        "test_whole_tiles": 3,
        "test_odd_shapes": 0,
        "test_fast_enough": 0,
    }


def test_nbgrader_export_has_the_scores(graded):
    with (graded / "grades.csv").open() as f:
        rows = {
            (r["assignment"], r["student_id"]): float(r["raw_score"]) for r in csv.DictReader(f)
        }
    assert rows[(CUDA, "solved")] == 7 and rows[(CUDA, "untouched")] == 0
    assert rows[(CUDA, "offbyone")] == 3 and rows[(CUDA, "hangs")] == 3
    assert rows[(PYTHON, "solved")] == 10


def test_committed_notebooks_are_what_the_generator_and_nbgrader_build():
    assert notebooks.differences() == [], "rebuild with: python -m autograder notebooks"

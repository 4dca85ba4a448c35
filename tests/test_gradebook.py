"""No lost grades: what `grade` keeps, where, and what it refuses to do.

A class's grades live beside its folder (<folder>.grades/<step>/); a run never
drops a student from the CSV; a grade goes stale when its kernel or the grader
changes, and only then; a command line that would lose, mix or silently change
grades exits 2 and changes nothing. The students here hand in files with no
kernel in them, graded ("unreadable") without compiling anything, so each run
takes a fraction of a second; tests/test_grade.py grades real kernels.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grade import batch, gradebook, grading, rubric
from autograder.grade.gradebook import Gradebook, Refused, read_csv
from autograder.grade.grading import Grade, Score
from autograder.grade.submissions import find
from autograder.judge import verdicts
from autograder.ladder import registry

ROOT = Path(__file__).resolve().parent.parent
STEP = registry.step("05")


def write_class(root: Path, students=("ann", "bob")) -> Path:
    """Each student hands in root/<student>.cu, which holds no kernel yet."""
    root.mkdir(parents=True)
    for student in students:
        (root / f"{student}.cu").write_text(f"// {student}: no kernel yet\n")
    return root


def grade(root, *args, cwd=ROOT, assignment=STEP.id):
    return subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(root), "--assignment", assignment]
        + ["--backend", "cpu", "--quiet", *map(str, args)],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # this checkout's autograder, from any cwd
        capture_output=True,
        text=True,
        check=False,
    )


def files(folder: Path) -> dict[str, bytes]:
    """Every file under folder and its bytes (the lock file is empty, and left in place)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != gradebook.LOCK
    }


def earlier_grade(student: str, backend="cpu", assignment=STEP.name) -> Grade:
    tests = [Score(t.id, t.points, t.points if t.suite else 0) for t in rubric.CUDA_TESTS]
    return Grade(student, assignment, f"{student}.cu", "0" * 16, backend, tests=tests)


def test_the_grades_live_beside_the_class_folder_named_after_it(tmp_path):
    root = write_class(tmp_path / "class")
    result = grade(root)
    assert result.returncode == 0, result.stdout + result.stderr
    home = tmp_path / "class.grades" / STEP.name
    assert sorted(files(tmp_path)) == [
        "class.grades/05_blocktiling_2d/feedback/ann.json",
        "class.grades/05_blocktiling_2d/feedback/bob.json",
        "class.grades/05_blocktiling_2d/grades.csv",
        "class.grades/05_blocktiling_2d/report.html",  # the class's report, and their pages
        "class.grades/05_blocktiling_2d/students/ann.html",
        "class.grades/05_blocktiling_2d/students/bob.html",
        "class/ann.cu",
        "class/bob.cu",
    ]
    assert f"grades in {home / 'grades.csv'}" in result.stdout
    # An nbgrader course: the students are in submitted/, so are their grades.
    course = tmp_path / "course"
    write_class(course / "submitted")
    book = Gradebook.of(course, STEP)
    assert book.feedback_dir == course / "submitted.grades" / STEP.name / "feedback"


def test_two_classes_graded_from_one_directory_do_not_mix(tmp_path):
    write_class(tmp_path / "class_a", ["ann", "bob"])
    write_class(tmp_path / "class_b", ["cy"])
    for name in ("class_a", "class_b"):
        result = grade(name, cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
    students = {
        name: [
            r["student"] for r in read_csv(tmp_path / f"{name}.grades" / STEP.name / "grades.csv")
        ]
        for name in ("class_a", "class_b")
    }
    assert students == {"class_a": ["ann", "bob"], "class_b": ["cy"]}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "class_a",
        "class_a.grades",
        "class_b",
        "class_b.grades",
    ]


def test_a_gradebook_in_the_class_folder_is_never_taken_for_a_student(tmp_path):
    root = write_class(tmp_path / "class")
    (root / "old.grades" / STEP.name).mkdir(parents=True)
    assert [s.student for s in find(root, STEP)] == ["ann", "bob"]


@pytest.mark.parametrize(
    "make_class, message",
    [
        (lambda root: root.mkdir(), "no submissions found in {root}"),
        # nbgrader folders that hold another assignment: a wrong --assignment
        (
            lambda root: (root / "submitted" / "ann" / "03_smem_tiling").mkdir(parents=True),
            "no submissions found in {root}/submitted (student folders: 1, none with a file",
        ),
    ],
    ids=["empty", "another assignment"],
)
@pytest.mark.parametrize("merge", [[], ["--merge"]], ids=["grade", "merge"])
def test_a_run_that_finds_no_submissions_exits_2_and_touches_nothing(
    tmp_path, make_class, message, merge
):
    root = tmp_path / "class"
    make_class(root)
    book = Gradebook.of(root, STEP)  # what an earlier run of this class left
    book.put(earlier_grade("ann"))
    book.write_csv(["ann"])
    before = files(tmp_path)
    result = grade(root, *merge)
    assert result.returncode == 2
    assert message.format(root=root) in result.stderr
    assert files(tmp_path) == before


@pytest.mark.slow
def test_a_class_graded_as_another_step_is_refused_naming_its_step(tmp_path):
    """The planted class of step 05 in every layout, graded as step 04 by mistake: each
    would score zero ("defines no __global__ kernel 'sgemm_blocktiling_1d'"). Refused
    before anything is written, with the step the class was written for."""
    from planted_class import write_class as write_planted_class

    write_planted_class(tmp_path / "class")
    assert (
        "grade: 6 of the 6 submissions define no kernel sgemm_blocktiling_1d (the kernel of "
        "04_blocktiling_1d), so each would score zero; 6 define sgemm_blocktiling_2d: grade "
        "them with --assignment 05_blocktiling_2d, whose kernel that is"
    ) in refusal(tmp_path, assignment="04")
    assert not (tmp_path / "class" / "submitted.grades").exists()


@pytest.mark.parametrize("strays, refused", [(1, False), (2, False), (3, True)])
def test_a_class_is_refused_only_when_most_define_another_kernel(tmp_path, strays, refused):
    """Of four students, `strays` hand in step 03's kernel and the others nothing that
    defines a kernel at all: those say nothing of which step the class is for."""
    root = write_class(tmp_path / "class", ["ann", "bob", "cy", "dee"])
    for student in ["ann", "bob", "cy", "dee"][:strays]:
        (root / f"{student}.cu").write_text(registry.step("03").source())
    with pytest.raises(Refused) if refused else contextlib.nullcontext():
        batch.roster(root, STEP, Gradebook.of(root, STEP))


def test_on_the_cpu_the_summary_and_the_csv_say_7_of_10_were_possible_and_why(tmp_path):
    root = write_class(tmp_path / "class")
    first = grade(root)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (
        "0 with full marks (7 of 10 possible on the CPU: speed needs a GPU); unreadable: 2"
        in first.stdout
    )
    rows = read_csv(tmp_path / "class.grades" / STEP.name / "grades.csv")
    assert [(r["max_points"], r["possible"], r["possible_why"]) for r in rows] == [
        ("10", "7", "7 of 10 possible on the CPU: speed needs a GPU")
    ] * 2
    again = grade(root)  # nothing to do: no count of full marks, no dangling separator
    assert again.stdout.splitlines()[1].startswith("graded 0 in ")
    assert again.stdout.splitlines()[1].endswith(" submissions per minute)"), again.stdout


def test_a_student_whose_submission_is_gone_keeps_their_grade(tmp_path):
    root = write_class(tmp_path / "class", ["ann", "bob"])
    (root / "cy").mkdir()
    (root / "cy" / f"{STEP.name}.cu").write_text("// cy: no kernel yet\n")
    assert grade(root).returncode == 0
    home = tmp_path / "class.grades"
    before = files(home)
    (root / "bob.cu").unlink()  # bob is gone from the class folder
    (root / "cy" / f"{STEP.name}.cu").unlink()  # cy's folder is there, and empty
    again = grade(root)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "kept the grades of 2 who hand in nothing now (bob, cy)" in again.stdout
    assert files(home) == before  # the same rows, the same feedback, not regraded
    assert [r["student"] for r in read_csv(home / STEP.name / "grades.csv")] == ["ann", "bob", "cy"]


def test_a_change_to_the_thresholds_or_the_rubric_regrades_the_class(tmp_path, monkeypatch):
    root = write_class(tmp_path / "class")

    def run():  # a new run reads the grader's fingerprint afresh, as a new command would
        book = Gradebook.of(root, STEP)
        return batch.run(root, STEP, book, grading.Options("cpu"), progress=False)

    assert len(run().graded) == 2
    assert run().skipped == 2  # nothing changed: nobody graded again

    config = json.loads(verdicts.GRADING.read_text())
    config["fraction_of_reference"] /= 2
    thresholds = tmp_path / "grading.json"
    thresholds.write_text(json.dumps(config))
    monkeypatch.setattr(verdicts, "GRADING", thresholds)
    assert len(run().graded) == 2
    config["//"] = "the same thresholds, explained in other words"
    thresholds.write_text(json.dumps(config, indent=2))
    assert run().skipped == 2  # a comment is not a threshold

    package = tmp_path / "autograder"  # the grader's code, with the rubric's points changed
    shutil.copytree(gradebook.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    rubric_py = package / "grade" / "rubric.py"
    three_points = '"test_whole_tiles",\n        3,'
    assert three_points in rubric_py.read_text()
    rubric_py.write_text(
        rubric_py.read_text().replace(three_points, three_points.replace("3", "2"))
    )
    monkeypatch.setattr(gradebook, "PACKAGE", package)
    assert len(run().graded) == 2


def refusal(tmp_path, *args, **options):
    """Grade the class at tmp_path/class: the run must exit 2, say why, and change nothing."""
    before = files(tmp_path)
    result = grade(tmp_path / "class", *args, **options)
    assert result.returncode == 2, result.stdout + result.stderr
    assert files(tmp_path) == before
    return result.stderr


def test_an_existing_file_that_is_not_this_assignments_grades_is_never_replaced(tmp_path):
    write_class(tmp_path / "class")
    notes = tmp_path / "notes.csv"
    notes.write_text("name,remark\nann,asks good questions\n")
    assert "notes.csv is not a grades CSV" in refusal(tmp_path, "--out", notes)

    other = Gradebook(tmp_path / "grades_04.csv", tmp_path / "feedback_04", STEP)
    other.put(earlier_grade("ann", assignment="04_blocktiling_1d"))
    other.write_csv(["ann"])
    message = refusal(tmp_path, "--out", other.csv_path)
    assert "grades_04.csv holds grades of 04_blocktiling_1d, not 05_blocktiling_2d" in message
    message = refusal(tmp_path, "--json", other.feedback_dir)
    assert "feedback_04 holds grades of 04_blocktiling_1d (ann.json)" in message

    (tmp_path / "feedback").mkdir()
    (tmp_path / "feedback" / "ann.json").write_text('{"a": "note of ours"}')
    assert "ann.json is not a grade file" in refusal(tmp_path, "--json", tmp_path / "feedback")


def test_a_feedback_folder_among_the_students_is_refused(tmp_path):
    root = write_class(tmp_path / "class")
    assert "would be taken for a student" in refusal(tmp_path, "--json", root / "feedback")


def test_a_merge_with_no_feedback_files_leaves_the_csv_alone(tmp_path):
    write_class(tmp_path / "class")
    (tmp_path / "grades.csv").write_text("student,assignment\n")
    message = refusal(tmp_path, "--merge", "--out", tmp_path / "grades.csv")
    assert "no feedback files in" in message and "nothing to merge" in message


def test_a_second_run_of_the_same_class_waits_for_the_first(tmp_path):
    root = write_class(tmp_path / "class")
    book = Gradebook.of(root, STEP)
    with book.locked():
        assert "another grade run is using" in refusal(tmp_path)
        with pytest.raises(Refused, match="another grade run"), book.locked(shared=True):
            pass
    with book.locked(shared=True), book.locked(shared=True):  # the shards of one job array
        assert "another grade run is using" in refusal(tmp_path)


def test_grades_from_a_gpu_are_not_replaced_by_cpu_grades_without_force(tmp_path):
    root = write_class(tmp_path / "class")
    book = Gradebook.of(root, STEP)
    book.put(earlier_grade("ann", backend="gpu"))
    message = refusal(tmp_path)
    assert "students graded on a GPU would be graded again on the CPU (ann)" in message
    assert grade(root, "--force").returncode == 0
    assert book.get("ann").backend == "cpu"

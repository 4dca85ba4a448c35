"""Every graded step can be graded: `python -m autograder grade` on the CPU backend
gives each step's reference kernel (kernels/<step>.cu, handed in as a student's
file) full points for correctness, with the grader's default time limits. The
speed test needs a GPU and scores zero here.

This is the whole path an instructor takes, on every rung: the registry's launch
layout sent to a spawned worker, the kernel read from a submission, the CPU
backend running every shape of both suites, and the CSV at its default place."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grade import rubric
from autograder.grade.gradebook import read_csv
from autograder.ladder import registry

ROOT = Path(__file__).resolve().parent.parent
FULL_ON_THE_CPU = {t.id: t.points if t.suite else 0 for t in rubric.CUDA_TESTS}


@pytest.mark.parametrize("step", registry.STEPS, ids=lambda s: s.name)
def test_the_reference_kernel_of_every_step_earns_full_correctness_points(step, tmp_path):
    root = tmp_path / "class"
    root.mkdir()
    (root / "reference.cu").write_text(step.source())
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(root), "--assignment", step.id]
        + ["--backend", "cpu", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    home = tmp_path / "class.grades" / step.name
    (row,) = read_csv(home / "grades.csv")
    feedback = json.loads((home / "feedback" / "reference.json").read_text())
    assert row["status"] == "graded", feedback["tests"]
    assert {t: int(row[t]) for t in FULL_ON_THE_CPU} == FULL_ON_THE_CPU, feedback["tests"]
    odd = next(t for t in feedback["tests"] if t["id"] == "test_odd_shapes")
    assert odd["message"] == (
        "passed; 4095x4097x4093 not run: too large for this backend (a GPU runs it)"
    ), odd


def test_a_kernel_too_slow_for_a_shape_does_not_pass_that_shapes_suite(tmp_path):
    """The attack: be slow enough that the grader skips the medium shape, where the
    kernel might be wrong, and still collect the odd-shape points. Beside it, the
    reference kernels above earn them."""
    step = registry.step("01")
    inner = "acc += A[row * K + k] * B[k * N + col];"
    assert step.source().count(inner) == 1
    slow = step.source().replace(inner, inner + "\n      for (volatile int r = 0; r < 400; ++r) {}")
    root = tmp_path / "class"
    root.mkdir()
    (root / "sloth.cu").write_text(slow)
    subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(root), "--assignment", step.id]
        + ["--backend", "cpu", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    feedback = json.loads(
        (tmp_path / "class.grades" / step.name / "feedback" / "sloth.json").read_text()
    )
    tests = {t["id"]: t for t in feedback["tests"]}
    assert tests["test_whole_tiles"]["earned"] == tests["test_whole_tiles"]["points"], tests
    odd = tests["test_odd_shapes"]
    assert odd["earned"] == 0, odd
    assert "1001x777x513 not run: at this kernel's speed here it would take about" in odd["message"]
    assert "a suite is passed only when each of its shapes ran" in odd["message"]

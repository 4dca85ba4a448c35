"""What a CUDA exercise is graded on, and for how many points.

The one table that the notebooks' grade cells (autograder/course/notebooks.py), the
batch grader (autograder/grade/grading.py) and the pytest autograder
(autograder/grade/tests/) all read, so that a kernel earns the same points, with the
same messages, whichever of them grades it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GradedTest:
    id: str  # nbgrader's grade_id, the pytest test's name and the CSV column
    points: int
    what: str  # one line, shown above the grade cell
    suite: str | None  # the correctness suite (exercise.SUITES) it runs; None: the speed test
    hidden: bool = False  # nbgrader hides it from the learner's copy

    def call(self, filename: str) -> str:
        """The grade cell's code for the kernel file `filename`."""
        if self.suite:
            return f'exercise.assert_correct("{filename}", "{self.suite}")'
        return f'exercise.assert_fast_enough("{filename}")'


CUDA_TESTS = (
    GradedTest(
        "test_whole_tiles",
        3,
        "right on 128x128x64 and 256x384x128, beta = 0 and beta != 0",
        "whole tiles",
    ),
    GradedTest(
        "test_odd_shapes",
        4,
        "right on 1x1x1 ... 1001x777x513 and (on a GPU) 4095x4097x4093, beta = 0 and beta != 0",
        "odd",
        hidden=True,
    ),
    GradedTest("test_fast_enough", 3, "fast enough (needs a GPU)", None),
)
MAX_POINTS = sum(t.points for t in CUDA_TESTS)


def possible(backend: str) -> int:
    """The most a kernel can earn on `backend`: on the CPU, nothing is timed, so the
    speed test's points cannot be earned there."""
    return sum(t.points for t in CUDA_TESTS if t.suite or backend == "gpu")


def short_of_max(backend: str) -> str:
    """What a grade made on `backend` could not earn, and why ("" when it could earn
    every point): "7 of 10 possible on the CPU: speed needs a GPU"."""
    most = possible(backend)
    if most == MAX_POINTS:
        return ""
    return f"{most} of {MAX_POINTS} possible on the {backend.upper()}: speed needs a GPU"

"""Options and the one grading run that the tests read (see __init__.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.grade import grading, rubric
from autograder.grade.gradebook import write_atomically
from autograder.grade.submissions import at
from autograder.judge import verdicts
from autograder.ladder import registry
from autograder.run import backends


def pytest_addoption(parser):
    group = parser.getgroup("autograder", "grading one submission")
    group.addoption("--submission", type=Path, help="a .cu file, a notebook, or a folder with one")
    group.addoption("--assignment", help="the step, e.g. 05 or 05_blocktiling_2d")
    group.addoption(
        "--backend",
        choices=("auto", "gpu", "cpu"),
        default="auto",
        help="where kernels run (default: the GPU if there is one)",
    )
    group.addoption(
        "--case-timeout",
        type=float,
        default=grading.Options.case_timeout_s,
        help="seconds a test case may run before it counts as a hang",
    )
    group.addoption(
        "--grade-json",
        type=Path,
        metavar="F",
        help="also write the grade, points per test and feedback, as JSON (the batch "
        "grader's feedback format)",
    )


@pytest.fixture(scope="session")
def graded(request) -> grading.Grade:
    """The submission graded once; each test reports its own part."""
    config = request.config
    path, assignment = config.getoption("submission"), config.getoption("assignment")
    if not (path and assignment):
        pytest.skip("give --submission PATH --assignment STEP")
    step = registry.step(assignment)
    backend = backends.resolve(config.getoption("backend"))
    if why := verdicts.out_of_reach(step, backend):  # nothing could be earned, or written
        pytest.skip(f"{why}: grade it on one")
    options = grading.Options(backend, config.getoption("case_timeout"))
    result = grading.grade(at(path, step), step, options)
    config.stash[_GRADE] = result
    if config.getoption("grade_json"):
        write_atomically(config.getoption("grade_json"), json.dumps(result.to_json(), indent=1))
    return result


_GRADE = pytest.StashKey[grading.Grade]()


def pytest_terminal_summary(terminalreporter, config):
    result = config.stash.get(_GRADE, None)
    if result is None:
        return
    terminalreporter.section("points")
    for t in result.tests:
        terminalreporter.line(f"{t.id:<20} {t.earned}/{t.points}")
    terminalreporter.line(
        f"{'total':<20} {result.total}/{rubric.MAX_POINTS} ({result.status}, on {result.device})"
    )

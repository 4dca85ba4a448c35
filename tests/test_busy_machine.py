"""A busy machine costs no points: a case's time limit counts what the kernel used.

Graded on the CPU while the machine was loaded, one of three identical copies of step
03's reference ran out of its 10 s ("did not finish ... an endless loop?") and lost
3 points, and the next run kept that grade. On the CPU backend a launch is charged
only for its own time (the time its threads waited for a CPU that other work had is
added to its limit, up to isolate.child.OWN_TIME_CAP times it); a launch that still
runs out is run again alone; a machine too busy even then is the grader's failure,
graded again on the next run. The honest kernel and the planted attack on the limit
(an endless loop) are graded side by side, on cores that other processes saturate.
"""

import contextlib
import os
import subprocess
import sys
import time

import pytest
from planted import planted

from autograder import KernelSpec
from autograder.grade import grading
from autograder.grade.gradebook import Gradebook
from autograder.grade.submissions import Submission
from autograder.isolate import child
from autograder.judge import job
from autograder.judge.checker import Shape
from autograder.ladder import registry

STEP = registry.step("03")
HONEST = KernelSpec.from_step(STEP)
ENDLESS = planted(
    "03",
    "float acc = 0.0f;",
    "float acc = 0.0f;\n    while (*(volatile float*)A == *(volatile float*)A) {}",
)
SHAPE = Shape(448, 448, 448)  # step 03's reference: about 0.7 s of its own on two cores
# The limit is this much more than the kernel's own time there, measured first: with
# a busy loop on each core it gets half of them at most, so on the clock it needs
# more than its limit, and it has it unless its share is under 1 / (OWN_TIME_CAP * this).
MARGIN = 1.5
HOG_LIFE_S = 120  # a hog ends by itself after this, should the test not end it


@contextlib.contextmanager
def saturated():
    """A busy loop in its own process on each core this process may use."""
    loop = f"import time\nend = time.monotonic() + {HOG_LIFE_S}\nwhile time.monotonic() < end: pass"
    hogs = []
    try:
        for _ in os.sched_getaffinity(0):
            hogs.append(subprocess.Popen([sys.executable, "-c", loop]))
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _run(spec: KernelSpec, limit_s: float) -> tuple[job.Outcome, float]:
    """spec checked at SHAPE with limit_s per case (without the causes of a failing
    case, which the CPU backend's diagnostic builds would take long to find); the
    outcome, and how long it took on the clock."""
    started = time.monotonic()
    checks = (job.Check((SHAPE,)),)
    outcome = job.run(job.Job(spec, "cpu", checks, seed=1, diagnose=False), limit_s)
    return outcome, time.monotonic() - started


def test_an_honest_kernel_keeps_every_case_on_saturated_cores_and_a_loop_is_still_stopped(
    monkeypatch,
):
    held_back = []  # what was asked each time a launch's limit had passed on the clock
    asked = child._RunQueue.held_back

    def noted(queue):
        held_back.append(asked(queue))
        return held_back[-1]

    monkeypatch.setattr(child._RunQueue, "held_back", noted)
    with saturated():
        measured, _ = _run(HONEST, 60.0)
        limit_s = MARGIN * max(c.seconds for c in measured.report.cases)
        held_back.clear()
        honest, _ = _run(HONEST, limit_s)
        asked_for_honest = list(held_back)
        endless, seconds = _run(ENDLESS, limit_s)
    report = honest.report
    assert report.ok and len(report.cases) == 2, str(report)
    # The load was real: on the clock, the limit passed while a case still ran.
    assert max(asked_for_honest, default=0) > 0, asked_for_honest
    assert not report.notes, report.notes  # kept in the first run, not the second alone
    error = endless.report.error
    assert error.startswith(f"{SHAPE}, beta=0: did not finish within"), error
    assert "of its own time" in error and "an endless loop?" in error, error
    assert endless.hung and not endless.hung.starved, endless.hung
    assert "with the grader's other CPU jobs stopped for it" in endless.report.notes[0]
    # Stopped twice (once more alone), each time within the cap, and built once.
    assert seconds < 2 * child.OWN_TIME_CAP * limit_s + 30, seconds
    hung = endless.hung
    print(
        f"honest: cases took {[round(c.seconds, 1) for c in report.cases]} s of their own, "
        f"held back up to {max(asked_for_honest):.1f} s at their {limit_s:.1f} s limit; "
        f"endless: stopped after {hung.wall_s:.1f} s on the clock, {hung.held_back_s:.1f} s "
        f"held back (a CPU share of {1 - hung.held_back_s / hung.wall_s:.0%}); {seconds:.0f} s"
    )


def _starved(monkeypatch):
    """Every thread of the child waited for a CPU all along, as on a machine too busy."""
    monkeypatch.setattr(child._RunQueue, "held_back", lambda self: 1e9)


def test_a_launch_that_never_had_its_limit_is_the_graders_failure(monkeypatch):
    _starved(monkeypatch)
    started = time.monotonic()
    with pytest.raises(job.GraderFault, match="too busy to tell whether the kernel is slow"):
        job.check(ENDLESS, shapes=(SHAPE,), case_timeout_s=0.5, backend="cpu")
    # Once, then once more alone: each stopped at the cap.
    assert time.monotonic() - started < 2 * child.OWN_TIME_CAP * 0.5 + 30


def test_a_grade_from_a_starved_timeout_is_graded_again_and_an_honest_timeouts_stands(
    tmp_path, monkeypatch
):
    kernel = tmp_path / STEP.path.name
    kernel.write_text(ENDLESS.source)
    eve = Submission("eve", kernel)
    book = Gradebook(tmp_path / "grades.csv", tmp_path / "feedback", STEP)
    options = grading.Options(backend="cpu", case_timeout_s=0.5)
    with monkeypatch.context() as patched:
        _starved(patched)
        starved = grading.grade(eve, STEP, options)
    assert starved.status == grading.GRADER_ERROR, starved
    assert "too busy" in starved.tests[0].message
    book.put(starved)
    assert not book.is_current(eve, "cpu")
    honest = grading.grade(eve, STEP, options)
    assert honest.status == grading.GRADED, honest
    assert "did not finish within" in honest.tests[0].message, honest.tests[0].message
    book.put(honest)
    assert book.is_current(eve, "cpu")

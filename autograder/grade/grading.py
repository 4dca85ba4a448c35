"""Grade one submission: the rubric's tests, run as the notebook's grade cells run them.

The kernel is compiled, checked and timed in a child process (autograder.judge.job,
through autograder.judge.verdicts), so a kernel that crashes, hangs or exhausts the GPU
costs its own tests and nothing else. A `Grade` is plain data, written to JSON
as the student's feedback.
"""

from __future__ import annotations

import datetime
import time
import traceback
from dataclasses import asdict, dataclass, field

from ..judge import aligned, verdicts
from ..judge.causes import by_cause
from ..judge.job import GraderFault
from ..ladder.registry import Step
from ..run import contract
from ..run.backends import BackendUnavailable
from ..run.compiler import CompileError
from ..run.kernel import SpecError, from_source
from . import rubric
from .submissions import Submission, Unreadable

# A grade's status: every test ran, or why none could.
GRADED = "graded"
NO_SUBMISSION = "no submission"
UNREADABLE = "unreadable"
NOT_IMPLEMENTED = "not implemented"
NOT_COMPILED = "compile error"
OFF_CONTRACT = "off the contract"  # compiles, but does not take the parameters the grader passes
NEEDS_GPU = "needs a GPU"  # uses what the CPU backend cannot run
# The step's kernel runs on another GPU alone (sm_90a): no test could run, nothing
# could be earned here, and the grade is made again where it can run.
OUT_OF_REACH = "needs another GPU"
GRADER_ERROR = "grader error"  # a fault of the grader, not the student: regraded on the next run


@dataclass
class Score:
    id: str
    points: int
    earned: int
    message: str = ""


@dataclass
class Grade:
    student: str
    assignment: str
    submission: str  # the file graded, as given
    fingerprint: str
    backend: str
    status: str = GRADED
    tests: list[Score] = field(default_factory=list)
    gflops: list[float] = field(default_factory=list)  # one per timing
    minimum_gflops: float | None = None  # None: not timed, or its timings were rejected
    device: str = ""
    graded_at: str = ""
    seconds: float = 0.0
    # Recorded since the class report (autograder.course.report) reads them; a record
    # written before has none of them, and reads as it did.
    # Beside each timing in `gflops`: the reference kernel's GFLOP/s timed with it, and
    # the relative standard error of the kernel's launches.
    reference_gflops: list[float] = field(default_factory=list)
    gflops_error: list[float] = field(default_factory=list)
    # Each cause of a failing test, diagnosed (autograder.judge.diagnosis), as data:
    # {test, kind, rule, line, reference_line, statement, message, evidence, cases, of}.
    causes: list[dict] = field(default_factory=list)
    grader: str = ""  # the grader's version (gradebook.grader_version), stamped when kept

    @property
    def total(self) -> int:
        return sum(t.earned for t in self.tests)

    def to_json(self) -> dict:
        return {
            **asdict(self),
            "total": self.total,
            "max_points": rubric.MAX_POINTS,
            # On the CPU the speed test cannot be passed: say so beside the total.
            "possible": 0 if self.status == OUT_OF_REACH else rubric.possible(self.backend),
            "possible_why": (
                self.tests[0].message
                if self.status == OUT_OF_REACH
                else rubric.short_of_max(self.backend)
            ),
        }

    @classmethod
    def from_json(cls, data: dict) -> Grade:
        derived = ("total", "max_points", "possible", "possible_why")
        data = {k: v for k, v in data.items() if k not in derived}
        data["tests"] = [Score(**t) for t in data["tests"]]
        return cls(**data)


@dataclass(frozen=True)
class Options:
    backend: str = "gpu"
    case_timeout_s: float = verdicts.CASE_TIMEOUT_S
    timings: int = 1  # how many times the speed test times the kernel; the verdict uses the median


def grade(submission: Submission, step: Step, options: Options) -> Grade:
    """Grade one submission; never raises for anything the submission does."""
    started = time.perf_counter()
    result = Grade(
        student=submission.student,
        assignment=step.name,
        submission=str(submission.path or ""),
        fingerprint=submission.fingerprint(step),
        backend=options.backend,
    )
    try:
        _run_tests(result, submission, step, options)
    except GraderFault as e:  # the machine, not the student: regraded on the next run
        result.status = GRADER_ERROR
        result.tests = _all_fail(str(e))
    except Exception:  # a bug of ours must not stop the class: record it, regrade next run
        result.status = GRADER_ERROR
        result.tests = _all_fail(traceback.format_exc(limit=3))
    result.graded_at = datetime.datetime.now().isoformat(timespec="seconds")
    result.seconds = round(time.perf_counter() - started, 2)
    return result


def _all_fail(message: str) -> list[Score]:
    """Every test fails for one reason, said once: in the first test, which the others name."""
    first, *others = rubric.CUDA_TESTS
    return [Score(first.id, first.points, 0, message)] + [
        Score(t.id, t.points, 0, f"see {first.id}") for t in others
    ]


# What stops a submission before any test can run, and the status it gets.
_STOPPED = (
    (Unreadable, UNREADABLE),
    (SpecError, UNREADABLE),
    (verdicts.NotImplementedYet, NOT_IMPLEMENTED),
    (CompileError, NOT_COMPILED),
    (BackendUnavailable, NEEDS_GPU),  # e.g. warp shuffles, which the CPU backend cannot run
)


def _run_tests(result: Grade, submission: Submission, step: Step, options: Options) -> None:
    suites = [t.suite for t in rubric.CUDA_TESTS if t.suite]
    timings = options.timings if options.backend == "gpu" else 0
    if why := verdicts.out_of_reach(step, options.backend):
        result.status, result.tests = OUT_OF_REACH, _all_fail(why)
        return
    try:
        source = submission.source(step)
        spec = from_source(source, submission.kernel_file(step), kernel=step.kernel, like=step.id)
        evaluation = verdicts.evaluate(
            spec, suites, options.backend, options.case_timeout_s, timings
        )
    except tuple(kind for kind, _ in _STOPPED) as e:
        status = next(status for kind, status in _STOPPED if isinstance(e, kind))
        if isinstance(e, CompileError) and e.compiler == contract.CHECKER:
            status = OFF_CONTRACT
        result.status = NO_SUBMISSION if submission.path is None else status
        result.tests = _all_fail(submission.in_own_lines(str(e), step))
        return
    result.device = evaluation.device
    speed = evaluation.speed or verdicts.Speed(
        False, "the performance test needs a GPU: graded on the CPU, it scores zero"
    )
    result.gflops, result.minimum_gflops = speed.gflops, speed.minimum
    result.reference_gflops, result.gflops_error = speed.reference, speed.error
    result.causes = _causes(evaluation, submission, step, source)
    for test in rubric.CUDA_TESTS:
        if test.suite:
            problem = evaluation.problems[test.suite]
            passed, message = problem is None, problem or evaluation.not_run(test.suite)
        else:
            passed, message = speed.passed, speed.message
        earned = test.points if passed else 0
        message = submission.in_own_lines(message or "", step)
        result.tests.append(Score(test.id, test.points, earned, message))


def _causes(evaluation, submission: Submission, step: Step, source: str) -> list[dict]:
    """Every cause of each failing test as data, for the class report: its diagnosis's
    kind, the learner's line and the step's statement it stands for (judge.aligned),
    and its words as the learner reads them. A test that failed with no case to blame
    (the run stopped: a hang, a crash) has its message's first line, with the cause
    the CPU backend found for the stop where it found one (Report.stopped_by)."""

    def record(test, d, message: str, cases: int = 0, of: int = 0) -> dict:
        line = d.line if d is not None else None
        known = line and aligned.on_reference(source, step.source(), line)
        return {
            "test": test.id,
            "kind": d.kind if d is not None else "",
            "rule": d.rule if d is not None else "",
            "line": line,
            "reference_line": known[0] if known else None,
            "statement": known[1] if known else "",
            "message": submission.in_own_lines(message, step),
            "evidence": d.evidence if d is not None else "",
            "cases": cases,
            "of": of,
        }

    found = []
    for test in rubric.CUDA_TESTS:
        problem = test.suite and evaluation.problems[test.suite]
        if not problem:
            continue
        shapes = verdicts.SUITES[test.suite]
        causes = by_cause([c for c in evaluation.report.cases if c.shape in shapes])
        for cause in causes:
            d = cause.diagnosis
            message = str(d) if d else cause.cases[0].message
            found.append(record(test, d, message, len(cause.cases), cause.of))
        if not causes:
            found.append(record(test, evaluation.report.stopped_by, problem.splitlines()[0]))
    return found

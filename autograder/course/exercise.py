"""What the exercise notebooks call: a thin layer over autograder.judge.verdicts.

    from autograder.course import exercise
    exercise.check("03_smem_tiling.cu")               # the full report, as the CLI prints it
    exercise.assert_correct("03_smem_tiling.cu", "odd")  # a grade cell: raises with the reason

Every run happens in a child process with time limits (autograder.judge.job), so a
kernel that crashes or hangs fails its own test and the notebook goes on.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from ..grade import rubric
from ..grade.submissions import in_cell_lines
from ..judge.checker import SMALL, SUITE
from ..judge.timing import gflops as gflops_of
from ..judge.verdicts import (
    CASE_TIMEOUT_S,
    NOT_IMPLEMENTED,
    NotImplementedYet,
    compile_for_target,
    evaluate,
    out_of_reach,
    step_of,
)
from ..ladder import registry
from ..run import gpu
from ..run.backends import BackendUnavailable
from ..run.backends import resolve as backend
from ..run.compiler import CompileError, NvrtcUnavailable
from ..run.kernel import from_file


class GradeFailed(AssertionError):
    """Why a grade cell fails. A notebook shows the message alone (IPython's
    _render_traceback_, which nbgrader records too): a traceback would run through the
    grader's code, where the learner's mistake is not."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


# The grade cell that showed each kernel source's compile error: the others point to
# it, so that a notebook says it once, as the batch grader's feedback does.
_compile_error_shown_by: dict[str, str] = {}


def _evaluate(path, suite: str | None, on: str, timings: int = 0):
    """verdicts.evaluate for the grade cell of `suite` (None: the speed test): what keeps
    the kernel from running (a compile error, the #error stub, what the CPU backend
    cannot run) is its GradeFailed. None for a kernel built for another GPU than this
    one (verdicts.out_of_reach): compiled all the same, so that its errors show, it says
    on stderr why the test scores zero, as nbgrader counts a test that cannot run."""
    test = next(t.id for t in rubric.CUDA_TESTS if t.suite == suite)
    spec = from_file(path)
    try:
        if why := out_of_reach(step_of(spec), on):
            compiled, said = _compile_for_target(spec)
            print(f"{why}{'' if compiled else '; ' + said}: this test scores zero here",
                  file=sys.stderr)  # fmt: skip
            return None
        return evaluate(spec, [suite or "whole tiles"], on, CASE_TIMEOUT_S, timings)
    except CompileError as e:
        shown_by = _compile_error_shown_by.setdefault(spec.source, test)
        if shown_by != test:
            raise GradeFailed(f"{e.filename} did not compile: see {shown_by}") from None
        raise GradeFailed(in_cell_lines(str(e), e.filename)) from None
    except (NotImplementedYet, BackendUnavailable) as e:
        raise GradeFailed(str(e)) from None


def setup(step: str) -> None:
    """A line on where kernels will run, and one more for a step whose kernel cannot
    run here."""
    reason = gpu.unavailable_reason()
    if reason is None:
        info = gpu.device_info()
        print(f"Kernels run on the {info.name} ({info.arch}). All checks and timings are on.")
    else:
        print(
            f"No GPU here ({reason}). Kernels are checked on the CPU, with the same messages; "
            "timings need a GPU (on Colab: Runtime > Change runtime type > T4 GPU)."
        )
    if why := out_of_reach(registry.step(step), backend()):
        print(
            f"But {why}. Here the check cell compiles your kernel for it, so compile errors "
            "show; running, checking and grading it need such a GPU."
        )


def _compile_for_target(spec) -> tuple[bool, str]:
    """verdicts.compile_for_target, and what it said; or, where NVRTC's Python bindings
    are missing (a Colab runtime may lack them), False and what to install."""
    try:
        return True, compile_for_target(spec)
    except NvrtcUnavailable as e:
        return False, f"not compiled here either: {e}, then run this cell again"


def check(path, quick: bool = False):
    """Run the kernel in `path` on the suite; its report, which a notebook shows as a
    table (the same as `python -m autograder check` prints)."""
    from ..judge.job import check as run_check

    spec = from_file(path)
    try:
        if why := out_of_reach(step_of(spec), backend()):
            print(f"{_compile_for_target(spec)[1]}\nnot run: {why}")
            return None
        report = run_check(
            spec, SMALL if quick else SUITE, case_timeout_s=CASE_TIMEOUT_S,
            backend=backend(),
        )  # fmt: skip
    except NotImplementedYet as e:  # from compile_for_target
        print(e)
        return None
    except CompileError as e:
        stub = NOT_IMPLEMENTED in e.log
        print(
            f"{NOT_IMPLEMENTED}: replace the #error line in {e.filename} with your code"
            if stub
            else in_cell_lines(str(e), e.filename)
        )
        return None
    name = Path(path).name
    report.cases = [replace(c, message=in_cell_lines(c.message, name)) for c in report.cases]
    report.error = in_cell_lines(report.error, name)
    return report


def assert_correct(path, suite: str) -> None:
    """A grade cell: the kernel is right on every shape of `suite` ('whole tiles' or 'odd')."""
    evaluation = _evaluate(path, suite, backend())
    if evaluation is None:
        return
    if evaluation.problems[suite]:
        raise GradeFailed(in_cell_lines(evaluation.problems[suite], Path(path).name))
    if evaluation.not_run(suite):
        print(evaluation.not_run(suite))


def assert_fast_enough(path) -> None:
    """A grade cell: the kernel is right on whole tiles and reaches the step's minimum
    GFLOP/s on this GPU, in verified launches (autograder.judge.timing).

    Without a GPU it cannot run: it says so on stderr and raises nothing. nbgrader
    scores a grade cell that writes to stderr zero, as one that raises, while a
    headless run of a right notebook (jupyter nbconvert --execute) still succeeds.
    A kernel built for one GPU alone (sm_90a) is compiled all the same, and says which."""
    reason = gpu.unavailable_reason()
    if reason and not step_of(from_file(path)).target:
        print(
            f"the performance test needs a GPU ({reason}): it scores zero here",
            file=sys.stderr,
        )
        return
    evaluation = _evaluate(path, None, backend() if reason else "gpu", timings=1)
    if evaluation is None:
        return
    speed = evaluation.speed
    if not speed.passed:
        raise GradeFailed(speed.message)
    print(speed.message)


# Step 00: Python functions, checked in the notebook's own process.
PY_SHAPES = {
    "small": ((2, 3, 4), (8, 8, 8), (16, 12, 10)),
    "odd": ((1, 1, 1), (1, 7, 5), (7, 1, 3), (13, 17, 3), (31, 29, 37)),
}


def _refuse_stub(fn) -> None:
    import inspect

    if NOT_IMPLEMENTED in inspect.getsource(fn):
        raise GradeFailed(f"{NOT_IMPLEMENTED}: write {fn.__name__} where the #error comment stands")


def _matmul_problem(fn, M: int, N: int, K: int) -> str | None:
    import numpy as np

    rng = np.random.default_rng()
    A, B = rng.standard_normal((M, K)), rng.standard_normal((K, N))
    got = fn(A.tolist(), B.tolist())
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return f"{M}x{N}x{K}: returned {type(got).__name__}, not an M x N list of rows"
    if got.shape != (M, N):
        return f"{M}x{N}x{K}: the result is {got.shape}, should be ({M}, {N})"
    expected = A @ B
    wrong = ~np.isclose(got, expected, rtol=1e-9, atol=1e-9)
    if wrong.any():
        i, j = (int(v) for v in np.argwhere(wrong)[0])
        return (
            f"{M}x{N}x{K}: {int(wrong.sum())} of {M * N} elements wrong, first C[{i}][{j}] = "
            f"{got[i, j]:.6g}, should be {expected[i, j]:.6g}"
        )
    return None


def assert_matmul(fn, suite: str) -> None:
    """A grade cell for step 00: fn(A, B) is the product on every shape of the suite."""
    _refuse_stub(fn)
    problems = [p for shape in PY_SHAPES[suite] if (p := _matmul_problem(fn, *shape))]
    if problems:
        raise GradeFailed("; ".join(problems))


def assert_gflops(fn) -> None:
    _refuse_stub(fn)
    for M, N, K, seconds in ((1000, 1000, 1000, 2.0), (3, 5, 7, 1e-6)):
        got, expected = fn(M, N, K, seconds), gflops_of(M, N, K, seconds)
        if got is None or abs(got - expected) > 1e-9 * expected:
            raise GradeFailed(
                f"gflops({M}, {N}, {K}, {seconds}) is {got}, should be "
                f"{expected:g}: count 2 FLOPs per multiply-add"
            )


def check_python(matmul, matmul_ikj, gflops) -> None:
    """Step 00's check cell: right or wrong, and how fast against NumPy."""
    import time

    import numpy as np

    for fn in (matmul, matmul_ikj):
        try:
            _refuse_stub(fn)
            problems = [
                p for s in PY_SHAPES["small"] + PY_SHAPES["odd"] if (p := _matmul_problem(fn, *s))
            ]
        except GradeFailed as e:
            print(e)
            continue
        print(f"{fn.__name__}: " + ("; ".join(problems) if problems else "right on every shape"))
    n = 96
    A = np.random.default_rng().standard_normal((n, n))
    rows = []
    for name, run in (
        ("matmul (i-j-k)", lambda: matmul(A.tolist(), A.tolist())),
        ("matmul_ikj (i-k-j)", lambda: matmul_ikj(A.tolist(), A.tolist())),
        ("NumPy (BLAS)", lambda: A @ A),
    ):
        start = time.perf_counter()
        run()
        seconds = time.perf_counter() - start
        rows.append((name, seconds))
    for name, seconds in rows:
        rate = gflops(n, n, n, seconds) if gflops(1, 1, 1, 1.0) is not None else None
        shown = f"{rate:.4f} GFLOP/s" if rate is not None else "(write gflops to see GFLOP/s)"
        print(f"{name:<20} {seconds * 1e3:9.2f} ms  {shown}")

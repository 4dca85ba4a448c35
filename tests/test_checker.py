"""The checker's judgement, proven on NumPy stand-ins for kernels (no GPU needed).

Each stand-in gets what a CUDA kernel gets: flat float32 views into padded
buffers. The buggy ones do what a buggy kernel would, writing through the
buffer beneath the view where a real kernel would write out of bounds.
"""

import numpy as np
import pytest

from autograder.judge import checker
from autograder.judge.checker import Shape
from autograder.run.faults import KernelFault

SHAPE = Shape(127, 129, 65)


def correct(M, N, K, alpha, A, B, beta, C):
    C[:] = (alpha * (A.reshape(M, K) @ B.reshape(K, N)) + beta * C.reshape(M, N)).ravel()


def run(launch, shape=SHAPE, beta=checker.BETA):
    return checker.run_case(np, launch, shape, beta, np.random.default_rng())


def beneath(view):
    """The padded buffer under a view, and the view's offset in it."""
    base = view.base
    return base, (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 4


@pytest.mark.parametrize("shape", checker.SMALL + checker.MEDIUM, ids=str)
@pytest.mark.parametrize("beta", [0.0, checker.BETA])
def test_a_correct_float32_kernel_passes_every_shape(shape, beta):
    result = run(correct, shape, beta)
    assert result.ok, result.message


def test_tolerance_catches_a_single_dropped_term_of_k_at_large_k():
    def drops_last_k(M, N, K, alpha, A, B, beta, C):
        A2 = A.reshape(M, K)[:, :-1]
        B2 = B.reshape(K, N)[:-1]
        C[:] = (alpha * (A2 @ B2) + beta * C.reshape(M, N)).ravel()

    result = run(drops_last_k, Shape(64, 64, 2048))
    assert not result.ok
    assert result.max_error > 100  # far outside the tolerance, not a near miss


def test_missing_n_bound_is_reported_as_a_write_past_the_end():
    def no_n_bound(M, N, K, alpha, A, B, beta, C):
        correct(M, N, K, alpha, A, B, beta, C)
        buf, at = beneath(C)
        for row in range(M):  # columns N..N+2 land in the next row, or past the end
            buf[at + row * N + N : at + row * N + N + 3] = 1.0

    result = run(no_n_bound)
    assert "wrote 3 floats past the end of C" in result.message
    assert "rows 1–126, columns 0–2" in result.message  # row 0 spills into row 1


def test_unwritten_last_columns_name_the_bound_on_n():
    def short_of_n(M, N, K, alpha, A, B, beta, C):
        full = C.copy()
        correct(M, N, K, alpha, A, B, beta, full)
        C.reshape(M, N)[:, :-9] = full.reshape(M, N)[:, :-9]

    result = run(short_of_n, beta=0.0)
    assert "the last 9 columns of every row were never written" in result.message
    assert "bound on N" in result.message and "never written" in result.message


def test_an_unwritten_element_is_named():
    def skips_0_5(M, N, K, alpha, A, B, beta, C):
        keep = C[5]
        correct(M, N, K, alpha, A, B, beta, C)
        C[5] = keep

    assert "element (0, 5) was never written" in run(skips_0_5).message


def test_ignored_beta_is_named():
    def no_beta(M, N, K, alpha, A, B, beta, C):
        correct(M, N, K, alpha, A, B, 0.0, C)

    assert "ignores beta" in run(no_beta).message
    assert run(no_beta, beta=0.0).ok


def test_ignored_alpha_is_named():
    def no_alpha(M, N, K, alpha, A, B, beta, C):
        correct(M, N, K, 1.0, A, B, beta, C)

    assert "ignores alpha" in run(no_alpha).message


def test_beta_zero_with_a_finite_old_c_is_fine():
    """BLAS semantics: with beta = 0, computing beta * C on the old C must not poison it."""

    def reads_c(M, N, K, alpha, A, B, beta, C):
        assert np.isfinite(C).all()
        correct(M, N, K, alpha, A, B, beta, C)

    assert run(reads_c, beta=0.0).ok


def one_row_past(A, M, K):
    """A's rows, each read one row too far: the last one past the end of A."""
    buf, at = beneath(A)
    return buf[at : at + (M + 1) * K].reshape(M + 1, K)[1:]


def careful(M, N, K, alpha, A, B, beta, C):
    """correct, leaving C unread where beta = 0, as BLAS lets a kernel (and from step 08
    on, the course's kernels do)."""
    old = beta * C.reshape(M, N) if beta else 0.0
    C[:] = (alpha * (A.reshape(M, K) @ B.reshape(K, N)) + old).ravel()


def unread(launch, shape=SHAPE, beta=0.0):
    """run, for a kernel whose step leaves C unread where beta = 0."""
    return checker.run_case(np, launch, shape, beta, np.random.default_rng(), leaves_c_unread=True)


@pytest.mark.parametrize("beta", [0.0, checker.BETA])
def test_a_kernel_that_leaves_c_unread_where_beta_is_0_passes_with_c_of_infinity(beta):
    assert unread(careful, beta=beta).ok


@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply")  # 0 * inf
def test_a_kernel_that_reads_c_where_beta_is_0_is_told_so_where_its_step_leaves_c_unread():
    # Right with a finite C (test_beta_zero_with_a_finite_old_c_is_fine), as steps 01 to
    # 07 are; from step 08 on, C holds infinity where beta = 0, and 0 * inf is NaN.
    result = unread(correct)
    assert not result.ok and result.message.startswith(checker.READ_UNREAD_C), result.message
    assert "(first: (0, 0) is nan" in result.message
    assert unread(correct, beta=checker.BETA).ok


def test_a_kernel_that_writes_nothing_leaves_c_of_infinity_never_written():
    result = unread(lambda *launch: None)
    assert "no element of C was written" in result.message, result.message
    assert checker.READ_UNREAD_C not in result.message


def test_nan_from_past_a_is_not_taken_for_a_read_of_c_of_infinity():
    # NaN where C held infinity, and the case fails with a finite C too: not C's doing.
    def reads_past_a(M, N, K, alpha, A, B, beta, C):
        careful(M, N, K, alpha, one_row_past(A, M, K).ravel(), B, beta, C)

    result = unread(reads_past_a)
    assert "read outside A or B" in result.message, result.message
    assert checker.READ_UNREAD_C not in result.message


def test_reading_past_a_or_b_shows_as_nan():
    def reads_past_a(M, N, K, alpha, A, B, beta, C):
        correct(M, N, K, alpha, one_row_past(A, M, K).ravel(), B, beta, C)

    message = run(reads_past_a).message
    assert "read outside A or B" in message


def test_a_result_that_changes_between_runs_says_so_and_guesses_no_cause():
    # A race, or a value read before it was written: the case cannot tell, so it says
    # what it saw; the report's diagnosis names the cause from the evidence.
    def racy(M, N, K, alpha, A, B, beta, C):
        correct(M, N, K, alpha, A, B, beta, C)
        C[np.random.default_rng().integers(C.size)] += 1.0

    message = run(racy).message
    assert checker.RACED in message, message
    assert "race" not in message.replace(checker.RACED, ""), message


def test_first_wrong_element_shows_got_and_expected():
    def off_by_one(M, N, K, alpha, A, B, beta, C):
        correct(M, N, K, alpha, A, B, beta, C)
        C[-1] += 1000.0

    message = run(off_by_one).message
    assert f"element ({SHAPE.M - 1}, {SHAPE.N - 1}) is wrong" in message and "should be" in message


def test_a_shape_is_skipped_when_the_kernel_is_too_slow_for_it():
    calls = []

    def slow(M, N, K, alpha, A, B, beta, C):
        correct(M, N, K, alpha, A, B, beta, C)
        calls.append(M)

    shapes = (Shape(3, 3, 3),) + checker.MEDIUM + checker.LARGE
    budget = checker.Budget({checker.MEDIUM[0]: 1e-12, checker.LARGE[0]: 0.0}, frozenset())
    events = list(checker.iter_suite(np, slow, shapes, seed=1, budget=budget))
    skipped = [e for e in events if isinstance(e, checker.Skipped)]
    assert str(skipped[0]).startswith("1001x777x513 not run: at this kernel's speed here")
    assert skipped[0].costs  # the kernel's own slowness
    assert str(skipped[1]).startswith("4095x4097x4093 not run: too large for this backend")
    assert not skipped[1].costs  # never run on this backend
    assert calls == [3, 3]  # only the small shape ran, with both betas


def test_a_one_beta_shape_runs_with_beta_nonzero_only():
    events = checker.iter_suite(
        np, correct, (Shape(3, 3, 3),), budget=checker.Budget({}, frozenset({Shape(3, 3, 3)}))
    )
    assert [e.beta for e in events if isinstance(e, checker.CaseResult)] == [checker.BETA]


def test_a_fault_reported_by_the_backend_fails_the_case_with_its_message():
    def faulting(M, N, K, alpha, A, B, beta, C):
        raise KernelFault("thread (0, 0, 0) of block (0, 0, 0) read outside A")

    result = run(faulting)
    assert not result.ok and result.message.endswith("read outside A")


def test_nan_in_both_runs_is_not_called_a_race():
    def reads_nan(M, N, K, alpha, A, B, beta, C):
        correct(M, N, K, alpha, A, B, beta, C)
        C[7] = np.nan

    message = run(reads_nan).message
    assert "race" not in message and "element (0, 7) is wrong" in message


def test_report_says_which_cases_failed():
    report = checker.Report("k", "cpu", seed=1)
    report.cases = [
        checker.CaseResult(SHAPE, 0.0, True, max_error=0.1),
        checker.CaseResult(SHAPE, -0.75, False, "the last 9 columns ..."),
    ]
    text = str(report)
    assert not report.ok and "FAILED: 1 of 2 cases correct" in text
    assert "FAIL 127x129x65, beta=-0.75" in text


def test_the_report_says_which_tolerance_applied():
    report = checker.Report("k", "cpu", seed=1, tolerance=checker.describe_tolerance(2.0**-11))
    assert "tolerance: FP32, |C - exact| <= (8 + 2 sqrt(K)) u" in str(report)
    assert "inputs rounded by r = 0.000488" in str(report)


def test_a_notebook_shows_the_report_once_as_a_table_not_as_dataclass_fields():
    report = checker.Report("k", "cpu", seed=1)
    report.cases = [checker.CaseResult(SHAPE, 0.0, True, max_error=0.1)]
    assert repr(report) == str(report) and "CaseResult(" not in repr(report)
    html = report._repr_html_()
    assert "<table>" in html and "127x129x65, beta=0" in html and "PASSED: 1 of 1" in html


def test_a_shape_the_kernel_was_too_slow_for_fails_its_suite_and_one_never_run_is_said():
    from autograder.judge import verdicts

    report = checker.Report("k", "cpu", seed=1)
    report.cases = [checker.CaseResult(checker.SMALL[0], 0.0, True)]
    report.skipped = [
        checker.Skipped(checker.MEDIUM[0], "at this kernel's speed here ...", costs=True),
        checker.Skipped(checker.LARGE[0], "too large for this backend", costs=False),
    ]
    problem = verdicts._problem(report, verdicts.SUITES["odd"])
    assert "1001x777x513 not run: at this kernel's speed" in problem
    assert "4095x4097x4093" not in problem  # the backend's doing, not the kernel's
    evaluation = verdicts.Evaluation(report, {"odd": problem})
    assert "4095x4097x4093 not run: too large" in evaluation.not_run("odd")
    assert "1 of 1 cases run correct; 1001x777x513 not run" in report.verdict
    assert "\n  skip 4095x4097x4093 not run: too large" in str(report)

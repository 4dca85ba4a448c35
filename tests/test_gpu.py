"""On a GPU: every reference kernel passes the whole suite, and the checker
catches bugs planted in them, each with the message a learner needs.

A planted bug is one substitution in a reference kernel's source (nothing is
re-typed), and each substitution must apply exactly once, so a change to the
kernel cannot silently leave a "bug" that is no bug.
"""

from dataclasses import replace

import pytest

from autograder import KernelSpec, bench, registry, sandbox
from autograder.compiler import CompileError

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("step", registry.STEPS, ids=lambda s: s.name)
def test_reference_kernel_passes_the_whole_suite(step):
    report = sandbox.check(KernelSpec.from_step(step))
    assert report.ok, str(report)
    assert not report.notes, "the large shape was skipped:\n" + str(report)


def planted(step_id: str, old: str, new: str) -> KernelSpec:
    step = registry.step(step_id)
    source = step.source()
    assert source.count(old) == 1, f"{old!r} must occur once in {step.path.name}"
    return replace(KernelSpec.from_step(step), source=source.replace(old, new))


BOUNDS = "if (row < M && col < N) {"
PLANTED = {
    "missing N bound": (planted("02", BOUNDS, "if (row < M) {"), "past the end of C"),
    "missing M bound": (planted("05", BOUNDS, "if (col < N) {"), "past the end of C"),
    "unwritten element": (
        planted("01", BOUNDS, "if (row < M && col < N && !(row == 0 && col == 5)) {"),
        "element (0, 5) was never written",
    ),
    "beta ignored": (
        planted("04", "alpha * acc[m] + beta * C[row * N + col]", "alpha * acc[m]"),
        "ignores beta",
    ),
    "K loop one short": (planted("01", "k < K;", "k < K - 1;"), "wrong"),
    "missing K bound in the tile load": (
        planted("03", "(row < M && k0 + tx < K)", "(row < M)"),
        "wrong",
    ),
    "float4 without the alignment fallback": (
        planted("06", "const bool vecB = N % 4 == 0 && aligned16(B);", "const bool vecB = true;"),
        "cudaErrorMisalignedAddress",
    ),
    "endless loop": (
        planted(
            "02",
            "float acc = 0.0f;",
            "float acc = 0.0f;\n    while (*(volatile float*)A == *(volatile float*)A) {}",
        ),
        "did not finish within",
    ),
}
RACES = {
    "missing first __syncthreads": planted(
        "03", "__syncthreads();  // the tiles are complete", "// the tiles are complete"
    ),
    "missing second __syncthreads": planted(
        "03", "__syncthreads();  // everyone is done reading", "// everyone is done reading"
    ),
}


@pytest.mark.parametrize("bug", PLANTED, ids=str)
def test_checker_catches_planted_bug_with_the_right_message(bug):
    spec, expected = PLANTED[bug]
    report = sandbox.check(spec, case_timeout_s=10)
    assert not report.ok
    messages = " / ".join([c.message for c in report.failures] + [report.error])
    assert expected in messages, str(report)


@pytest.mark.parametrize("bug", RACES, ids=str)
def test_checker_catches_a_missing_barrier(bug):
    report = sandbox.check(RACES[bug])
    assert not report.ok, str(report)


def test_compile_error_on_the_gpu_path_names_the_learners_line():
    spec = planted("02", "float acc = 0.0f;", "float acc = 0.0f")
    with pytest.raises(CompileError, match=r"02_coalescing.cu\(\d+\): error"):
        sandbox.check(spec)


def test_bench_times_a_kernel_and_cublas():
    rows = bench.bench(
        {"07": KernelSpec.from_step(registry.step("07"))}, sizes=("512",), progress=False
    )
    (row,) = rows
    assert row.gflops > 0 and row.cublas_gflops > 0 and 0 < row.pct_peak < 100
    assert "07" in bench.table(rows)

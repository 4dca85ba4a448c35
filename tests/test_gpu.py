"""On a GPU: every reference kernel passes the whole suite, and the checker
catches the bugs planted in them (tests/planted.py) with the message a
learner needs.
"""

import pytest
from planted import PLANTED, RACES, planted

from autograder import KernelSpec, judge
from autograder.ladder import registry
from autograder.measure import bench
from autograder.run.compiler import CompileError

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("step", registry.STEPS, ids=lambda s: s.name)
def test_reference_kernel_passes_the_whole_suite(step):
    report = judge.check(KernelSpec.from_step(step))
    assert report.ok, str(report)
    assert not report.skipped, "the large shape was not run:\n" + str(report)


@pytest.mark.parametrize("bug", PLANTED, ids=str)
def test_checker_catches_planted_bug_with_the_right_message(bug):
    spec, expected = PLANTED[bug]
    report = judge.check(spec, case_timeout_s=10)
    assert not report.ok
    messages = " / ".join([c.message for c in report.failures] + [report.error])
    assert expected in messages, str(report)


@pytest.mark.parametrize("bug", RACES, ids=str)
def test_checker_catches_a_missing_barrier(bug):
    report = judge.check(RACES[bug])
    assert not report.ok, str(report)


def test_compile_error_on_the_gpu_path_names_the_learners_line():
    spec = planted("02", "float acc = 0.0f;", "float acc = 0.0f")
    with pytest.raises(CompileError, match=r"02_coalescing.cu\(\d+\): error"):
        judge.check(spec)


def test_bench_times_a_kernel_and_cublas():
    rows = bench.bench(
        {"07": KernelSpec.from_step(registry.step("07"))}, sizes=("512",), progress=False
    )
    (row,) = rows
    assert row.gflops > 0 and row.cublas_gflops > 0 and 0 < row.pct_peak < 100
    assert "07" in bench.table(rows)

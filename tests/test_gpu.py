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


@pytest.mark.gpu
def test_reductions_at_new_sizes_build_no_new_kernels(tmp_path):
    # CuPy's CUB reductions are built for each size they meet (about 2 s each on a
    # machine with an empty cache), and the checker reduces C at every case's shape:
    # importing the package leaves CuPy its own reductions, built once for every size.
    import os
    import subprocess
    import sys

    code = (
        "import os, autograder, cupy\n"
        "for n in (1000, 1001, 4097, 1 << 20):\n"
        "    assert not bool((cupy.ones(n) < 0).any()) and float(cupy.ones(n).max()) == 1\n"
        f"    print(len(os.listdir({str(tmp_path)!r})))\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "CUPY_ACCELERATORS"}
    environment["CUPY_CACHE_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    built = [int(n) for n in done.stdout.split()]
    assert len(built) == 4 and built[0] == built[-1], built

"""The command line: help, compile without a GPU, clear one-line errors, exit codes."""

import re
import subprocess
import sys

import pytest

from autograder.ladder import registry
from autograder.run import gpu

NO_GPU = gpu.unavailable_reason() is not None


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.mark.parametrize("command", [[], ["compile"], ["check"], ["bench"]])
def test_every_command_has_help(command):
    result = run(*command, "--help")
    assert result.returncode == 0
    assert "usage: python -m autograder" in result.stdout


def test_compile_reports_resources_of_a_reference_kernel_without_a_gpu():
    result = run("compile", str(registry.step("05").path), "--arch", "sm_75")
    assert result.returncode == 0, result.stderr
    assert "sgemm_blocktiling_2d<128, 128, 8, 8, 8> on sm_75:" in result.stdout
    assert "registers" in result.stdout and "warning" not in result.stdout


def test_compile_error_exits_2_with_the_learners_line(tmp_path):
    broken = tmp_path / "mine.cu"
    broken.write_text('extern "C" __global__ void k(int M) {\n  int x = ;\n}\n')
    result = run("compile", str(broken))
    assert result.returncode == 2
    assert "mine.cu(2): error: expected an expression" in result.stderr


def test_compile_names_an_explicit_instantiation(tmp_path):
    source = registry.step("05").source()
    path = tmp_path / "05_mine.cu"
    path.write_text(source)
    result = run(
        "compile", str(path), "--kernel", "sgemm_blocktiling_2d<128, 128, 8, 4, 4>", "--like", "05"
    )
    assert result.returncode == 0, result.stderr
    assert "<128, 128, 8, 4, 4> on sm_90" in result.stdout


def test_a_template_needs_to_know_its_parameters(tmp_path):
    path = tmp_path / "mine.cu"
    path.write_text(registry.step("05").source().replace("sgemm_blocktiling_2d", "sgemm_mine"))
    result = run("check", str(path))
    assert result.returncode == 2
    assert "is a template: give --like STEP" in result.stderr


def test_an_unknown_step_is_named():
    result = run("check", str(registry.step("01").path), "--like", "42")
    assert result.returncode == 2
    assert "no step '42'; the steps are 00_cpu_triple_loop, 01_naive" in result.stderr


@pytest.mark.parametrize(
    "args",
    [["check"], ["check", "x.cu", "--block", "0x3"], ["compile", "missing.cu"], ["frobnicate"]],
)
def test_usage_errors_exit_2(args):
    result = run(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
@pytest.mark.parametrize(
    "args", [["check", str(registry.step("03").path), "--backend", "gpu"], ["bench", "01"]]
)
def test_commands_that_need_a_gpu_say_so_in_one_line(args):
    result = run(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs an NVIDIA GPU" in lines[0]


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
@pytest.mark.slow
def test_check_falls_back_to_the_cpu_and_says_timings_need_a_gpu():
    result = run("check", str(registry.step("05").path), "--quick")
    assert result.returncode == 0, result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("No GPU (") and "checking correctness on the CPU" in first
    assert "timings need a GPU" in first and "PASSED" in result.stdout


@pytest.mark.slow
def test_check_exits_1_for_a_wrong_kernel_on_the_cpu(tmp_path):
    path = tmp_path / "01_wrong.cu"
    path.write_text(registry.step("01").source().replace("k < K;", "k < K - 1;"))
    result = run("check", str(path), "--backend", "cpu", "--quick")
    assert result.returncode == 1
    assert "FAILED" in result.stdout and "FAIL 17x19x3" in result.stdout


@pytest.mark.slow
def test_check_leads_with_the_verdict_and_its_causes_and_leaves_details_to_verbose(tmp_path):
    path = tmp_path / "01_wrong.cu"
    path.write_text(registry.step("01").source().replace("k < K;", "k < K - 1;"))
    lines = run("check", str(path), "--backend", "cpu", "--quick").stdout.splitlines()
    assert lines[1].startswith("FAILED: 0 of 20 cases correct"), lines
    causes = [line for line in lines if line.startswith("  [")]
    assert causes and lines[2 : 2 + len(causes)] == causes  # right under the verdict
    # "[1] 14 of 20 cases (...): ..." or, for a cause only one case shows, "[3] 1x300x70, ...: ..."
    counts = [re.match(r"  \[\d\] (?:(\d+) of 20 cases)?", c).group(1) or 1 for c in causes]
    assert sum(map(int, counts)) == 20, causes
    header = next(line for line in lines if line.startswith("check sgemm_naive"))
    assert header.endswith("; confined) (seed " + header.split("(seed ")[1]), header
    assert all(line.endswith("]") for line in lines if line.startswith("  FAIL"))
    verbose = run("check", str(path), "--backend", "cpu", "--quick", "--verbose").stdout
    assert "  confinement: confined by seccomp" in verbose
    assert re.search(r"FAIL 17x19x3, beta=0 +\[\d\] \w+", verbose), verbose  # its own message


def test_the_tolerance_comes_from_the_step_judged_not_the_file_name(tmp_path):
    from autograder.run.kernel import from_source

    source = registry.step("11").source()
    by_name = from_source(source, "11_tensor_core_tf32.cu")
    by_hand = from_source(
        source, "11_tensor_core_tf32.cu", kernel=by_name.name_expression, block=(256, 1),
        tile=(128, 128),
    )  # fmt: skip
    assert by_name.input_roundoff > 0 and by_hand.input_roundoff == 0


def test_bench_takes_the_sweep_or_sizes_not_both():
    result = run("bench", "--sweep", "--sizes", "4096")
    assert result.returncode == 2
    assert "give --sweep or --sizes, not both" in result.stderr

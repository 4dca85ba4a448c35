"""On a GPU, compute-sanitizer finds what the cases cannot see: a read outside A or
B whose value goes unused, and a race that happens not to show. Its reports are
turned into the CPU backend's words: the matrix, the element, how far outside, the
thread, the block, the learner's line.

The logs under tests/data were written by compute-sanitizer 2025.3.1 on an H100
(the planted kernels of tests/planted.py, at checker.EXACT_SIZE).
"""

import json
import re
from pathlib import Path

import pytest
from planted import HALF_A_TILE, RACES, UNSAFE

from autograder import KernelSpec, judge
from autograder.judge import checker, sanitizer
from autograder.judge.checker import EXACT_SIZE, SMALL
from autograder.ladder import registry

DATA = Path(__file__).parent / "data"


def logged(name: str) -> tuple[str, dict]:
    placed = DATA / f"{name}.json"
    return (DATA / f"{name}.log").read_text(), json.loads(placed.read_text())


def test_a_read_past_the_end_of_b_is_named_with_its_element_thread_block_and_line():
    log, matrices = logged("memcheck_guard_on_threadidx")
    accesses = sanitizer.parse(log)
    assert len(accesses) == 4  # the print limit
    text = sanitizer.explain(accesses, matrices, "03_smem_tiling.cu", sanitizer.errors(log))
    # B is 65 x 129 floats: its last element is B[8384], so B[8385] is 1 past the end.
    assert text.startswith(
        "thread (1, 0, 0) of block (4, 2, 0) read B[8385], 1 float past the end of B, at "
        "03_smem_tiling.cu:31 (262 bad accesses in all): the kernel read outside B,"
    ), text


def test_an_address_before_a_matrix_is_named_before_its_start():
    base = 1 << 40
    matrices = {"A": [base, 400], "B": [base + 4096, 400], "C": [base + 8192, 400]}
    access = sanitizer.Access("read", 4, base + 4096 - 8, False, (0, 0, 0), (0, 0, 0), 7)
    assert "read B[-2], 2 floats before the start of B, at k.cu:7" in sanitizer.explain(
        [access], matrices, "k.cu"
    )


def test_a_read_past_step_09s_workspace_is_named_as_one_past_partial():
    base = 1 << 40
    matrices = {"A": [base, 400], "B": [base + 4096, 400], "C": [base + 8192, 400]}
    matrices["partial"] = [base + 16384, 800]
    access = sanitizer.Access("read", 4, base + 16384 + 800, False, (0, 0, 0), (0, 3, 0), 34)
    text = sanitizer.explain([access], matrices, "09_by_shape.cu")
    assert text.startswith(
        "thread (0, 0, 0) of block (0, 3, 0) read partial[200], 1 float past the end of "
        "partial, at 09_by_shape.cu:34: the kernel read outside partial,"
    ), text


def test_a_misaligned_float4_names_the_matrix_it_reads():
    log, matrices = logged("memcheck_float4_misaligned")
    text = sanitizer.explain(sanitizer.parse(log), matrices, "06_vectorized.cu")
    assert text.startswith(
        "thread (32, 0, 0) of block (0, 0, 0) made a misaligned 16-byte access to B at an "
        "address that is not a multiple of 16 bytes, at 06_vectorized.cu:29"
    ), text


def test_a_race_names_both_lines():
    log, _ = logged("racecheck_missing_first_syncthreads")
    races = sanitizer.parse_races(log)
    assert races and races[0].first == ("Write", 31) and races[0].second[1] == 36
    text = sanitizer.explain_races(races, "03_smem_tiling.cu")
    assert "the write at 03_smem_tiling.cu:31 and the read at 03_smem_tiling.cu:36" in text
    assert "a missing __syncthreads()" in text


def test_a_race_in_a_kernel_of_mbarriers_points_at_its_releases_not_at_syncthreads():
    """Step 12's buffers are handed over by mbarriers: a race there is a buffer refilled
    while a thread still reads it, and __syncthreads() is not the answer."""
    log, _ = logged("racecheck_missing_first_syncthreads")
    text = sanitizer.explain_races(sanitizer.parse_races(log), "12_wgmma_tf32.cu", True)
    assert "are not separated by a barrier" in text and "__syncthreads" not in text
    assert "arrives on the mbarrier that releases it, after its last read" in text


def test_a_clean_log_finds_nothing():
    log, matrices = logged("memcheck_clean")
    assert sanitizer.parse(log) == [] and sanitizer.explain([], matrices, "k.cu") == ""
    assert sanitizer.parse_races(log) == []


def test_racecheck_runs_only_where_there_is_shared_memory():
    assert sanitizer.tools_for(KernelSpec.from_step(registry.step("01"))) == ("memcheck",)
    assert "racecheck" in sanitizer.tools_for(KernelSpec.from_step(registry.step("03")))


# ---- on a GPU --------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("bug", UNSAFE, ids=str)
def test_a_kernel_right_only_by_luck_fails_on_a_gpu_with_the_access_and_line(bug):
    if sanitizer.find() is None:
        pytest.skip("compute-sanitizer is not installed")
    spec, phrase = UNSAFE[bug]
    report = judge.check(spec, shapes=SMALL, backend="gpu")
    assert not report.ok, str(report)
    assert all(c.ok for c in report.cases if not c.under), "only the sanitizer's case fails"
    text = report.failures[0].message
    assert phrase in text, text
    assert re.search(
        rf"thread \(\d+, \d+, 0\) of block \(\d+, \d+, 0\) read (A|B|partial)\[\d+\], \d+ "
        rf"floats? (past the end|before the start) of (A|B|partial), at {spec.filename}:\d+",
        text,
    ), text


@pytest.mark.gpu
@pytest.mark.parametrize("bug", RACES, ids=str)
def test_a_race_fails_on_a_gpu_naming_the_racing_lines(bug):
    if sanitizer.find() is None:
        pytest.skip("compute-sanitizer is not installed")
    report = judge.check(RACES[bug], shapes=(EXACT_SIZE,), backend="gpu")
    assert not report.ok, str(report)
    text = " / ".join(c.message for c in report.failures)
    assert re.search(r"race on shared memory: the \w+ at 03_smem_tiling\.cu:\d+", text), text


@pytest.mark.gpu
def test_an_honest_kernel_passes_under_the_sanitizer_and_the_report_says_how():
    report = judge.check(KernelSpec.from_step(registry.step("05")), shapes=(EXACT_SIZE,))
    assert report.ok, str(report)
    assert "compute-sanitizer memcheck and racecheck" in report.bounds, report.bounds


@pytest.mark.gpu
def test_without_compute_sanitizer_the_report_says_bounds_were_not_checked(monkeypatch):
    monkeypatch.setattr(sanitizer, "find", lambda: None)
    report = judge.check(KernelSpec.from_step(registry.step("05")), shapes=(EXACT_SIZE,))
    assert report.bounds.startswith("NOT CHECKED"), report.bounds
    assert "bounds: NOT CHECKED" in str(report)


@pytest.mark.gpu
def test_nan_from_unwritten_shared_memory_on_a_gpu_is_not_blamed_on_bounds():
    if sanitizer.find() is None:
        pytest.skip("compute-sanitizer is not installed")
    report = judge.check(HALF_A_TILE, shapes=SMALL, backend="gpu")
    assert not report.ok, str(report)
    assert all(checker.NAN_FROM_OUTSIDE not in c.message for c in report.cases), str(report)


@pytest.mark.gpu
def test_a_kernel_that_does_not_finish_under_the_sanitizer_fails_the_check(monkeypatch):
    if sanitizer.find() is None:
        pytest.skip("compute-sanitizer is not installed")
    # Stands in for a kernel that spins once it sees it is checked: the launch began
    # (the target wrote where A, B and C lie) and did not end in time.
    real_wait = sanitizer.subprocess.Popen.wait

    def slow(process, timeout=None):
        real_wait(process)
        if timeout is not None:  # the wait with a limit, not the one after kill()
            raise sanitizer.subprocess.TimeoutExpired(process.args, timeout)

    monkeypatch.setattr(sanitizer.subprocess.Popen, "wait", slow)
    report = judge.check(KernelSpec.from_step(registry.step("05")), shapes=(EXACT_SIZE,))
    assert not report.ok
    assert "a kernel that behaves differently when it is checked fails" in str(report)

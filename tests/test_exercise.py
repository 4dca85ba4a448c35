"""The exercise API's own rules: performance thresholds and the step-00 checks."""

import re

import pytest

from autograder.course import exercise
from autograder.judge import verdicts
from autograder.ladder import registry


def test_threshold_is_a_fraction_of_the_reference_timed_on_the_same_gpu():
    config = verdicts.grading_config()
    minimum, source = verdicts.threshold(registry.step("05"), "Tesla T4", 2000.0, config)
    fraction = config["fraction_of_reference"]
    assert minimum == fraction * 2000.0 and "timed just now on this Tesla T4" in source


def test_an_instructor_can_set_absolute_minimums_per_gpu():
    config = {**verdicts.grading_config(), "absolute_gflops": {"Tesla T4": {"05": 1500}}}
    assert verdicts.threshold(registry.step("05"), "Tesla T4", 9999.0, config)[0] == 1500
    assert verdicts.threshold(registry.step("06"), "Tesla T4", 1000.0, config)[0] < 1000


def test_the_speed_test_scores_zero_without_a_gpu_and_says_why_on_stderr(monkeypatch, capsys):
    """nbgrader scores a grade cell that writes to stderr zero; raising nothing lets a
    headless run of a right notebook exit 0 (tests/test_notebooks_execute.py)."""
    monkeypatch.setattr(exercise.gpu, "unavailable_reason", lambda: "no CUDA GPU found")
    exercise.assert_fast_enough(registry.step("03").path)
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err == (
        "the performance test needs a GPU (no CUDA GPU found): it scores zero here\n"
    )


def test_a_failing_grade_cell_shows_the_graders_message_alone(tmp_path, monkeypatch):
    from planted import MISSING_ROW_BOUND

    monkeypatch.chdir(tmp_path)
    kernel = tmp_path / MISSING_ROW_BOUND.filename
    kernel.write_text(MISSING_ROW_BOUND.source.replace("float regM[TM];", "float regM[TM] = ;"))
    with pytest.raises(exercise.GradeFailed) as caught:
        exercise.assert_correct(kernel.name, "whole tiles")
    # What IPython, and so nbgrader, shows for it: no traceback through the grader's code.
    (shown,) = caught.value._render_traceback_()
    assert shown == f"GradeFailed: {caught.value}" and "Traceback" not in shown
    assert f"{kernel.name} did not compile" in shown and "(cell line " in shown
    # Said once: the next grade cell points to it, and the same cell run again says it all.
    with pytest.raises(exercise.GradeFailed, match=r"did not compile: see test_whole_tiles$"):
        exercise.assert_correct(kernel.name, "odd")
    with pytest.raises(exercise.GradeFailed, match=r"cell line"):
        exercise.assert_correct(kernel.name, "whole tiles")


def matmul_ok(A, B):
    columns = list(zip(*B, strict=True))
    return [[sum(a * b for a, b in zip(row, col, strict=True)) for col in columns] for row in A]


def matmul_drops_last_k(A, B):
    columns = list(zip(*B, strict=True))
    return [
        [sum(a * b for a, b in zip(row[:-1], col[:-1], strict=True)) for col in columns]
        for row in A
    ]


def test_step_00_checks_accept_a_right_product_and_name_a_wrong_one():
    exercise.assert_matmul(matmul_ok, "odd")
    with pytest.raises(AssertionError, match=r"elements wrong, first C\[0\]\[0\]"):
        exercise.assert_matmul(matmul_drops_last_k, "small")


def test_gflops_check_names_the_formula():
    exercise.assert_gflops(lambda M, N, K, s: 2 * M * N * K / s / 1e9)
    with pytest.raises(AssertionError, match="count 2 FLOPs per multiply-add"):
        exercise.assert_gflops(lambda M, N, K, s: M * N * K / s / 1e9)


@pytest.mark.slow
def test_in_a_notebook_a_fault_and_a_compile_error_name_the_line_of_the_writefile_cell(
    tmp_path, monkeypatch, capsys
):
    from planted import MISSING_ROW_BOUND

    monkeypatch.chdir(tmp_path)
    kernel = tmp_path / MISSING_ROW_BOUND.filename
    kernel.write_text(MISSING_ROW_BOUND.source)
    report = exercise.check(kernel.name, quick=True)
    text = " / ".join(c.message for c in report.failures)
    # Line 41 of the file is line 42 of the cell, under its %%writefile line.
    assert f"{kernel.name}:41 (cell line 42)" in text, text

    kernel.write_text(MISSING_ROW_BOUND.source.replace("float regM[TM];", "float regM[TM] = ;"))
    exercise.check(kernel.name)
    printed = capsys.readouterr().out
    assert re.search(rf"{kernel.name}\((\d+)\) \(cell line (\d+)\)", printed), printed
    file_line, cell_line = (
        int(g) for g in re.search(r"\((\d+)\) \(cell line (\d+)\)", printed).groups()
    )
    assert cell_line == file_line + 1

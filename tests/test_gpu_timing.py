"""On a GPU: the speed test, exactly as the notebooks, `grade` and pytest run it
(autograder.judge.verdicts.evaluate at grading.json's size), turns every planted cheat
away with its reason, while the honest reference, a slow but correct kernel and
an honest 3xTF32 kernel keep their verdicts."""

import pytest
from planted_cheats import (
    NOT_FP32_EXACT,
    WRONG_WHEN_TIMED,
    cheats,
    honest,
    misbehaving_when_timed,
    precision_cheats,
    three_tf32,
)
from planted_class import STEP, kernel_source

from autograder.judge import verdicts
from autograder.run.kernel import from_source

pytestmark = pytest.mark.gpu

SIZE = tuple(verdicts.grading_config()["size"])


def speed(spec):
    return verdicts.evaluate(spec, ["whole tiles"], "gpu", 10.0, timings=1).speed


@pytest.mark.parametrize("cheat", cheats(*SIZE), ids=str)
def test_a_cheat_scores_no_speed_points(cheat):
    verdict = speed(cheats(*SIZE)[cheat])
    print(f"\n{cheat}: {verdict.message}")
    assert not verdict.passed and WRONG_WHEN_TIMED in verdict.message


@pytest.mark.parametrize("cheat", precision_cheats(*SIZE), ids=str)
def test_a_cheat_that_rounds_its_inputs_scores_no_speed_points_for_not_being_fp32_exact(cheat):
    """At 2048^3 Freivalds' check lets these through: the exact sample catches them."""
    verdict = speed(precision_cheats(*SIZE)[cheat])
    print(f"\n{cheat}: {verdict.message}")
    assert not verdict.passed and WRONG_WHEN_TIMED in verdict.message
    assert NOT_FP32_EXACT in verdict.message


def test_three_tf32_has_every_timed_launch_verified():
    """Slower than step 05, so it may miss the minimum; but its output is never rejected."""
    verdict = speed(three_tf32())
    print(f"\n3xTF32: {verdict.message}")
    assert "verified launches on fresh inputs" in verdict.message


def test_the_honest_reference_is_fast_enough_in_verified_launches():
    verdict = speed(honest())
    print(f"\nreference: {verdict.message}")
    assert verdict.passed and "verified launches on fresh inputs" in verdict.message


def test_a_slow_but_correct_kernel_is_told_the_minimum():
    verdict = speed(from_source(kernel_source("slow"), STEP.path.name, like=STEP.id))
    print(f"\nslow: {verdict.message}")
    assert not verdict.passed and "the minimum is" in verdict.message


@pytest.mark.parametrize("kernel", misbehaving_when_timed(*SIZE), ids=str)
def test_a_kernel_that_misbehaves_only_when_timed_keeps_its_correctness_points(kernel):
    """Graded as a notebook grades: whole tiles, the timing, then the odd shapes. A hang
    or a crash in a timed launch costs the speed test alone, with the reason."""
    spec, says = misbehaving_when_timed(*SIZE)[kernel]
    evaluation = verdicts.evaluate(spec, ["whole tiles", "odd"], "gpu", 10.0, timings=1)
    print(f"\n{kernel}: {evaluation.speed.message}")
    assert evaluation.problems == {"whole tiles": None, "odd": None}, evaluation.problems
    if says == "did not finish":
        assert not evaluation.speed.passed and says in evaluation.speed.message
    elif says:  # on a GPU the fault is the hardware's, named as CUDA names it
        assert not evaluation.speed.passed and "timing the kernel" in evaluation.speed.message
        assert "cudaError" in evaluation.speed.message


def test_a_timed_buffer_sits_between_unmapped_addresses_on_this_gpu():
    """The guard is there on the GPUs the suite runs on, not the fallback from CuPy's
    pool (a driver without the bindings for it): the protections above lean on it."""
    from autograder.run import guarded

    a = guarded.empty((64, 64))
    assert guarded.refused == "", guarded.refused
    a.fill(1.0)
    assert float(a.sum()) == 64 * 64

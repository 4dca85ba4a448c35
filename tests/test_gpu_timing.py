"""On a GPU: the speed test, exactly as the notebooks, `grade` and pytest run it
(autograder.judge.verdicts.evaluate at grading.json's size), turns every planted cheat
away with its reason, while the honest reference and a slow but correct kernel
keep their verdicts."""

import pytest
from planted_cheats import WRONG_WHEN_TIMED, cheats, honest
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


def test_the_honest_reference_is_fast_enough_in_verified_launches():
    verdict = speed(honest())
    print(f"\nreference: {verdict.message}")
    assert verdict.passed and "verified launches on fresh inputs" in verdict.message


def test_a_slow_but_correct_kernel_is_told_the_minimum():
    verdict = speed(from_source(kernel_source("slow"), STEP.path.name, like=STEP.id))
    print(f"\nslow: {verdict.message}")
    assert not verdict.passed and "the minimum is" in verdict.message

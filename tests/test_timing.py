"""The speed test believes only verified launches (autograder/judge/timing.py): on the CPU
backend, in CI, every planted cheat (tests/planted_cheats.py) is caught by the same
protocol that grades on a GPU, and the honest kernel's launches all count."""

import numpy as np
import pytest
from planted_cheats import WRONG_WHEN_TIMED, cheats, honest

from autograder import judge
from autograder.judge import checker, timing, verdicts
from autograder.judge.timing import Fingerprint, Measurement
from autograder.ladder import registry

SIZE = (96, 80, 40)  # a timed size the cheats aim at; small, so the CPU is quick


def timed_on_cpu(spec, repeats=4):
    job = judge.Job(spec, "cpu", (judge.Time(SIZE, honest(), repeats),), checker.fresh_seed())
    return judge.run(job, case_timeout_s=10)


def test_honest_kernel_gets_every_timed_launch_counted():
    outcome = timed_on_cpu(honest())
    (results,) = outcome.measurements
    for kernel in ("yours", "reference"):
        assert results[kernel].wrong == ""
        assert len(results[kernel].seconds) == 4 and results[kernel].gflops > 0


@pytest.mark.parametrize("cheat", cheats(*SIZE), ids=str)
def test_a_cheat_scores_no_speed_and_is_told_its_output_was_wrong(cheat):
    outcome = timed_on_cpu(cheats(*SIZE)[cheat])
    (results,) = outcome.measurements
    assert results["yours"].wrong and not results["reference"].wrong
    speed = verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    assert not speed.passed and WRONG_WHEN_TIMED in speed.message, speed.message


def test_every_cheat_is_right_where_the_checker_looks():
    """They pass the correctness suites: only verifying the timed launches catches them."""
    for name, spec in cheats(*SIZE).items():
        report = judge.check(spec, shapes=verdicts.WHOLE_TILES, backend="cpu")
        assert report.ok, f"{name}: {report}"


def test_a_rate_above_the_gpus_fp32_peak_is_rejected():
    size = (2048, 2048, 2048)
    fast = Measurement("yours", size, [1e-6])  # 17 PFLOP/s
    reference = Measurement("reference", size, [1e-3])
    outcome = judge.Outcome(
        checker.Report("k", "gpu", 1), [{"yours": fast, "reference": reference}]
    )
    outcome.peak_gflops, outcome.device_name = 66900.0, "NVIDIA H100 80GB HBM3"
    speed = verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    assert not speed.passed
    assert "more than this GPU's FP32 peak of 66900 GFLOP/s" in speed.message


def test_the_fingerprint_never_fails_a_product_rounded_as_a_kernel_rounds_it():
    """float32 products summed in the worst order the checker allows still match."""
    rng = np.random.default_rng(7)
    for M, N, K in ((1, 1, 1), (33, 17, 513), (64, 48, 2048)):
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        fingerprint = Fingerprint(np, A, B, checker.ALPHA, 0.0, rng)
        C = (
            np.float32(checker.ALPHA)
            * np.cumsum(A[:, :, None] * B[None, :, :], axis=1, dtype=np.float32)[:, -1, :]
        )  # sequential float32 sums: the loosest rounding a kernel has
        assert fingerprint.problem(np, C) == ""
        C[M // 2] += 1.0  # a row off by one: a wrong product
        assert f"1 of {M} rows of C are wrong (row {M // 2}:" in fingerprint.problem(np, C)


def test_the_fingerprint_keeps_nothing_a_kernel_could_read_back():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((8, 8), dtype=np.float32)
    B = rng.standard_normal((8, 8), dtype=np.float32)

    class Spy:
        """numpy, remembering every array it hands out."""

        seen = []

        def __getattr__(self, name):
            return getattr(np, name)

        def array(self, x):
            array = np.array(x)
            self.seen.append(array)
            return array

    spy = Spy()
    Fingerprint(spy, A, B, 1.0, 0.0, rng)
    assert spy.seen and all(not array.any() for array in spy.seen)  # X's copy was zeroed


def test_gflops_counts_two_operations_per_multiply_add():
    assert timing.gflops(1000, 1000, 1000, 2.0) == 1.0

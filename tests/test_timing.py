"""The speed test believes only verified launches (autograder/judge/timing.py): on the CPU
backend, in CI, every planted cheat (tests/planted_cheats.py) is caught by the same
protocol that grades on a GPU, and the honest kernels' launches all count."""

from typing import ClassVar

import numpy as np
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

from autograder import judge
from autograder.judge import checker, timing, verdicts
from autograder.judge.timing import ExactSample, Fingerprint, Measurement
from autograder.ladder import registry
from autograder.measure.accuracy import tf32
from autograder.run import gpu
from autograder.run.backends import Backend

SIZE = (96, 80, 40)  # a timed size the cheats aim at; small, so the CPU is quick
# Where Freivalds' check lets inputs rounded to TF32 through, as at 2048^3 (at SIZE,
# their errors are too large to cancel in a row), and the exact sample has to catch
# them: K long enough, N wide enough.
PRECISION_SIZE = (128, 256, 2048)


def timed_on_cpu(spec, size=SIZE, repeats=4):
    job = judge.Job(spec, "cpu", (judge.Time(size, honest(), repeats),), checker.fresh_seed())
    return judge.run(job, case_timeout_s=10)


def test_honest_kernel_gets_every_timed_launch_counted():
    outcome = timed_on_cpu(honest())
    (results,) = outcome.measurements
    for kernel in ("yours", "reference"):
        assert results[kernel].wrong == ""
        assert len(results[kernel].seconds) == 4 and results[kernel].gflops > 0


@pytest.mark.parametrize("cheat", cheats(*SIZE), ids=str)
@pytest.mark.slow
def test_a_cheat_scores_no_speed_and_is_told_its_output_was_wrong(cheat):
    outcome = timed_on_cpu(cheats(*SIZE)[cheat])
    (results,) = outcome.measurements
    assert results["yours"].wrong and not results["reference"].wrong
    speed = verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    assert not speed.passed and WRONG_WHEN_TIMED in speed.message, speed.message


@pytest.mark.parametrize("cheat", precision_cheats(*PRECISION_SIZE), ids=str)
@pytest.mark.slow
def test_a_cheat_that_rounds_its_inputs_scores_no_speed_for_not_being_fp32_exact(cheat):
    outcome = timed_on_cpu(precision_cheats(*PRECISION_SIZE)[cheat], PRECISION_SIZE)
    (results,) = outcome.measurements
    assert NOT_FP32_EXACT in results["yours"].wrong and not results["reference"].wrong
    speed = verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    assert not speed.passed and WRONG_WHEN_TIMED in speed.message, speed.message


@pytest.mark.slow
def test_three_tf32_has_no_timed_launch_rejected_nor_has_the_reference_beside_it():
    """It multiplies TF32 parts only, yet sums them to FP32 accuracy: it is honest.
    (The reference, timed beside every cheat above too, is step 05 itself.)"""
    outcome = timed_on_cpu(three_tf32(), PRECISION_SIZE, repeats=1)
    (results,) = outcome.measurements
    for kernel in ("yours", "reference"):
        assert results[kernel].wrong == "" and len(results[kernel].seconds) == 1


def test_three_tf32_passes_the_checker_where_a_kernel_must_before_it_is_timed():
    report = judge.check(three_tf32(), shapes=verdicts.WHOLE_TILES, backend="cpu")
    assert report.ok, str(report)


@pytest.mark.slow
def test_every_cheat_is_right_where_the_checker_looks():
    """They pass the correctness suites: only verifying the timed launches catches them."""
    every = {**cheats(*SIZE), **precision_cheats(*PRECISION_SIZE)}
    for name, spec in every.items():
        report = judge.check(spec, shapes=verdicts.WHOLE_TILES, backend="cpu")
        assert report.ok, f"{name}: {report}"


@pytest.mark.parametrize("kernel", misbehaving_when_timed(*SIZE), ids=str)
@pytest.mark.slow
def test_a_kernel_that_misbehaves_only_when_timed_costs_only_its_speed_points(kernel):
    """Checked, then timed, then checked again (as grading runs the suites around the
    timing): whatever happens in the timed launches, every case after them runs and
    stands, and the speed verdict says why it scores zero."""
    spec, says = misbehaving_when_timed(*SIZE)[kernel]
    small = checker.SMALL
    stages = (judge.Check(small[:2]), judge.Time(SIZE, honest(), 4), judge.Check(small[2:4]))
    outcome = judge.run(judge.Job(spec, "cpu", stages, checker.fresh_seed()), case_timeout_s=10)
    report = outcome.report
    assert len(report.cases) == 8 and not report.failures, report  # two shapes, two betas each
    if says == "did not finish":  # no launch came back: the run stopped in the timing
        assert judge.job.stopped_while_timed(report) and says in report.error
    elif says:  # the fault is named on the launch it happened in
        (timed,) = outcome.measurements
        assert says in timed["yours"].wrong and not timed["reference"].wrong
    else:  # it printed: capped, counted and shown, and its timings stand
        (timed,) = outcome.measurements
        assert not timed["yours"].wrong and len(timed["yours"].seconds) == 4
        assert "timed!" in report.notes[0]


def test_a_rate_above_what_the_gpu_computes_to_fp32_accuracy_is_rejected():
    size = (2048, 2048, 2048)
    fast = Measurement("yours", size, [1e-6])  # 17 PFLOP/s
    reference = Measurement("reference", size, [1e-3])
    outcome = judge.Outcome(
        checker.Report("k", "gpu", 1), [{"yours": fast, "reference": reference}]
    )
    outcome.peak_gflops, outcome.device_name = 66900.0, "NVIDIA H100 80GB HBM3"
    speed = verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    assert not speed.passed
    assert "more than this GPU can compute to FP32 accuracy (66900 GFLOP/s" in speed.message


def _verified_rate(device: gpu.DeviceInfo, times_fp32_peak: float, step: str = "05"):
    """The speed verdict on device for verified launches of `step` at a multiple of its
    FP32 peak."""
    size = (2048, 2048, 2048)
    seconds = 2 * 2048**3 / (times_fp32_peak * device.fp32_peak_gflops * 1e9)
    outcome = judge.Outcome(
        checker.Report("k", "gpu", 1),
        [{"yours": Measurement("yours", size, [seconds] * 20),
          "reference": Measurement("reference", size, [1e-3] * 20)}],
    )  # fmt: skip
    outcome.peak_gflops, outcome.device_name = device.fp32_accurate_peak_gflops, device.name
    outcome.tf32_peak_gflops = device.tf32_peak_gflops
    return verdicts.judge_speed(outcome, registry.step(step), verdicts.grading_config())


H100 = gpu.DeviceInfo("NVIDIA H100 80GB HBM3", (9, 0), 132, 1980.0, "13.2", "14.2.0")
T4 = gpu.DeviceInfo("Tesla T4", (7, 5), 40, 1590.0, "12.4", "13.3.0")


def test_3xtf32_may_pass_the_fp32_peak_on_gpus_with_tf32_tensor_cores_alone():
    """An FP32-exact kernel on an H100's tensor cores (step 13) may run up to 8/3 of the
    FP32 peak and keeps its points; on a T4 (no TF32) the FP32 peak is the limit."""
    assert H100.fp32_accurate_peak_gflops == pytest.approx(H100.fp32_peak_gflops * 8 / 3)
    assert T4.fp32_accurate_peak_gflops == T4.fp32_peak_gflops
    assert _verified_rate(H100, 2).passed


@pytest.mark.parametrize(("device", "times"), [(H100, 3), (T4, 1.5)], ids=["H100", "T4"])
def test_a_rate_past_the_raised_limit_is_still_rejected(device, times):
    """The attack on the limit 3xTF32 raised: a timing the GPU cannot do to FP32 accuracy,
    3 times the FP32 peak on an H100 (past 8/3), 1.5 times it on a T4, scores zero."""
    speed = _verified_rate(device, times)
    assert not speed.passed
    assert "more than this GPU can compute to FP32 accuracy" in speed.message


def test_a_step_judged_with_tf32_inputs_may_reach_the_tf32_peak_and_no_further():
    """Step 12 is judged with TF32 inputs: on an H100 (TF32 at 8 times the FP32 peak) a
    verified rate of 5 times the FP32 peak keeps its points, where an FP32 step's would
    not; 9 times is more than the tensor cores can do, and scores zero."""
    assert H100.tf32_peak_gflops == pytest.approx(H100.fp32_peak_gflops * 8)
    assert _verified_rate(H100, 5, "12").passed
    assert not _verified_rate(H100, 5, "05").passed
    speed = _verified_rate(H100, 9, "12")
    assert not speed.passed
    assert "more than this GPU can compute from TF32 inputs" in speed.message


def test_a_gpu_too_noisy_to_decide_is_the_graders_fault_and_not_the_kernels():
    size = (2048, 2048, 2048)
    yours = Measurement("yours", size, [1e-3] * 20)
    throttled = Measurement("reference", size, [1e-3, 2e-3] * 10)  # the reference disagrees
    outcome = judge.Outcome(
        checker.Report("k", "gpu", 1), [{"yours": yours, "reference": throttled}]
    )
    outcome.peak_gflops, outcome.device_name = 66900.0, "NVIDIA H100 80GB HBM3"
    with pytest.raises(judge.GraderFault, match="too noisy to decide.*grade again"):
        verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    # A submission whose own launches vary is judged by its median, as it is.
    jumpy = Measurement("yours", size, [1e-3, 3e-3] * 10)
    steady = Measurement("reference", size, [1e-3] * 20)
    outcome.measurements = [{"yours": jumpy, "reference": steady}]
    speed = verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    assert "median of 20 verified launches" in speed.message


class HotBackend(Backend):
    """The host's numpy, timed by the host, on a device whose clock always says it
    throttled."""

    def __init__(self):
        super().__init__("gpu", "a hot GPU", "Hot GPU", np, lambda: None, ())

    def throttled(self) -> str:
        return "the GPU's SMs ran at 700 MHz"


def test_a_gpu_that_throttled_while_timing_is_the_graders_fault_however_steady():
    timed = timing.measure(HotBackend(), {"yours": exact, "reference": exact}, (64, 48, 32), 1)
    assert not timed["yours"].wrong and len(timed["reference"].seconds) == timing.REPEATS
    hot = "the GPU's SMs ran at 700 MHz"
    assert timed["yours"].throttled == timed["reference"].throttled == hot
    outcome = judge.Outcome(checker.Report("k", "gpu", 1), [timed])
    with pytest.raises(judge.GraderFault, match="700 MHz; grade again on a cool, idle GPU"):
        verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    # The same launches, steady, on a GPU whose clock held are judged.
    for measurement in timed.values():
        measurement.throttled, measurement.seconds = "", [1e-5] * timing.REPEATS
    speed = verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    assert "GFLOP/s at 64x48x32" in speed.message


class JumpyBackend(Backend):
    """The host's numpy, on a device whose reference launches are slowed at random
    (another process starting on it) in the first `jumpy` timings of a pair."""

    def __init__(self, jumpy: int):
        super().__init__("gpu", "a shared GPU", "Shared GPU", np, lambda: None, ())
        self.jumpy, self.calls = jumpy, 0

    def time_once(self, run) -> float:
        run()
        pair = self.calls // (2 * (timing.WARMUP + timing.REPEATS))
        reference = self.calls % 2  # yours, then the reference, launch for launch
        self.calls += 1
        return 2e-3 if reference and pair < self.jumpy and self.calls % 4 == 0 else 1e-3


def exact(M, N, K, alpha, A, B, beta, C):
    C[...] = alpha * (A.astype(np.float64) @ B.astype(np.float64))


def test_a_pair_whose_reference_was_too_noisy_is_timed_again_and_says_so():
    kernels, size = {"yours": exact, "reference": exact}, (64, 48, 32)
    timed = timing.measure(JumpyBackend(jumpy=1), kernels, size, 1)
    assert timed["reference"].tries == timed["yours"].tries == 2
    assert timed["reference"].seconds == [1e-3] * timing.REPEATS  # the second try's
    outcome = judge.Outcome(checker.Report("k", "gpu", 1), [timed])
    speed = verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    assert "timed 2 times: before, the reference's launches were too noisy" in speed.message
    # A GPU that stays noisy is the grader's fault, after TRIES tries.
    timed = timing.measure(JumpyBackend(jumpy=timing.TRIES), kernels, size, 1)
    assert timed["reference"].tries == timing.TRIES
    outcome.measurements = [timed]
    with pytest.raises(judge.GraderFault, match=f"the last of {timing.TRIES} tries: this GPU"):
        verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())


def loosest_products(rng):
    """(A, B, C) at a few shapes, C = alpha A B in sequential float32 sums: the loosest
    rounding a kernel has."""
    for M, N, K in ((1, 1, 1), (33, 17, 513), (64, 48, 2048)):
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        C = (
            np.float32(checker.ALPHA)
            * np.cumsum(A[:, :, None] * B[None, :, :], axis=1, dtype=np.float32)[:, -1, :]
        )
        yield A, B, C


def test_the_fingerprint_never_fails_a_product_rounded_as_a_kernel_rounds_it():
    """float32 products summed in the worst order the checker allows still match."""
    rng = np.random.default_rng(7)
    for A, B, C in loosest_products(rng):
        M = len(A)
        fingerprint = Fingerprint(np, A, B, checker.ALPHA, 0.0, rng)
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


def test_freivalds_check_alone_passes_a_product_of_inputs_rounded_to_tf32():
    """The exact sample is what catches it: the rounding errors cancel in each row's sum."""
    rng = np.random.default_rng(3)
    M, N, K = PRECISION_SIZE
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    fingerprint = Fingerprint(np, A, B, checker.ALPHA, 0.0, rng)
    sample = ExactSample(np, A, B, checker.ALPHA, 0.0, rng)
    C = (checker.ALPHA * (tf32(A).astype(np.float64) @ tf32(B))).astype(np.float32)
    assert fingerprint.problem(np, C) == ""
    assert sample.problem(np, C).startswith(f"{NOT_FP32_EXACT}: ")
    # ... as the checker's tolerance for inputs rounded to TF32 allows.
    for_tf32 = ExactSample(np, A, B, checker.ALPHA, registry.TF32_INPUT_ROUNDOFF, rng)
    assert for_tf32.problem(np, C) == ""


def test_the_exact_sample_never_fails_a_product_rounded_as_a_kernel_rounds_it():
    """float32 products summed in the worst order the checker allows still match,
    and one element of a sampled row off by one is named, counted once."""
    rng = np.random.default_rng(7)
    for A, B, C in loosest_products(rng):
        (M, N), sample = C.shape, ExactSample(np, A, B, checker.ALPHA, 0.0, rng)
        assert sample.problem(np, C) == ""
        i, j = sample.rows[-1], sample.columns[0]  # in a sampled row and a sampled column
        C[i, j] += 1.0
        rows, columns = len(sample.rows), len(sample.columns)
        sampled = rows * N + M * columns - rows * columns
        problem = sample.problem(np, C)
        assert f"{NOT_FP32_EXACT}: 1 of {sampled} sampled elements of C" in problem
        assert f"C[{i}, {j}])" in problem


def test_the_exact_sample_keeps_nothing_a_kernel_could_read_back():
    """Every array it makes on the device, from the inputs or from the rows and columns
    it draws, is zeroed: neither the exact values nor which elements are checked stay."""

    class Kept(np.ndarray):
        """An array that remembers every array made from it (copies, products, slices)."""

        made: ClassVar[list] = []

        def __array_finalize__(self, source):
            self.made.append(self)

    class Device:
        """numpy, with every array it hands out remembered."""

        def __getattr__(self, name):
            return getattr(np, name)

        def array(self, x):
            return np.array(x).view(Kept)

    rng = np.random.default_rng(1)
    A = rng.standard_normal((40, 24), dtype=np.float32).view(Kept)
    B = rng.standard_normal((24, 32), dtype=np.float32).view(Kept)
    Kept.made.clear()
    ExactSample(Device(), A, B, 1.0, 0.0, rng)
    made = [a for a in Kept.made if not (np.shares_memory(a, A) or np.shares_memory(a, B))]
    assert len(made) >= 8 and not any(a.any() for a in made)


def test_gflops_counts_two_operations_per_multiply_add():
    assert timing.gflops(1000, 1000, 1000, 2.0) == 1.0


def test_an_accepted_speed_keeps_the_reference_and_the_spread_beside_each_timing():
    """What the class report's leaderboard shows (autograder/course/report.py): the
    reference kernel's GFLOP/s timed with each timing, and how far another timing of
    the kernel may move (the standard error of its launches), in the order of `gflops`."""
    from types import SimpleNamespace

    size = (4096, 4096, 4096)

    def timed(yours, reference):
        return {"yours": Measurement("yours", size, yours),
                "reference": Measurement("reference", size, reference)}  # fmt: skip

    steady = [1.0e-3, 1.001e-3, 0.999e-3] * 4
    slower = [1.1e-3, 1.102e-3, 1.098e-3] * 4
    outcome = SimpleNamespace(
        measurements=[timed(slower, steady), timed(steady, steady)], device_name="a GPU",
        peak_gflops=1e6, tf32_peak_gflops=1e6,
    )  # fmt: skip
    speed = verdicts.judge_speed(outcome, registry.step("05"), verdicts.grading_config())
    assert speed.minimum is not None and speed.gflops == sorted(speed.gflops)
    assert speed.reference == [round(Measurement("r", size, steady).gflops, 1)] * 2
    assert len(speed.error) == 2 and all(0 < e < 0.01 for e in speed.error)

"""GPU time only (autograder/run/device_clock.py, autograder/judge/timing.py): samples
taken in turn until their noise settles, and on a GPU, no host launch work inside."""

import statistics
from functools import partial

import pytest

from autograder.judge import timing
from autograder.judge.timing import Samples, sample
from autograder.measure import clocks


def fake_clock(times: dict):
    """time_once for runs that are names: each call returns the next of its times."""
    taken = {name: iter(values) for name, values in times.items()}
    calls = []

    def time_once(run):
        calls.append(run)
        return next(taken[run])

    return time_once, calls


def test_runs_are_sampled_in_turn_until_each_settles():
    steady = [1e-3] * 300
    jumpy = [1.0e-3, 1.06e-3] * 150
    time_once, calls = fake_clock({"steady": steady, "jumpy": jumpy})
    samples = sample({"steady": "steady", "jumpy": "jumpy"}, time_once, warmup=1)
    assert len(samples["steady"].seconds) == timing.MIN_SAMPLES  # no noise: settled at once
    assert timing.MIN_SAMPLES < len(samples["jumpy"].seconds) < timing.MAX_SAMPLES
    assert samples["jumpy"].error <= timing.SETTLED_ERROR
    # Round robin: the two alternate while both are unsettled (after one warm-up each).
    assert calls[2:6] == ["steady", "jumpy", "steady", "jumpy"]


def test_a_figure_that_never_settles_is_noisy_and_stops_at_the_sample_limit():
    wild = [1e-6, 1e-4] * 300
    time_once, _ = fake_clock({"wild": wild})
    samples = sample({"wild": "wild"}, time_once, warmup=0)["wild"]
    assert len(samples.seconds) == timing.MAX_SAMPLES and samples.noisy


def test_samples_report_median_noise_and_standard_error():
    s = Samples([1.0, 2.0, 3.0, 4.0])
    assert s.median == 2.5
    assert s.noise == pytest.approx(statistics.stdev(s.seconds) / 2.5)
    assert s.error == pytest.approx(s.noise / 2)


@pytest.mark.gpu
def test_the_device_clock_keeps_the_hosts_launch_work_out():
    """An empty kernel and cuBLAS at 128^3 measure within a few µs of their GPU-only
    time: the per-launch time of 100 launches queued back to back, where the host's
    work cannot be. (A test of the measurement, not of any kernel's speed.)"""
    import cupy

    from autograder.run.device_clock import DeviceClock

    clock = DeviceClock()
    empty = cupy.RawKernel('extern "C" __global__ void empty() {}', "empty")
    A = cupy.random.standard_normal((128, 128), dtype=cupy.float32)
    B = cupy.random.standard_normal((128, 128), dtype=cupy.float32)
    C = cupy.empty_like(A)
    for name, run in {
        "an empty kernel": partial(empty, (1,), (1,), ()),
        "cuBLAS at 128^3": partial(cupy.matmul, A, B, out=C),
    }.items():
        held = timing.median_seconds(run, clock.time)
        batched = clocks.seconds_per_launch_in_a_batch(run, clock)
        assert abs(held - batched) < 3e-6, (
            f"{name}: {held * 1e6:.1f} µs held, {batched * 1e6:.1f} µs per launch in a batch"
        )


@pytest.mark.gpu
def test_a_warm_sample_finds_the_caches_as_its_own_work_left_them():
    """A copy whose matrices fit in the L2, sampled in turn with a run that writes twice
    the L2 elsewhere, measures as it does sampled alone: each warm sample follows an
    untimed launch of its own, and finds the copy's matrices where that launch left
    them, not evicted by the other run. (A test of the measurement, not of any
    kernel's speed.)"""
    import cupy

    from autograder.run.device_clock import DeviceClock

    clock = DeviceClock()
    l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    X = cupy.ones(l2 // 16, dtype=cupy.float32)  # a quarter of the L2, and Y as much
    Y = cupy.empty_like(X)
    elsewhere = cupy.empty(2 * l2 // 4, dtype=cupy.float32)
    runs = {"elsewhere": partial(elsewhere.fill, 1.0), "copy": partial(cupy.copyto, Y, X)}
    alone = sample({"copy": runs["copy"]}, clock.warm)["copy"].median
    after_other = sample(runs, clock.time)["copy"].median
    if after_other - alone < 1e-6:
        pytest.skip(
            f"on this GPU the copy takes {alone * 1e6:.1f} µs alone and "
            f"{after_other * 1e6:.1f} µs after the other run: nothing for warm to undo"
        )
    warm = sample(runs, clock.warm)["copy"].median
    assert abs(warm - alone) < max(0.5e-6, 0.1 * alone), (
        f"a copy of {X.nbytes >> 20} MB: {alone * 1e6:.1f} µs alone, {warm * 1e6:.1f} µs "
        f"warm beside a run that writes {2 * l2 >> 20} MB ({after_other * 1e6:.1f} µs "
        "timed after it)"
    )


def test_samples_taken_while_the_gpu_throttles_are_refused_with_the_clock_they_ran_at():
    from autograder.run.device_clock import throttled

    boost = 1980.0
    assert throttled([1900.0] * 10, boost) == ""
    assert throttled([], boost) == ""
    # One low reading is the timer's jitter; most of them low is a throttling GPU.
    assert throttled([1900.0] * 9 + [900.0], boost) == ""
    said = throttled([1000.0] * 6 + [1900.0] * 4, boost)
    assert "1000 MHz" in said and "1980 MHz" in said and "throttling" in said


@pytest.mark.gpu
def test_the_hold_reads_the_sms_clock_near_the_gpus_boost_clock():
    """The clock the hold reads (cycles over the device's nanosecond timer) is a clock
    an SM can run at: not zero, not the timer's own rate, not above the boost clock."""
    import cupy

    from autograder.run import gpu
    from autograder.run.device_clock import DeviceClock

    boost = gpu.device_info().clock_mhz
    clock = DeviceClock()
    empty = cupy.RawKernel('extern "C" __global__ void empty() {}', "empty")
    timing.median_seconds(partial(empty, (1,), (1,), ()), clock.time)
    readings = clock.readings_mhz
    assert len(readings) >= timing.MIN_SAMPLES
    median = statistics.median(readings)
    assert 0.2 * boost < median <= 1.05 * boost, (median, boost)

"""How fast is a kernel, counting only launches whose output was right (the judge layer).

The protocol, for each kernel timed (a learner's and its step's reference,
launch for launch in turn, so that both see the same GPU clocks):

- WARMUP launches, then REPEATS timed ones; the speed is the median.
- Every launch, warm-up included, gets fresh random A and B, drawn on the
  device just before it: no launch sees inputs that an earlier one saw, so a
  kernel that remembers (computes once, then replays) gains nothing.
- C is overwritten with a sentinel and the L2 cache is flushed (twice its size
  written) before each launch: the launch reads its inputs from device memory,
  as the first use of a real product would.
- The device's own clock (CUDA events) times the launch alone, GPU time only:
  the stream is held while the launch is queued (autograder.run.device_clock).
- Every output is verified. Before the launch, a fingerprint of the exact
  product is taken (Freivalds' check: A (B X) for a random X of PROBES columns,
  in float64) together with how far rounding may move it; the fingerprint stays
  in host memory, where no kernel can read it, and the device's copies are
  zeroed. After the launch, C X must match it within that bound. The bound is
  rigorous: it is the checker's per-element tolerance summed over each row,
  |alpha| f(K) (|A| (|B| |X|)), so a kernel that passes the checker can never
  fail it; a kernel that skips or fakes part of its work fails it with
  overwhelming probability (a wrong row misses by about sqrt(N) times its
  error, against a bound that grows with the rounding error only).
- Freivalds' check sums each row, and errors of random sign cancel in the sum:
  a product of inputs rounded to TF32 or FP16 passes it at 2048^3, though most
  of its elements are outside the FP32 tolerance. So whole rows and columns of
  C, drawn at random before the launch, are also compared element by element
  with the exact product (ExactSample), within the checker's own per-element
  tolerance: a kernel that passes the checker passes this too.

A kernel whose timed output was wrong gets no speed; so does a rate above what
the device can compute to FP32 accuracy (its FP32 peak, or 3xTF32's on its
tensor cores), which no FP32-exact kernel can reach, or, for a step judged with
TF32 inputs, above its TF32 tensor-core peak (autograder.judge.verdicts).

`sample` is the other way of timing, for `bench` and `tune`: runs timed in turn on
the same inputs until their noise settles, each figure with its spread.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..run.faults import KernelFault
from .advice import explain_fault
from .checker import ALPHA, SENTINEL, elementwise_tolerance, tolerance_factor

WARMUP, REPEATS = 2, 20
PROBES = 8  # columns of Freivalds' X: each one is an independent chance to catch a wrong row
SAMPLED = 16  # rows, and columns, of C that each verified launch compares element by element
TRIES = 3  # timings of the same kernels, at most, while the reference's are too noisy


def gflops(M: int, N: int, K: int, seconds: float) -> float:
    """2 M N K floating-point operations (one multiply and one add each) per second, in G."""
    return 2 * M * N * K / seconds / 1e9


@dataclass(frozen=True)
class TimedLaunch:
    """A timed launch of `kernel` is starting: the case time limit runs from here."""

    kernel: str
    index: int


@dataclass
class Measurement:
    """One kernel's verified timed launches at one size."""

    kernel: str
    size: tuple[int, int, int]
    seconds: list[float] = field(default_factory=list)  # each verified timed launch
    wrong: str = ""  # why a launch's output was rejected; then no speed counts
    throttled: str = ""  # why the GPU's clock says these times are not the kernel's
    tries: int = 1  # how many times these kernels were timed: the last counts (measure)

    @property
    def gflops(self) -> float:
        return gflops(*self.size, statistics.median(self.seconds)) if self.seconds else 0.0

    @property
    def spread(self) -> float:
        """(slowest - fastest) / fastest of the timed launches."""
        return max(self.seconds) / min(self.seconds) - 1 if self.seconds else 0.0


class Fingerprint:
    """What C X must be for the exact product of A and B, kept in host memory."""

    def __init__(self, xp, A, B, alpha: float, input_roundoff: float, rng: np.random.Generator):
        K, N = B.shape
        self.X = rng.standard_normal((N, PROBES))
        X = xp.array(self.X)  # a copy, on the CPU too: it is zeroed below
        A64, B64 = A.astype(xp.float64), B.astype(xp.float64)
        BX = B64 @ X
        AX = A64 @ BX
        AX *= alpha
        absX = xp.abs(X)
        absBX = xp.abs(B64) @ absX
        bound = xp.abs(A64) @ absBX
        bound *= abs(alpha) * tolerance_factor(K, input_roundoff)
        self.expected, self.bound = _host(AX), _host(bound) * 1.01 + 1e-30
        # Nothing the next launch could read back from memory (a kernel may read past
        # its arrays, into what the memory pool freed): every array that holds X or
        # says something of it, computed in place so that no unnamed copy is left.
        for temporary in (X, absX, BX, AX, absBX, bound):
            temporary.fill(0)

    def problem(self, xp, C) -> str:
        """'' when C matches the fingerprint, else how it does not."""
        got = _host(C.astype(xp.float64) @ xp.asarray(self.X))
        miss = np.abs(got - self.expected)
        bad = ~(miss <= self.bound)  # NaN and infinity are bad
        if not bad.any():
            return ""
        rows = np.flatnonzero(bad.any(axis=1))
        i = int(rows[0])
        j = int(np.argmax(np.where(bad[i], np.nan_to_num(miss[i], nan=np.inf), -1)))
        return (
            f"{len(rows)} of {C.shape[0]} rows of C are wrong (row {i}: its product with a random "
            f"vector is off by {miss[i, j]:.3g} where rounding allows {self.bound[i, j]:.3g})"
        )


class ExactSample:
    """The exact values of SAMPLED whole rows and SAMPLED whole columns of C, drawn at
    random, and the checker's tolerance for each, kept in host memory.

    Why so few: the values and their tolerances cost 4 SAMPLED (M + N) K float64
    flops, against the product's 2 M N K: 3% at 2048^3, and on the grader's time,
    outside the launch's timing. Why enough: r sampled rows and c sampled columns are
    r N + M c - r c elements of C (65,280 of 4.2 million at 2048^2, 2,560 of 7,680
    at 96 x 80), so a kernel wrong on a fraction f of the elements, spread as
    rounding spreads its errors, escapes one launch with probability (1 - f)^65,280
    and all 22 verified launches with (1 - f)^(22 x 65,280): 6 x 10^-7 for f = 10^-5,
    about 40 wrong elements. Inputs rounded to TF32 put more than half of C outside
    the FP32 tolerance at 2048^3; errors too large to cancel in a row, however few,
    are Freivalds' to catch.
    """

    def __init__(self, xp, A, B, alpha: float, input_roundoff: float, rng: np.random.Generator):
        M, N = A.shape[0], B.shape[1]
        self.rows = np.sort(rng.choice(M, min(SAMPLED, M), replace=False))
        self.columns = np.sort(rng.choice(N, min(SAMPLED, N), replace=False))
        self.input_roundoff = input_roundoff
        rows, columns = xp.array(self.rows), xp.array(self.columns)  # copies, zeroed below
        A64, B64 = A.astype(xp.float64), B.astype(xp.float64)
        A_rows, B_columns = A64[rows], B64[:, columns]
        along_rows, along_columns = A_rows @ B64, A64 @ B_columns
        along_rows *= alpha  # in place: no unscaled copy of C's values is left behind
        along_columns *= alpha
        row_tolerance = elementwise_tolerance(xp, A_rows, B64, alpha, input_roundoff)
        column_tolerance = elementwise_tolerance(xp, A64, B_columns, alpha, input_roundoff)
        self.expected = _host(along_rows), _host(along_columns)
        self.tolerance = _host(row_tolerance), _host(column_tolerance)
        temporaries = (rows, columns, A64, B64, A_rows, B_columns, along_rows, along_columns)
        for temporary in temporaries + (row_tolerance, column_tolerance):
            temporary.fill(0)  # which elements are checked, and their values: none left

    def problem(self, xp, C) -> str:
        """'' when every sampled element of C is within its tolerance, else how many are not."""
        got = _host(C[xp.asarray(self.rows)]), _host(C[:, xp.asarray(self.columns)])
        ratios = [np.abs(g - e) / t for g, e, t in zip(got, self.expected, self.tolerance)]
        if all(r.max() <= 1 for r in ratios):  # NaN is never <= 1
            return ""
        ratio = np.full(C.shape, -1.0)  # |C - exact| / tolerance where sampled
        ratio[self.rows], ratio[:, self.columns] = ratios
        ratio[np.isnan(ratio)] = np.inf
        i, j = np.unravel_index(np.argmax(ratio), ratio.shape)
        r = self.input_roundoff
        exact, rounds = (
            (f"exact to FP32 on inputs rounded by {r:.2g}", "rounds its inputs further")
            if r
            else ("FP32-exact", "rounds its inputs (TF32, FP16)")
        )
        return (
            f"not {exact}: {(ratio > 1).sum()} of {(ratio >= 0).sum()} sampled elements of C "
            f"are outside the checker's tolerance (the worst {ratio[i, j]:.3g} times it, "
            f"C[{i}, {j}]): a kernel that {rounds} or skips part of K earns no speed points"
        )


class Verifier:
    """Both checks of an output, taken before the launch: Freivalds' on the whole of C,
    then the exact sample's per element (FP32-exact work only)."""

    def __init__(self, xp, A, B, alpha: float, input_roundoff: float, rng: np.random.Generator):
        self.checks = (
            Fingerprint(xp, A, B, alpha, input_roundoff, rng),
            ExactSample(xp, A, B, alpha, input_roundoff, rng),
        )

    def problem(self, xp, C) -> str:
        """'' when C passes both, else how it fails the first it fails."""
        return next((said for check in self.checks if (said := check.problem(xp, C))), "")


def _host(array) -> np.ndarray:
    """A copy in host memory (a copy on the CPU too: the device's array is zeroed next)."""
    return array.get() if hasattr(array, "get") else np.array(array)


def measure(
    backend,
    launches: dict[str, Callable],
    size: tuple[int, int, int],
    seed: int,
    announce: Callable[[TimedLaunch], None] = lambda launch: None,
    repeats: int = REPEATS,
    input_roundoff: float = 0.0,
) -> dict[str, Measurement]:
    """Time each launch(M, N, K, alpha, A, B, beta, C) of `launches` by the protocol
    above, on `backend` (autograder.run.backends), taking turns. announce() is told
    before each launch (the caller's clock for a hang starts there).

    Where the launches named "reference" (the course's own kernel) come out too noisy
    to decide (Samples.noisy: one launch slowed by another process's start on the GPU
    is enough), every kernel is timed again on fresh inputs, TRIES times in all; the
    last try counts, and its Measurement says how many there were."""
    device_rng = backend.xp.random.default_rng(seed)
    host_rng = np.random.default_rng(seed)
    for tries in range(1, TRIES + 1):
        results = _measure_once(
            backend, launches, size, device_rng, host_rng, announce, repeats, input_roundoff
        )
        reference = results.get("reference")
        if not reference or not Samples(reference.seconds).noisy:
            break
        if any(result.wrong or result.throttled for result in results.values()):
            break  # a verdict that timing again cannot change
    for result in results.values():
        result.tries = tries
    return results


def _measure_once(
    backend, launches, size, device_rng, host_rng, announce, repeats, input_roundoff
) -> dict[str, Measurement]:
    xp = backend.xp
    M, N, K = size
    # Buffers with nothing mapped around them on a GPU (Backend.empty), refilled with
    # fresh inputs for every launch: a stray access faults there, as on the CPU.
    A, B, C = backend.empty((M, K)), backend.empty((K, N)), backend.empty((M, N))
    results = {name: Measurement(name, size) for name in launches}
    backend.throttled()  # the clock readings of these launches only
    for index in range(WARMUP + repeats):
        for name, launch in launches.items():
            result = results[name]
            if result.wrong:
                continue
            A[...] = device_rng.standard_normal((M, K), dtype=xp.float32)
            B[...] = device_rng.standard_normal((K, N), dtype=xp.float32)
            verifier = Verifier(xp, A, B, ALPHA, input_roundoff, host_rng)
            C.fill(SENTINEL)  # finite: beta = 0 lets a kernel read C (0 * C = 0)
            backend.flush_caches()
            announce(TimedLaunch(name, index))
            try:
                seconds = backend.time_once(lambda: launch(M, N, K, ALPHA, A, B, 0.0, C))
            except KernelFault as fault:  # the CPU backend caught a bad access
                wrong = explain_fault(fault)
            else:
                wrong = verifier.problem(xp, C)
            if wrong:
                result.wrong = f"launch {index + 1} of {WARMUP + repeats}: {wrong}"
            elif index >= WARMUP:
                result.seconds.append(seconds)
    throttled = backend.throttled()  # the launches took turns: one clock for all of them
    for result in results.values():
        result.throttled = throttled
    return results


@dataclass
class Samples:
    """Repeated timings of one piece of work, in seconds, and what they say together."""

    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def noise(self) -> float:
        """Relative standard deviation (NVBench's "noise"): stdev / mean."""
        if len(self.seconds) < 2:
            return math.inf
        return statistics.stdev(self.seconds) / statistics.fmean(self.seconds)

    @property
    def error(self) -> float:
        """Relative standard error of the mean: how far another run's figure may move."""
        return self.noise / math.sqrt(len(self.seconds)) if self.seconds else math.inf

    @property
    def noisy(self) -> bool:
        """Too noisy to decide anything: a figure that could move by more than NOISY_ERROR
        in another run (the GPU throttling, or another process on it). One sample says
        nothing of its noise."""
        return len(self.seconds) > 1 and self.error > NOISY_ERROR


# Sampling until the noise settles, as NVBench's "stdrel" criterion does: at least
# MIN_SAMPLES, then stop once the mean is known to SETTLED_ERROR, or at MAX_SAMPLES or
# MAX_SECONDS of samples, whichever comes first.
MIN_SAMPLES, MAX_SAMPLES, MAX_SECONDS = 10, 200, 2.0
SETTLED_ERROR, NOISY_ERROR = 0.005, 0.02


def sample(runs: dict[str, Callable[[], object]], time_once, warmup: int = 3) -> dict[str, Samples]:
    """Device time of each run(), sampled in turn (a round robin, so that a change of
    clocks falls on every run alike) until every run's noise settles. time_once(run)
    gives one sample's seconds: run.device_clock.DeviceClock.time on a GPU, which
    keeps the host's launch work out. Warm: each sample finds the cache as the one
    before left it."""
    for run in runs.values():
        for _ in range(warmup):
            time_once(run)
    samples = {name: Samples() for name in runs}
    unsettled = dict(runs)
    while unsettled:
        for name, run in list(unsettled.items()):
            taken = samples[name]
            taken.seconds.append(time_once(run))
            n = len(taken.seconds)
            if n >= MIN_SAMPLES and (
                taken.error <= SETTLED_ERROR or n >= MAX_SAMPLES or sum(taken.seconds) > MAX_SECONDS
            ):
                del unsettled[name]
    return samples


def median_seconds(run: Callable[[], object], time_once) -> float:
    """The median device time of run(), sampled until its noise settles (see sample)."""
    return sample({"run": run}, time_once)["run"].median

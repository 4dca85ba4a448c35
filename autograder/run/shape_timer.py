"""What a plan takes at a shape, for the choices made on first use where a GEMM runs
(step 09's plans, autotune; the tensor-core steps' paths, paths): the plan's launch on
random inputs, GPU time (device_clock: warm, the host's launch work held out), the
median of SAMPLES after a warm-up; infinite where its C is not A B's (_right), so that
a plan that left part of C unwritten or summed a split twice is never chosen."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TypeVar

P = TypeVar("P")

SAMPLES = 5  # per plan and shape, after one warm-up: the median counts


def gpu_timer(
    launch_of: Callable[[P], Callable], tolerance: float = 1e-4
) -> Callable[[tuple[int, int, int], P], float]:
    """time(shape, plan): seconds of GPU time of launch_of(plan) at shape, alpha 1 and
    beta 0; math.inf where the shape does not fit the GPU or C's first and last rows
    are off A B's by more than tolerance times (|A||B|)_ij."""
    import cupy

    from .device_clock import DeviceClock

    clock = DeviceClock()
    rng = cupy.random.default_rng()
    arrays: dict[tuple[int, int, int], tuple] = {}

    def time(shape: tuple[int, int, int], plan: P) -> float:
        try:
            return timed(shape, plan)
        except cupy.cuda.memory.OutOfMemoryError:  # a sample shape too large for this GPU
            arrays.clear()
            return math.inf

    def timed(shape: tuple[int, int, int], plan: P) -> float:
        if shape not in arrays:
            arrays.clear()  # one shape's matrices at a time
            M, N, K = shape
            arrays[shape] = (
                rng.standard_normal((M, K), dtype=cupy.float32),
                rng.standard_normal((K, N), dtype=cupy.float32),
                cupy.empty((M, N), dtype=cupy.float32),
            )
        A, B, C = arrays[shape]
        # Finite, as the checker's C before a beta = 0 launch: the course's contract lets
        # a kernel compute beta * C then (step 09's reduction does), and 0 * NaN is NaN.
        C.fill(0)
        run = functools.partial(launch_of(plan), *shape, 1.0, A, B, 0.0, C)
        clock.time(run)  # the warm-up
        seconds = sorted(clock.warm(run) for _ in range(SAMPLES))[SAMPLES // 2]
        return seconds if _right(A, B, C) else math.inf

    def _right(A, B, C) -> bool:
        """C's first and last rows are A B's, as far as float32 sums (or the plan's
        rounding of its inputs, in tolerance) can tell."""
        rows = cupy.asarray([0, A.shape[0] - 1])
        exact = A[rows].astype(cupy.float64) @ B.astype(cupy.float64)
        scale = cupy.abs(A[rows]).astype(cupy.float64) @ cupy.abs(B).astype(cupy.float64)
        return bool((cupy.abs(C[rows] - exact) <= tolerance * scale + 1e-30).all())

    return time

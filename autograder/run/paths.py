"""Which path a tensor-core step's GEMM (steps 12 and 13) takes at a shape: the tensor
cores, in blocks of the step's own height or smaller ones, in the layers of K split_k
chooses (added up in clusters, or by the reduction) or in one, on padded copies of A and B
or not; or step 09's FP32 GEMM.

At the smallest products the tensor cores cannot win: a block's start, its pipeline
filling and draining, the layers' reduction are fixed costs that a few hundred
thousand multiply-adds do not pay for, and step 09's FP32 GEMM, which has fewer of
them and is at least as accurate, runs sooner. Measured on an H200 (2026-11-29, GPU
time): at 333x777x129 step 13 ran at 3,779 GFLOP/s and step 09 at 6,499; at 128^3 350
and 561; at 300x200x50001 23,729 and 24,784; from 64x8192x4096 up the tensor cores won.
And where C has few rows, most of a block of 256 lies outside it: step 12 ran
64x8192x4096 at 58% of cuBLAS with TF32 in 256-row blocks, 87% in 128-row ones and 110%
in 64-row ones, 128^3 at 60, 70 and 87%; but 4096^3 at 94, 72 and 41% (H200, 2026-11-29,
GPU time, each height in the layers of K it ran fastest in).

So the GEMM times its paths the first time it meets a shape, and runs the fastest at
that shape from then on, as PyTorch's TunableOp does for each GEMM it is given (by
shape, in memory: a shape costs its paths' few launches once). Only products whose
arithmetic takes under RACE_S at the GPU's FP32 peak are timed whole: above it every
shape measured went to the tensor cores by far, in the step's own blocks or within 5%
of the fastest. Above it, step 13 times only its layers of K added up in clusters
against the reduction's, where the two differ: its model of the clusters does not weigh
what the reduction costs, and at 512x512x32768 the reduction's 8 layers ran at 1.94
times strict cuBLAS where the model's 6 in clusters ran at 1.50 (H200, 2026-11-30, GPU
time; the clusters of 8 that one wave would need do not all fit). Where tuning is off
(SGEMM_AUTOTUNE=0, or tune False: the profiler's runs, the accuracy scripts that
measure the tensor cores), the step's own blocks run in split_k's layers.
`launch.path(M, N, K)` says which path ran, for bench's rows and the book's tables.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable

from . import split_k

# The largest product whose paths are timed, in seconds of the GPU's FP32 peak: twice
# that of the largest shape where step 09 came within 10% of step 13 on the H200
# (300x200x50001, 6 GFLOP: 90 microseconds at its 66.9 TFLOP/s).
RACE_S = 2e-4

FP32 = "FP32: step 09"

Paths = Callable[[int, int, int], dict[str, Callable]]


def tensor_cores(rows: int, layers: int, copied: bool = False, clustered: bool = False) -> str:
    return (
        f"tensor cores, {rows}-row blocks, {layers} layer{'s' if layers > 1 else ''} of K"
        + (" in clusters" if clustered and layers > 1 else "")
        + (", on padded copies" if copied else "")
    )


def block_rows(path: str) -> int | None:
    """The height of block a path of tensor_cores' names runs; None for step 09's."""
    return int(path.split(", ")[1].split("-")[0]) if path != FP32 else None


class Fastest:
    """launch(M, N, K, alpha, A, B, beta, C) that runs, at each shape, the fastest of
    paths(M, N, K) (name: launch), the first of them where there is but one.

    timer(launch_of) -> time(shape, name) (shape_timer.gpu_timer's form), made when
    first needed (it allocates and compiles)."""

    def __init__(self, name: str, paths: Paths, timer: Callable):
        self.name, self.paths, self.timer = name, paths, timer
        self.chosen: dict[tuple[int, int, int], str] = {}
        self._time: list[Callable] = []

    def path(self, M: int, N: int, K: int) -> str:
        """The path the launch takes at this shape; timed here the first time."""
        shape = (M, N, K)
        if shape not in self.chosen:
            names = list(self.paths(M, N, K))
            self.chosen[shape] = names[0] if len(names) == 1 else self._race(shape, names)
        return self.chosen[shape]

    def _race(self, shape: tuple[int, int, int], names: list[str]) -> str:
        if not self._time:
            self._time.append(self.timer(self._launch_of))
            print(
                f"{self.name}: timing the tensor cores' blocks of each height against "
                "step 09's FP32 GEMM at each new shape small enough for it, and its layers "
                "of K at larger ones where it has a choice, once (SGEMM_AUTOTUNE=0: the "
                "step's own blocks and layers always)",
                file=sys.stderr,
                flush=True,
            )
        for launch in self.paths(*shape).values():  # step 09 chooses its plan (and may
            if hasattr(launch, "choose"):  # tune it) before it is timed, not while
                launch.choose(*shape)
        seconds = {name: self._time[0](shape, name) for name in names}
        best = min(seconds, key=seconds.get)
        return best if seconds[best] < math.inf else names[0]

    def _launch_of(self, name: str) -> Callable:
        return lambda M, N, K, *rest: self.paths(M, N, K)[name](M, N, K, *rest)

    def __call__(self, M, N, K, alpha, A, B, beta, C):
        self.paths(M, N, K)[self.path(M, N, K)](M, N, K, alpha, A, B, beta, C)


def gemm(
    name: str,
    tensor: Callable[..., Callable],
    fp32: Callable,
    timer,
    plans: Callable[[int, int, int, int], list[tuple[int, bool]]],
    rows: tuple[int, ...],
    peak_flops: float,
) -> Fastest:
    """The tensor-core step's GEMM (name: its kernel file): tensor(rows, layers, copy,
    clustered) is its kernel with blocks of that many rows of C, in that many layers of K,
    added up in clusters or by the reduction as `clustered` says (layers None, clustered
    left out: the step's own choice, split_k.gemm), on padded copies of A and B where TMA
    cannot describe them as `copy` says (None: split_k.copies_pay), or None where the
    kernel does not compile with such blocks (a learner's, written for its own); rows[0] is
    the step's own height, the rest smaller ones; plans(M, N, K, rows) the (layers, in
    clusters) worth timing at that height, the first the step's own choice; fp32 is step
    09's GEMM; timer as Fastest's, None for no timing (the step's own blocks and layers
    throughout).

    At a small product every combination is timed: the blocks of each height in each of
    their plans and in one layer, on copies and not where TMA cannot describe A or B, and
    step 09. At a larger one, the step's own blocks in each of its plans where it has more
    than one (step 13's layers as split_k.plan models them in clusters, and as the
    one-wave rule gives them to the reduction: the model weighs the clusters a GPU runs at
    once, not what the reduction costs)."""

    @functools.lru_cache(maxsize=4096)  # a launch looks its shape's paths up, once
    def paths(M: int, N: int, K: int) -> dict[str, Callable]:
        own = rows[0]
        odd = split_k.rounded(N, K) != (N, K)  # rows TMA cannot describe: copies raced
        copied = odd and split_k.copies_pay(M, N, K)
        (layers, clustered), *others = dict.fromkeys(plans(M, N, K, own))
        ours = {tensor_cores(own, layers, copied, clustered): tensor(own, None, None)}
        if timer is None:
            return ours
        if 2 * M * N * K > RACE_S * peak_flops:  # the step's own blocks, in each of its plans
            return ours | {
                tensor_cores(own, S, copied, together): tensor(own, S, None, together)
                for S, together in others
            }
        raced = {}
        for height in rows:
            for layers, clustered in dict.fromkeys([*plans(M, N, K, height), (1, False)]):
                for copy in (False, True) if odd else (False,):
                    launch = tensor(height, layers, copy, clustered)
                    if launch is not None:
                        raced[tensor_cores(height, layers, copy, clustered)] = launch
        return ours | raced | {FP32: fp32}

    return Fastest(name, paths, timer)

"""Split-K for the tensor-core steps (12 and 13): in how many layers of K their GEMM runs.

A block of step 12 covers 256 x 128 of C, one of step 13 128 x 128: a 1001 x 777 C gives 28
or 56 blocks to an H100's 132 SMs, and most of the tensor cores idle however long K is. As
step 09 does for step 08's kernel, the GEMM then runs the kernel on a grid S layers deep
(each layer multiplies 1/S of K into a partial product of its own) and adds the layers up
with step 09's reduction (by_shape.compose). The layers cost S matrices of M x N written and
read back, and a block's start and end: so as many layers as make the blocks one wave at
most, each at least MIN_SLICES slices of K deep.

Measured on an H200 (2026-11-29, GPU time), S from 1 up to 64 at 18 shapes with fewer
blocks than SMs: wherever the rule's S was among those timed, it was the fastest or within
1% of it, but at 333x4444x2222 (70 blocks of step 12: 3 layers in two uneven waves ran 1.3
times as fast as 1; step 13, 6 layers, 1.05 times). (Step 12's smallest shapes were not
timed: the timer's check of C is strict FP32's, which TF32 fails there.)
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..ladder import registry
from .by_shape import Plan, compose

# Slices of K (registry.WGMMA_BK each) a layer keeps at least. Layers as short as 2
# slices still won where they filled the SMs: 8 layers of 512^3 ran step 13 2.5 times as
# fast as one (H200).
MIN_SLICES = 2


def layers(M: int, N: int, K: int, tile: tuple[int, int], sms: int) -> int:
    """The layers of K for a tile of tile[0] x tile[1] of C on a GPU of `sms` SMs."""
    blocks = math.ceil(M / tile[0]) * math.ceil(N / tile[1])
    slices = math.ceil(K / registry.WGMMA_BK)
    return max(1, min(sms // blocks, slices // MIN_SLICES))


def gemm(step_id: str, kernel: Callable, reduce: Callable, workspace: Callable, tile, sms: int):
    """launch(M, N, K, alpha, A, B, beta, C): the step's kernel (launch(..., layers=S)) in
    the layers `layers` chooses, the layers added up by `reduce` (step 09's course
    reduction); workspace(n): n floats for the partial products."""
    launch = compose(
        lambda M, N, K: Plan(step_id, layers(M, N, K, tile, sms)),
        {step_id: kernel},
        reduce,
        workspace,
    )
    launch.function = kernel.function
    return launch

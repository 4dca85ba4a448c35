"""Split-K for the tensor-core steps (12 and 13): in how many layers of K their GEMM runs.

A block of step 12 covers 256 x 128 of C, one of step 13 128 x 128: a 1001 x 777 C gives 28
or 56 blocks to an H100's 132 SMs, and most of the tensor cores idle however long K is. As
step 09 does for step 08's kernel, the GEMM then runs the kernel on a grid S layers deep
(each layer multiplies 1/S of K into a partial product of its own) and adds the layers up
with step 09's reduction (composed.compose). The layers cost S matrices of M x N written and
read back, and a block's start and end: so as many layers as make the blocks one wave at
most, each at least MIN_SLICES slices of K deep. And it runs them where the Tensor Memory
Accelerator can copy A and B (`described`).

Measured on an H200 (2026-11-29, GPU time), S from 1 up to 64 at 18 shapes with fewer
blocks than SMs: wherever the rule's S was among those timed, it was the fastest or within
1% of it, but at 333x4444x2222 (70 blocks of step 12: 3 layers in two uneven waves ran 1.3
times as fast as 1; step 13, 6 layers, 1.05 times). (Step 12's smallest shapes were not
timed: the timer's check of C is strict FP32's, which TF32 fails there.)

Step 13's kernel adds its layers up itself (plan, Clusters): the S blocks of a tile's
layers are one cluster, each lays its partial sums out in its shared memory, and each adds
up its share of the tile from all of theirs. No partial product goes through memory and no
reduction is launched: the reduction took 7.4 of the 35.4 us that 1024^3 took in 2 layers
(H200, 2026-11-30, GPU time), and in clusters it ran in 30.0. Layers that cost so little
also even out a last wave that would run short (plan).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

from ..ladder import registry
from .by_shape import Plan
from .composed import compose

# Slices of K (registry.WGMMA_BK each) a layer keeps at least. Layers as short as 2
# slices still won where they filled the SMs: 8 layers of 512^3 ran step 13 2.5 times as
# fast as one (H200).
MIN_SLICES = 2


def layers(M: int, N: int, K: int, tile: tuple[int, int], sms: int) -> int:
    """The layers of K for a tile of tile[0] x tile[1] of C on a GPU of `sms` SMs."""
    blocks = math.ceil(M / tile[0]) * math.ceil(N / tile[1])
    slices = math.ceil(K / registry.WGMMA_BK)
    return max(1, min(sms // blocks, slices // MIN_SLICES))


class Clusters(NamedTuple):
    """A kernel whose layers of K add their sums up themselves, in a cluster of blocks
    (step 13's): kernel(S), its launch with clusters of S layers (None where it does not
    compile: a learner's, written otherwise); at_once(S), how many such clusters the GPU
    runs at a time (gpu.clusters_at_once)."""

    kernel: Callable[[int], Callable | None]
    at_once: Callable[[int], int]


# The largest cluster a kernel may name without asking for more (CUDA's portable
# cluster size).
CLUSTER_AT_MOST = 8

# What a block's start and end cost (its pipeline filling and draining, its epilogue, its
# cluster adding up), in slices of K of its own. Measured on an H200 (2026-11-30, GPU
# time, step 13 in clusters): at 1536^3, 144 blocks of 128 x 128 on 132 SMs, 1 layer ran
# in 138.8 us, 2 in 113.6, 3 in 111.1, 4 in 112.8 (modelled 104, 84, 80, 80); at 4096^3
# 1 layer in 1376 us, 2 in 1422 (modelled 1056, 1088).
BLOCK_SLICES = 4


def plan(M: int, N: int, K: int, tile: tuple[int, int], sms: int, clusters: Clusters):
    """(S, in clusters): the layers of K a kernel that adds them up in clusters runs in,
    and whether it does (together: a learner's kernel written for one layer does not).
    Where the one-wave rule (layers) wants more layers than a cluster holds (few tiles of
    C, a long K), those, through the reduction. Else the S up to CLUSTER_AT_MOST whose
    waves of blocks end first, modelled: a wave takes a block's slices and BLOCK_SLICES
    more, and at_once(S) clusters run at a time (sms blocks where S is 1), each layer
    MIN_SLICES slices deep at least. Unlike the reduction's layers, those of a cluster
    cost no matrices written and read back: past one wave, where the last wave would be
    short, they even the waves out."""
    rule = layers(M, N, K, tile, sms)
    if rule > CLUSTER_AT_MOST:
        return rule, False
    tiles = math.ceil(M / tile[0]) * math.ceil(N / tile[1])
    slices = math.ceil(K / registry.WGMMA_BK)

    def modelled(S: int) -> int:
        waves = math.ceil(tiles / (sms if S == 1 else clusters.at_once(S)))
        return waves * (math.ceil(slices / S) + BLOCK_SLICES)

    deep_enough = [S for S in range(1, CLUSTER_AT_MOST + 1) if S == 1 or slices // S >= MIN_SLICES]
    S = min(deep_enough, key=lambda S: (modelled(S), S))
    return S, together(clusters, S)


def together(clusters: Clusters | None, S: int) -> bool:
    """Whether S layers add their sums up in clusters: more than one, as many as a
    cluster holds, and the kernel compiles for them."""
    return clusters is not None and 1 < S <= CLUSTER_AT_MOST and clusters.kernel(S) is not None


def gemm(
    name: str, kernel: Callable, reduce: Callable, xp, tile, sms: int,
    layers_of: int | None = None, copy: bool | None = None, clusters: Clusters | None = None,
):  # fmt: skip
    """launch(M, N, K, alpha, A, B, beta, C): the kernel `name` (launch(..., layers=S)), a
    block covering tile[0] x tile[1] of C, in `layers_of` layers of K, on copies of A and B
    that TMA can describe as `copy` says (described); xp: CuPy. With `clusters`, its
    layers add their sums up in clusters (None: the layers `plan` chooses); without, step
    09's course reduction, `reduce`, adds them (None: the layers `layers` chooses)."""
    layered = compose(
        lambda M, N, K: Plan(name, layers_of or layers(M, N, K, tile, sms)),
        {name: kernel},
        reduce,
        lambda n: xp.empty(n, dtype=xp.float32),
    )
    splits = layered.splits  # the last launch's split products, for the judge

    def run(M, N, K, alpha, A, B, beta, C):
        nonlocal splits
        if layers_of:
            S, in_clusters = layers_of, together(clusters, layers_of)
        elif clusters:
            S, in_clusters = plan(M, N, K, tile, sms, clusters)
        else:
            S, in_clusters = layers(M, N, K, tile, sms), False
        if in_clusters:
            splits = tuple  # the cluster wrote C itself: no split product
            clusters.kernel(S)(M, N, K, alpha, A, B, beta, C, layers=S)
        else:
            splits = layered.splits
            layered(M, N, K, alpha, A, B, beta, C)

    launch = described(run, xp, copy)
    launch.function, launch.splits = kernel.function, lambda: splits()
    return launch


# Copies pay where the product does at least this many FLOP per float they move. Measured
# on an H200 (2026-11-29, GPU time, step 13 against strict cuBLAS, copies made at every
# shape): 4095x4097x4093 (2,000 FLOP a float) ran at 1.48 times instead of 0.98 and
# 3001x2999x3003 (1,500) at 1.34 instead of 0.92, while 1001x777x513 (320) fell from 0.80
# to 0.63, 333x777x129 (100) from 0.51 to 0.32 and 3001x5003x64 (63) from 0.99 to 0.43.
COPY_FLOP_PER_FLOAT = 1000


def rounded(N: int, K: int) -> tuple[int, int]:
    """N and K rounded up to multiples of 4: rows of whole 16-byte pieces, which TMA can
    describe (where the matrix starts at one)."""
    return -(-N // 4) * 4, -(-K // 4) * 4


def copies_pay(M: int, N: int, K: int) -> bool:
    """Whether copying A and B (and C, where N is rounded) costs less than the product gains
    from them (COPY_FLOP_PER_FLOAT), where TMA cannot describe the rows as they lie."""
    N4, K4 = rounded(N, K)
    moved = M * K4 + K4 * N4 + (2 * M * N4 if N4 != N else 0)
    return 2 * M * N * K >= COPY_FLOP_PER_FLOAT * moved


def described(launch: Callable, xp, copy: bool | None = None) -> Callable:
    """launch, on copies of A and B whose rows TMA can describe where theirs it cannot and
    `copy` is True, or None and the product is large enough to pay for them (copies_pay).

    TMA describes rows that start at 16-byte multiples; elsewhere the kernels copy A or B
    float by float, and ran 4095x4097x4093 at 0.98 times strict cuBLAS (step 13) where
    4096^3 ran at 1.62 (H200). So K and N are rounded up to multiples of 4: A is copied
    with zeros in its new columns (the terms added are 0), B with zeros in its new rows
    where N was rounded or its rows lie off 16 bytes (else TMA reads its K rows and fills
    the rest with zeros itself, tensor_maps.maps), and C goes through a copy N4 wide where
    N was rounded."""

    def run(M, N, K, alpha, A, B, beta, C):
        N4, K4 = rounded(N, K)
        aligned = A.data.ptr % 16 == 0 and B.data.ptr % 16 == 0
        wanted = copies_pay(M, N, K) if copy is None else copy
        if ((K4, N4) == (K, N) and aligned) or not wanted:
            launch(M, N, K, alpha, A, B, beta, C)
            return
        A4 = _padded(xp, A, (M, K), (M, K4))
        B4 = B if N4 == N and B.data.ptr % 16 == 0 else _padded(xp, B, (K, N), (K4, N4))
        if N4 == N:
            launch(M, N, K4, alpha, A4, B4, beta, C)
            return
        C4 = _padded(xp, C, (M, N), (M, N4)) if beta != 0 else xp.empty((M, N4), xp.float32)
        launch(M, N4, K4, alpha, A4, B4, beta, C4)
        _cropped(xp, C4, C, (M, N))

    return run


def _padded(xp, X, shape: tuple[int, int], padded: tuple[int, int]):
    """A copy of X (shape) in a matrix of `padded` shape, zeros around it: on CuPy by
    _PAD, one launch; elsewhere (the CPU tests' stand-in for CuPy) by slices."""
    (rows, cols), out = shape, xp.empty(padded, dtype=xp.float32)
    if hasattr(xp, "ElementwiseKernel"):
        _pad_kernel(xp)(X, rows, cols, padded[1], out, size=out.size // 4)
        return out
    out[:rows, :cols] = X.reshape(rows, cols)
    out[rows:, :] = 0
    out[:rows, cols:] = 0
    return out


# Each thread writes 4 floats of the copy (its rows are whole 16-byte pieces) as one
# float4, read float by float from X, or zeros outside it. CuPy's slice copy (index
# arithmetic for every float, then the zeros apart) copied a 300 x 50001 A in 92.0 us,
# 1.3 TB/s, and this in 42.6 us, 2.8 TB/s (H200, 2026-11-29, GPU time, means of 50 by
# cupyx.profiler.benchmark; 4095 x 4093: 101.0 and 46.2 us).
_PAD = r"""
const long long quads = width / 4, row = i / quads, col = 4 * (i - row * quads);
float v[4];
for (int j = 0; j < 4; ++j) v[j] = row < rows && col + j < cols ? x[row * cols + col + j] : 0.0f;
reinterpret_cast<float4*>(&y[0])[i] = make_float4(v[0], v[1], v[2], v[3]);
"""


@functools.cache
def _pad_kernel(xp):
    return xp.ElementwiseKernel(
        "raw float32 x, int64 rows, int64 cols, int64 width", "raw float32 y", _PAD, "sgemm_pad"
    )


def _cropped(xp, X4, X, shape: tuple[int, int]) -> None:
    """X (shape) := the first shape[1] columns of X4, a matrix of shape[0] rows of whole
    16-byte pieces: on CuPy by _CROP, one launch; elsewhere by a slice."""
    rows, cols = shape
    if hasattr(xp, "ElementwiseKernel"):
        _crop_kernel(xp)(X4, cols, X4.shape[1], X, size=X4.size // 4)
        return
    X.reshape(rows, cols)[...] = X4[:, :cols]


# _PAD the other way: each thread reads 4 floats of the wide copy as one float4 and writes
# those inside X float by float. CuPy's slice copy took 46.3 us for a 3001 x 2999 C, 1.6
# TB/s, of the 697.5 us that step 13 took at 3001x2999x3003 (1.78 times strict cuBLAS);
# with this, the sweep's three runs gave 1.85 (H200, 2026-11-30, GPU time, medians warm;
# this copy was not timed alone).
_CROP = r"""
const long long quads = width / 4, row = i / quads, col = 4 * (i - row * quads);
const float4 v = reinterpret_cast<const float4*>(&x[0])[i];
const float w[4] = {v.x, v.y, v.z, v.w};
for (int j = 0; j < 4 && col + j < cols; ++j) y[row * cols + col + j] = w[j];
"""


@functools.cache
def _crop_kernel(xp):
    return xp.ElementwiseKernel(
        "raw float32 x, int64 cols, int64 width", "raw float32 y", _CROP, "sgemm_crop"
    )

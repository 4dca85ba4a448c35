"""The tensor-core steps' GEMM (autograder.run.split_k): how many layers of K it runs in,
a property of the rule at every shape of a sweep for both steps' tiles and several GPUs;
and the zero-padded copies it runs on where TMA cannot describe A or B."""

import itertools
import math

import numpy as np
import pytest
from measured import H200_CLUSTERS_AT_ONCE

from autograder.ladder import registry
from autograder.run import split_k

SIDES = (1, 64, 100, 128, 333, 777, 1001, 2048, 4096, 8192)
DEPTHS = (1, 32, 64, 129, 513, 4096, 65536)
TILES = [registry.step(s).geometry.tile for s in ("12", "13")]


@pytest.mark.parametrize("sms", (40, 58, 108, 132))
@pytest.mark.parametrize("tile", TILES)
def test_layers_fill_one_wave_at_most_and_each_keeps_min_slices(tile, sms):
    for M, N, K in itertools.product(SIDES, SIDES, DEPTHS):
        S = split_k.layers(M, N, K, tile, sms)
        blocks = math.ceil(M / tile[0]) * math.ceil(N / tile[1])
        slices = math.ceil(K / registry.WGMMA_BK)
        assert S >= 1
        if S > 1:  # more blocks than one wave, or layers too short to fill a pipeline: never
            assert blocks * S <= sms and slices // S >= split_k.MIN_SLICES, (M, N, K, S)
        # and none left idle where another layer would fit both
        assert blocks * (S + 1) > sms or slices // (S + 1) < split_k.MIN_SLICES, (M, N, K, S)


def test_a_c_of_many_tiles_is_never_split():
    assert split_k.layers(4096, 4096, 4096, TILES[1], 132) == 1
    assert split_k.layers(2048, 2048, 65536, TILES[0], 132) == 1


class _OnDevice(np.ndarray):
    """A NumPy array with CuPy's `.data.ptr`, the address `described` checks."""

    @property
    def data(self):
        return type("Memory", (), {"ptr": self.__array_interface__["data"][0]})()


class _Xp:
    float32 = np.float32

    @staticmethod
    def zeros(shape, dtype):
        return np.zeros(shape, dtype).view(_OnDevice)

    @staticmethod
    def empty(shape, dtype):  # what was there before: NaN, which must never reach C
        return np.full(shape, np.nan, dtype).view(_OnDevice)


def _describable_only(M, N, K, alpha, A, B, beta, C):
    """A stand-in for the kernel that computes only where TMA could copy A and B: B through
    its map (tensor_maps.maps), zeros past the rows it has; C not read where beta is 0."""
    assert K % 4 == 0 and N % 4 == 0 and A.data.ptr % 16 == 0 and B.data.ptr % 16 == 0
    _describable_only.b_rows = rows = min(K, B.size // N)
    B_read = np.zeros((K, N), np.float32)
    B_read[:rows] = B.reshape(-1)[: rows * N].reshape(rows, N)
    old = beta * C.reshape(M, N) if beta != 0 else 0
    C.reshape(M, N)[...] = alpha * (A.reshape(M, K) @ B_read) + old


@pytest.mark.parametrize(
    "M, N, K", [(5, 7, 9), (4, 8, 12), (3, 5, 4), (8, 6, 3), (1, 1, 1), (6, 8, 9), (3, 4, 1)]
)
@pytest.mark.parametrize("beta", [0.0, -0.75])
def test_a_gemm_of_rows_tma_cannot_describe_runs_on_zero_padded_copies(M, N, K, beta):
    rng = np.random.default_rng(M * N * K)
    A, B = (rng.standard_normal(s).astype(np.float32).view(_OnDevice) for s in ((M, K), (K, N)))
    before = rng.standard_normal((M, N)).astype(np.float32)
    C = before.copy().view(_OnDevice)
    split_k.described(_describable_only, _Xp, copy=True)(M, N, K, 2.0, A, B, beta, C)
    np.testing.assert_allclose(C, 2.0 * (A @ B) + beta * before, rtol=1e-5, atol=1e-5)
    if N % 4 == 0 and K % 4 != 0:  # B whole rows already: read as it lies, never past its K
        assert _describable_only.b_rows == K


@pytest.mark.parametrize("M, N, K, copy", [(333, 777, 129, None), (4095, 4097, 4093, False)])
def test_a_product_too_small_to_pay_for_copies_or_told_not_to_runs_where_it_lies(M, N, K, copy):
    launched = []
    run = split_k.described(lambda *args: launched.append(args), _Xp, copy)
    A, B, C = (np.zeros(s, np.float32).view(_OnDevice) for s in ((M, K), (K, N), (M, N)))
    assert split_k.copies_pay(M, N, K) == (copy is False)  # 333x777x129: 100 FLOP a float
    run(M, N, K, 1.0, A, B, 0.0, C)
    assert launched[0][4] is A and launched[0][5] is B


@pytest.mark.gpu
@pytest.mark.parametrize(
    "shape, padded",
    [
        ((300, 50001), (300, 50004)),
        ((513, 777), (516, 780)),
        ((1, 1), (1, 4)),
        ((7, 8), (8, 8)),
        ((5, 3), (5, 4)),
    ],
)
def test_a_padded_copy_on_the_gpu_is_the_matrix_with_zeros_around_it(shape, padded):
    """CuPy's copy (split_k._PAD, one launch) holds what the slices' copy holds: X, and
    zeros in every new row and column, never what the fresh memory held."""
    from autograder.run import gpu

    if reason := gpu.unavailable_reason():
        pytest.skip(reason)
    import cupy

    X = cupy.asarray(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    cupy.get_default_memory_pool().free_all_blocks()
    cupy.full(padded, cupy.nan, cupy.float32)  # the copy's memory, freed, held NaN
    copy = split_k._padded(cupy, X, shape, padded).get()
    expected = np.zeros(padded, np.float32)
    expected[: shape[0], : shape[1]] = X.get()
    np.testing.assert_array_equal(copy, expected)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "shape, wide", [((3001, 2999), (3001, 3000)), ((5, 1), (5, 4)), ((2, 7), (2, 8))]
)
def test_a_cropped_copy_on_the_gpu_is_the_wide_matrixs_first_columns_and_nothing_past(shape, wide):
    """C from its wide copy (split_k._CROP, one launch): every float of C, and nothing
    written past C's last one (a NaN guard behind it stays)."""
    from autograder.run import gpu

    if reason := gpu.unavailable_reason():
        pytest.skip(reason)
    import cupy

    X4 = cupy.asarray(np.random.default_rng(1).standard_normal(wide).astype(np.float32))
    held = cupy.full(shape[0] * shape[1] + 8, cupy.nan, cupy.float32)
    split_k._cropped(cupy, X4, held[: shape[0] * shape[1]], shape)
    got = held.get()
    np.testing.assert_array_equal(got[:-8].reshape(shape), X4.get()[:, : shape[1]])
    assert np.isnan(got[-8:]).all()


H200_AT_ONCE = H200_CLUSTERS_AT_ONCE.__getitem__
STEP13_TILE = registry.step("13").geometry.tile


def compiled(at_once) -> split_k.Clusters:
    """A kernel that compiles in clusters of any layers, run `at_once` at a time."""
    return split_k.Clusters(lambda S: object(), at_once)


@pytest.mark.parametrize("sms, at_once", [(132, H200_AT_ONCE), (58, lambda S: 58 // S)])
def test_layers_in_clusters_keep_min_slices_and_model_no_slower_than_one_layer(sms, at_once):
    for M, N, K in itertools.product(SIDES, SIDES, DEPTHS):
        S, in_clusters = split_k.plan(M, N, K, STEP13_TILE, sms, compiled(at_once))
        rule = split_k.layers(M, N, K, STEP13_TILE, sms)
        if not in_clusters:  # one layer, or more than a cluster holds through the reduction
            assert S == 1 or (S == rule > split_k.CLUSTER_AT_MOST), (M, N, K, S)
            continue
        slices = math.ceil(K / registry.WGMMA_BK)
        assert 1 < S <= split_k.CLUSTER_AT_MOST and slices // S >= split_k.MIN_SLICES
        tiles = math.ceil(M / STEP13_TILE[0]) * math.ceil(N / STEP13_TILE[1])
        waves = math.ceil(tiles / at_once(S))
        one_layer = math.ceil(tiles / sms) * (slices + split_k.BLOCK_SLICES)
        assert waves * (math.ceil(slices / S) + split_k.BLOCK_SLICES) < one_layer, (M, N, K)


@pytest.mark.parametrize(
    "shape, expected",
    [
        # measured fastest on an H200 (2026-11-30, GPU time; kernels/13 in clusters)
        ((1024, 1024, 1024), (2, True)),  # 30.0 us; 1 layer 49.8, 3 43.7, 4 51.9
        ((1536, 1536, 1536), (3, True)),  # 111.1 us; 1 layer 138.8, 2 113.6, 4 112.8
        ((2048, 2048, 2048), (1, False)),  # 180.3 us; 2 layers 190.0 before any reduction
        ((4096, 4096, 4096), (1, False)),  # 1376 us; 2 layers 1422
        ((64, 8192, 4096), (2, True)),  # (64-row blocks, below) 70.2 us; 3 layers 91.7
        ((256, 256, 65536), (33, False)),  # 4 tiles: the reduction's 33 layers
    ],
)
def test_the_model_chooses_the_layers_measured_fastest_on_an_h200(shape, expected):
    tile = (64, 128) if shape[0] == 64 else STEP13_TILE
    assert split_k.plan(*shape, tile, 132, compiled(H200_AT_ONCE)) == expected


class _Recorder:
    """Launches that record their arguments (a kernel, a cluster's kernel, the reduction)."""

    def __init__(self, name):
        self.name, self.calls, self.function = name, [], name

    def __call__(self, *args, layers=1):
        self.calls.append((args, layers))


@pytest.mark.parametrize("compiles", [True, False])
def test_a_gemm_in_clusters_runs_the_clusters_kernel_on_c_itself_or_else_the_reduction(
    compiles,
):
    kernel, together, reduce = _Recorder("kernel"), _Recorder("together"), _Recorder("reduce")
    clusters = split_k.Clusters(lambda S: together if compiles else None, H200_AT_ONCE)
    launch = split_k.gemm("k", kernel, reduce, _Xp, STEP13_TILE, 132, clusters=clusters)
    M = N = K = 1024
    assert split_k.plan(M, N, K, STEP13_TILE, 132, clusters) == (2, compiles)
    A, B, C = (np.zeros(s, np.float32).view(_OnDevice) for s in ((M, K), (K, N), (M, N)))
    launch(M, N, K, 2.0, A, B, 0.5, C)
    if compiles:  # no partial sums, no reduction: alpha, beta and C as they were given
        assert together.calls == [((M, N, K, 2.0, A, B, 0.5, C), 2)] and not kernel.calls
        assert launch.splits() == () and not reduce.calls
    else:  # a learner's kernel without clusters: the reduction's layers
        ((args, layers),) = kernel.calls
        assert args[3] == 1.0 and args[6] == 0.0 and layers == 2 and len(reduce.calls) == 1
        assert [s.splits for s in launch.splits()] == [2]

"""The tensor-core steps' GEMM (autograder.run.split_k): how many layers of K it runs in,
a property of the rule at every shape of a sweep for both steps' tiles and several GPUs;
and the zero-padded copies it runs on where TMA cannot describe A or B."""

import itertools
import math

import numpy as np
import pytest

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

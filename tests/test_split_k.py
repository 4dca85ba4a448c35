"""How many layers of K the tensor-core steps' GEMM runs in (autograder.run.split_k): a
property of the rule at every shape of a sweep, for both steps' tiles and several GPUs."""

import itertools
import math

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

"""The probe of what an accumulator keeps when it adds (autograder.measure.accuracy,
book/tf32_accumulator.py), read back from sums made by models whose answers are known:
FP32's own additions, and additions that truncate to a given number of bits. And the
split of step 13 at the top of FP32's range."""

import math

import numpy as np
import pytest

from autograder.measure import accuracy


def _sequential(A, B, add):
    """C = A B summed k by k with `add`, as one accumulator would: row sums in float64."""
    C = np.zeros((A.shape[0], B.shape[1]))
    for k in range(A.shape[1]):
        C = np.array([[add(c, p) for c, p in zip(row, prod)] for row, prod in
                      zip(C, np.outer(A[:, k], B[k]))])  # fmt: skip
    return C[:, 0]


def _truncating(bits: int):
    """An addition exact to `bits` significant bits, the rest dropped toward zero."""

    def add(c, p):
        s = c + p  # exact in float64 for these sums
        if s == 0:
            return 0.0
        scale = 2.0 ** (math.floor(math.log2(abs(s))) - bits + 1)
        return math.trunc(s / scale) * scale

    return add


def _fp32(c, p):
    return float(np.float32(np.float32(c) + np.float32(p)))


def test_fp32_additions_keep_23_bits_below_the_leading_one_and_round_to_nearest():
    asked = accuracy.questions()
    found = accuracy.kept("fp32", asked, _sequential(*accuracy.probe_inputs(asked), _fp32))
    assert {(k.place, k.bits, k.rounding) for k in found} == {
        (place, 23, "to nearest") for place in accuracy.PLACES
    }


@pytest.mark.parametrize("bits", [24, 20, 16])
def test_truncating_additions_are_read_as_the_bits_they_keep(bits):
    asked = accuracy.questions()
    sums = _sequential(*accuracy.probe_inputs(asked), _truncating(bits))
    found = accuracy.kept("model", asked, sums)
    assert {k.bits for k in found} == {bits - 1}
    for k in found:
        if bits == 24:
            assert k.rounding == "toward zero"
        else:  # too few bits to tell the two roundings apart: what the sums were, said
            assert k.rounding.startswith("1 + 1.75u gave 1 + 0u"), k.rounding


def test_the_split_stops_at_the_largest_tf32_value_and_stays_exact():
    top = np.array([3.4028235e38, -3.4028235e38, 3.3e38, 2.0**127], dtype=np.float32)
    big, small = accuracy.split(top)
    assert np.isfinite(big).all() and np.isfinite(small).all()
    assert (np.abs(big) <= accuracy.LARGEST_TF32).all()
    # big is TF32 (its low 13 bits zero) and big + small is x to within 2^-22 of it
    assert not (big.view(np.uint32) & 0x1FFF).any()
    exact = big.astype(np.float64) + small.astype(np.float64)
    assert (np.abs(exact - top) <= 2.0**-22 * np.abs(top.astype(np.float64))).all()
    inf_big, inf_small = accuracy.split(np.array([np.inf, np.nan], dtype=np.float32))
    assert np.isinf(inf_small[0]) and np.isnan(inf_small[1])  # passed on, as FP32 would

"""Step 13 across the float range: each block notes its rows' and columns' largest
magnitudes as it splits them, a block that found any far from 1 multiplies again scaled,
and infinities pass on as FP32 passes them (kernels/13_wgmma_3xtf32.cu). Each protection
beside a planted kernel without it, which fails the same check."""

import numpy as np
import pytest

from autograder import KernelSpec
from autograder.judge import checker
from autograder.ladder import registry
from autograder.measure import ablation
from autograder.run.kernel import substituted

STEP = registry.step("13")
# Never scaled: no magnitude noted, so every block is taken as ordinary (the ablation's
# variant without noting, which is right only where every block is).
(NEVER_SCALED,) = [v.substitutions for v in ablation.variants("13") if v.trick.startswith("noting")]
# Multiplied again scaled, but C never scaled back.
NOT_SCALED_BACK = (("sum = sum * pow2(back / 2) * pow2(back - back / 2);", ""),)
# Scaled, but big not stopped at the largest TF32 value: an infinity splits into inf + NaN.
UNSTOPPED = (
    (
        "copysignf(fminf(fabsf(__uint_as_float(to_tf32(y))), LARGEST_TF32), y);",
        "__uint_as_float(to_tf32(y));",
    ),
    ("  constexpr float LARGEST_TF32 = 3.4011621e38f;  // (2 - 2^-10) 2^127\n", ""),
)


def _product(changes, A, B):
    """Step 13's GEMM (its tensor cores at every shape, no race to FP32) on A and B."""
    import cupy

    from autograder.run.backends import gpu_launcher

    spec = KernelSpec.from_step(STEP)
    launch = gpu_launcher(substituted(spec, changes) if changes else spec, tune=False)
    (M, K), N = A.shape, B.shape[1]
    C = cupy.zeros((M, N), dtype=cupy.float32)
    launch(M, N, K, 1.0, cupy.asarray(A), cupy.asarray(B), 0.0, C)
    return C.get()


def _far_from_one(rng, M, N, K, far):
    """A and B of standard normal numbers, where every third of A's rows `far` is near
    2^-120 and every other of B's columns `far` near 2^100: their small parts would be
    subnormal, their products past FP32's top, split as they are."""
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    A[far][::3] *= np.float32(2.0**-120)
    B[:, far][:, ::2] *= np.float32(2.0**100)
    return A, B


@pytest.mark.gpu
@pytest.mark.parametrize(
    "changes, right", [((), True), (NEVER_SCALED, False), (NOT_SCALED_BACK, False)]
)
@pytest.mark.parametrize("far", [slice(None), slice(200, None)], ids=["everywhere", "past 200"])
def test_blocks_far_from_one_are_scaled_to_keep_fp32s_accuracy(step13_gpu, changes, right, far):
    """Within twice strict cuBLAS's largest error (relative to |A||B|), as FP32-accurate
    means here, and inside the checker's tolerance everywhere; in 11 layers of K (split_k),
    each of which notes and scales its own run of k, and whose partial sums near 2^-126
    the reduction keeps too. With numbers far from 1 in every block, or only in A's rows
    and B's columns past 200 (the first blocks ordinary: one launch takes both ways).
    Unscaled, A's small parts and the products of its tiny rows with B's ordinary columns
    fall under 2^-126."""
    import cupy

    M, N, K = 300, 260, 700
    A, B = _far_from_one(np.random.default_rng(7), M, N, K, far)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
    strict = (cupy.matmul(cupy.asarray(A), cupy.asarray(B)).get() - exact) / scale
    error = (_product(changes, A, B) - exact) / scale
    assert (np.abs(error) <= checker.tolerance_factor(K)).all() or not right
    worst, fp32 = np.abs(error).max(), np.abs(strict).max()
    assert (worst <= 2 * fp32) == right, f"largest error {worst:.2e}, strict cuBLAS's {fp32:.2e}"


@pytest.mark.gpu
@pytest.mark.parametrize("changes, right", [((), True), (UNSTOPPED, False)])
def test_infinities_and_nan_reach_c_as_they_reach_an_fp32_product(step13_gpu, changes, right):
    """Where a term is infinite, C is infinite with its sign, or NaN where an infinity
    meets a zero or one of the other sign, as in float64 (no finite sum here comes near
    FP32's top); where none is, C is finite."""
    M, N, K = 200, 150, 300
    rng = np.random.default_rng(3)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    A[5, 17], A[9, 3], A[9, 40] = np.inf, -np.inf, np.inf
    B[17, :20] = 0.0  # inf * 0: NaN in row 5's first 20 columns
    B[60, 33] = np.nan
    with np.errstate(invalid="ignore"):
        exact = A.astype(np.float64) @ B.astype(np.float64)
    got = _product(changes, A, B)
    same = all(
        (f(got) == f(exact)).all() for f in (np.isnan, np.isposinf, np.isneginf, np.isfinite)
    )
    assert same == right, f"{np.isnan(got).sum()} NaN where float64 has {np.isnan(exact).sum()}"

"""Step 13 across the float range: the pass that finds each row's and column's largest
magnitude, blocks far from 1 scaled before they are split, and infinities passed on as
FP32 passes them (kernels/13_wgmma_3xtf32.cu). Each protection beside a planted kernel
without it, which fails the same check."""

import numpy as np
import pytest

from autograder import KernelSpec
from autograder.judge import checker
from autograder.ladder import registry
from autograder.run import gpu
from autograder.run.kernel import substituted

STEP = registry.step("13")
# Never scaled: every block taken as ordinary, whatever its magnitudes.
NEVER_SCALED = (("if (__syncthreads_or(far)) {", "if (__syncthreads_or(false)) {"),)
# Scaled, but big not stopped at the largest TF32 value: an infinity splits into inf + NaN.
UNSTOPPED = (
    (
        "copysignf(fminf(fabsf(__uint_as_float(to_tf32(y))), LARGEST_TF32), y);",
        "__uint_as_float(to_tf32(y));",
    ),
    ("  constexpr float LARGEST_TF32 = 3.4011621e38f;  // (2 - 2^-10) 2^127\n", ""),
)


@pytest.fixture
def hopper():
    reason = gpu.unavailable_reason()
    if reason is None and not STEP.runs_on_gpu(gpu.device_info().arch):
        reason = f"{STEP.name} needs {STEP.needs}; this GPU is {gpu.device_info().arch}"
    if reason:
        pytest.skip(reason)


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


# The pass without its rowsB, and under another name.
WITHOUT_ROWS = (
    "int M, int N, int K, int rowsB, const float* A",
    "int M, int N, int K, const float* A",
)
RENAMED = ("largest_magnitudes(int M", "find_largest(int M")


@pytest.mark.parametrize(
    "change, says",
    [
        (None, None),  # the course's file
        (WITHOUT_ROWS, "largest_magnitudes at 13_wgmma_3xtf32.cu:.*it has no rowsB"),
        (RENAMED, "defines no kernel largest_magnitudes: the grader runs it before the GEMM"),
    ],
)
def test_the_pass_before_the_gemm_is_held_to_its_contract_before_anything_is_built(change, says):
    """The host calls the file's largest_magnitudes with M, N, K, B's rows, A, B and top:
    declared otherwise, or missing (a learner's file holds it too), the kernel is refused
    as a compile error that says how it is called, not launched with arguments it does
    not expect."""
    from autograder.run import backends, compiler

    spec = KernelSpec.from_step(STEP)
    if change is None:
        backends._check_contract(spec)
        return
    with pytest.raises(compiler.CompileError, match=says):
        backends._check_contract(substituted(spec, (change,)))


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K, rows_of_b", [(37, 29, 2500, 2500), (300, 70, 130, 97)])
def test_the_pass_finds_each_rows_and_columns_largest_magnitude(hopper, M, N, K, rows_of_b):
    """Over pieces of 1024 of k (K = 2500: three), with an infinity and a NaN among them,
    and B holding fewer rows than K (a K rounded up past them: its rows alone are read)."""
    import cupy

    from autograder.run import backends, compiler, contract

    spec = KernelSpec.from_step(STEP)
    (largest,) = compiler.load_all(
        spec.source, (contract.SCALED_BY,), spec.filename, backends.GPU_OPTIONS, STEP.target
    )
    rng = np.random.default_rng(M)
    A = (rng.standard_normal((M, K)) * np.exp2(rng.integers(-60, 60, (M, 1)))).astype(np.float32)
    B = rng.standard_normal((rows_of_b, N)).astype(np.float32)
    A[3, -1], A[5, 7], B[-1, 4], B[0, 2] = np.inf, np.nan, -np.inf, np.nan
    top = backends._largest(largest, 8, M, N, K, cupy.asarray(A), cupy.asarray(B)).get()
    rows, columns = top[:M], top[M:]
    # A NaN's bits, whatever its payload, lie above infinity's (the GPU's fabsf gives its own).
    for found, X, axis in ((rows, A, 1), (columns, B, 0)):
        nan = np.isnan(X).any(axis=axis)
        assert (found[~nan] == np.abs(X).view(np.uint32).max(axis=axis)[~nan]).all()
        assert (found[nan] > 0x7F800000).all() and nan.sum() == 1
    assert rows[3] == columns[4] == 0x7F800000


def _far_from_one(rng, M, N, K):
    """Rows of A near 2^-120 beside ordinary ones, and columns of B near 2^100: their
    small parts would be subnormal, their products past FP32's top, unscaled."""
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    A[::3] *= np.float32(2.0**-120)
    B[:, ::2] *= np.float32(2.0**100)
    return A, B


@pytest.mark.gpu
@pytest.mark.parametrize("changes, right", [((), True), (NEVER_SCALED, False)])
def test_blocks_far_from_one_are_scaled_to_keep_fp32s_accuracy(hopper, changes, right):
    """Within twice strict cuBLAS's largest error (relative to |A||B|), as FP32-accurate
    means here, and inside the checker's tolerance everywhere; in 11 layers of K (split_k),
    whose partial sums near 2^-126 the reduction keeps too. Unscaled, A's small parts and
    the products of its rows with B's ordinary columns fall under 2^-126."""
    import cupy

    M, N, K = 300, 260, 700
    A, B = _far_from_one(np.random.default_rng(7), M, N, K)
    exact = A.astype(np.float64) @ B.astype(np.float64)
    scale = np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64)
    strict = (cupy.matmul(cupy.asarray(A), cupy.asarray(B)).get() - exact) / scale
    error = (_product(changes, A, B) - exact) / scale
    assert (np.abs(error) <= checker.tolerance_factor(K)).all() or not right
    worst, fp32 = np.abs(error).max(), np.abs(strict).max()
    assert (worst <= 2 * fp32) == right, f"largest error {worst:.2e}, strict cuBLAS's {fp32:.2e}"


@pytest.mark.gpu
@pytest.mark.parametrize("changes, right", [((), True), (UNSTOPPED, False)])
def test_infinities_and_nan_reach_c_as_they_reach_an_fp32_product(hopper, changes, right):
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

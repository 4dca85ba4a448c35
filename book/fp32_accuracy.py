"""Does 3xTF32 give FP32 results? Measured for book/13_wgmma_3xtf32.md.

Step 13's kernel, and 13 without promotion (its ablation's variant), beside
strict FP32 (cuBLAS and 08's kernel, on the FP32 lanes) and TF32 (cuBLAS with
TF32 and 12's kernel, on the tensor cores), each against a float64 product at
M = N = 4096 and K = 4096 (or another K), and the exact sum of the three
products of the inputs split as they are (what 13 would give if the tensor
cores added exactly and it scaled nothing first), on four kinds of
input: standard normal; magnitudes spread over
twelve decades (an ill-conditioned mix, where a few terms dominate each sum); A
so small (about 2^-120) that the small parts of its split fall below FP32's
smallest normal number, 2^-126, where a TF32 value keeps fewer than its 11
bits; and A in the top binade of FP32, where rounding to TF32 can overflow to
infinity, with B near 2^-120 (its small parts below 2^-126 too). Each error is
relative to (|A||B|)_ij, the scale of the checker's tolerance.
Needs an H100 or H200 and CuPy; run from the repository root (SIZE=M=N=K, or
K=... for another K at the same M and N; rows of each K are kept apart by their K):

    python book/fp32_accuracy.py book/data/fp32_accuracy_<gpu>.csv
"""

import datetime
import os
import sys
from pathlib import Path

import cupy

from autograder import KernelSpec
from autograder.ladder import registry
from autograder.measure import ablation, accuracy
from autograder.run import gpu
from autograder.run.backends import gpu_launcher

M = N = K = int(os.environ.get("SIZE", "4096"))
K = int(os.environ.get("K", K))  # K alone: the error grows with the length of each sum
rng = cupy.random.default_rng(2026)


def normal(*shape):
    return rng.standard_normal(shape, dtype=cupy.float32)


def spread(*shape):
    """Standard normal times 10^x, x uniform in [-6, 6]."""
    decades = rng.uniform(-6, 6, shape)
    return (normal(*shape) * 10.0**decades).astype(cupy.float32)


def largest(*shape):
    """Uniform in FP32's top binade, [2^127, FLT_MAX], whose last 2^-11 rounds to inf
    in TF32 (a float64 draw within 2^-24 of 2^128 would round to inf in FP32: stopped
    at FLT_MAX, so that every input is finite)."""
    top = rng.uniform(1, 2, shape) * 2.0**127
    return cupy.minimum(top, float(cupy.finfo(cupy.float32).max)).astype(cupy.float32)


INPUTS = {
    "standard normal": lambda: (normal(M, K), normal(K, N)),
    "magnitudes over 12 decades": lambda: (spread(M, K), spread(K, N)),
    "A near 2^-120, B near 2^100": lambda: (normal(M, K) * 2.0**-120, normal(K, N) * 2.0**100),
    "A near the largest float, B near 2^-120": lambda: (largest(M, K), normal(K, N) * 2.0**-120),
}


def split_exact_sum(A, B):
    """The three products of the inputs split as they are (unscaled: kernels/13 scales
    the rows and columns of blocks far from 1 by powers of two first), summed in float64. The split is made on the
    host: CuPy's elementwise kernels flush subnormal results to zero, and would lose
    even the bits of A's small parts near 2^-131 that a subnormal TF32 value keeps."""
    (a, a_small), (b, b_small) = (accuracy.split(x) for x in (A.get(), B.get()))
    f64 = [cupy.asarray(m, dtype=cupy.float64) for m in (a, a_small, b, b_small)]
    return f64[0] @ f64[3] + f64[1] @ f64[2] + f64[0] @ f64[2]


def kernel(spec, A, B):
    C = cupy.zeros((M, N), dtype=cupy.float32)
    # tune=False: the tensor cores at every shape, never step 09's FP32 path (run.paths).
    gpu_launcher(spec, tune=False)(M, N, K, 1.0, A, B, 0.0, C)
    return C


def step(step_id):
    return KernelSpec.from_step(registry.step(step_id))


# Step 13 with its slices' sums kept in the tensor cores' accumulators over all of K, as
# its ablation times it: what promotion buys.
(UNPROMOTED,) = [v for v in ablation.variants("13") if v.trick.startswith("promotion")]


RESULTS = {
    "cuBLAS, strict FP32": lambda A, B: A @ B,
    "08_pipelining (FP32 lanes)": lambda A, B: kernel(step("08"), A, B),
    "cuBLAS, TF32": lambda A, B: gpu.matmul_tf32(A, B, cupy.empty((M, N), cupy.float32)),
    "12_wgmma_tf32 (TF32)": lambda A, B: kernel(step("12"), A, B),
    "13_wgmma_3xtf32 (3xTF32)": lambda A, B: kernel(step("13"), A, B),
    "13 without promotion": lambda A, B: kernel(ablation.spec(UNPROMOTED), A, B),
    "3xTF32 split unscaled, exact sum": split_exact_sum,
}

info = gpu.device_info()
if not registry.step("13").runs_on_gpu(info.arch):
    sys.exit(f"step 13 needs {registry.step('13').needs}; this is {info.name} ({info.arch})")
rows = []
for inputs, make in INPUTS.items():
    A, B = make()
    A64, B64 = A.astype(cupy.float64), B.astype(cupy.float64)
    exact = A64 @ B64
    scale = cupy.abs(A64) @ cupy.abs(B64)
    for result, compute in RESULTS.items():
        C = compute(A, B).astype(cupy.float64)
        e = cupy.abs(C - exact) / scale
        rows.append(
            accuracy.Row(
                inputs=inputs,
                result=result,
                max_e=float(e.max()),
                median_e=float(cupy.median(e)),
                relative_norm=float(cupy.linalg.norm(C - exact) / cupy.linalg.norm(exact)),
                K=K,
                gpu=info.name,
                date=datetime.date.today().isoformat(),
                cuda=info.cuda,
                cupy=info.cupy,
            )
        )
out = Path(sys.argv[1])
kept = [r for r in accuracy.read(out) if r.K != K] if out.exists() else []
accuracy.write(out, kept + rows)
for r in rows:
    print(f"{r.inputs:<30} {r.result:<28} max e {r.max_e:.2e}  median e {r.median_e:.2e}")

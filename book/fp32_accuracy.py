"""Does 3xTF32 give FP32 results? Measured for book/13_wgmma_3xtf32.md.

Step 13's kernel beside strict FP32 (cuBLAS and 08's kernel, on the FP32
lanes) and TF32 (cuBLAS with TF32 and 12's kernel, on the tensor cores), each
against a float64 product at 4096^3, and the exact sum of the three products
of the split inputs (what 13 would give if the tensor cores added exactly), on
four kinds of input: standard normal; magnitudes spread over twelve decades (an
ill-conditioned mix, where a few terms dominate each sum); A so small (about
2^-120) that the small parts of its split fall below FP32's smallest normal
number, 2^-126, where tensor cores might drop them; and A within a factor of 2
of the largest float, where rounding to TF32 can overflow to infinity. Each
error is relative to (|A||B|)_ij, the scale of the checker's tolerance.
Needs an H100 or H200 and CuPy; run from the repository root:

    python book/fp32_accuracy.py book/data/fp32_accuracy_<gpu>.csv
"""

import datetime
import os
import sys

import cupy

from autograder import KernelSpec
from autograder.ladder import registry
from autograder.measure import accuracy
from autograder.run import gpu
from autograder.run.backends import gpu_launcher

M = N = K = int(os.environ.get("SIZE", "4096"))
rng = cupy.random.default_rng(2026)


def normal(*shape):
    return rng.standard_normal(shape, dtype=cupy.float32)


def spread(*shape):
    """Standard normal times 10^x, x uniform in [-6, 6]."""
    decades = rng.uniform(-6, 6, shape)
    return (normal(*shape) * 10.0**decades).astype(cupy.float32)


def largest(*shape):
    """Uniform in [2^127, 2^128): the top binade of FP32, whose last 2^-11 rounds to inf."""
    return (rng.uniform(1, 2, shape) * 2.0**127).astype(cupy.float32)


INPUTS = {
    "standard normal": lambda: (normal(M, K), normal(K, N)),
    "magnitudes over 12 decades": lambda: (spread(M, K), spread(K, N)),
    "A near 2^-120, B near 2^100": lambda: (normal(M, K) * 2.0**-120, normal(K, N) * 2.0**100),
    "A near the largest float, B near 2^-120": lambda: (largest(M, K), normal(K, N) * 2.0**-120),
}


def split_exact_sum(A, B):
    """The three products of the split inputs, summed in float64. The split is made
    on the host: CuPy's elementwise kernels flush subnormal results to zero, and
    would lose the small parts of A near 2^-120 that the kernel keeps."""
    (a, a_small), (b, b_small) = (accuracy.split(x) for x in (A.get(), B.get()))
    f64 = [cupy.asarray(m, dtype=cupy.float64) for m in (a, a_small, b, b_small)]
    return f64[0] @ f64[3] + f64[1] @ f64[2] + f64[0] @ f64[2]


def kernel(step, A, B):
    C = cupy.zeros((M, N), dtype=cupy.float32)
    gpu_launcher(KernelSpec.from_step(step))(M, N, K, 1.0, A, B, 0.0, C)
    return C


RESULTS = {
    "cuBLAS, strict FP32": lambda A, B: A @ B,
    "08_pipelining (FP32 lanes)": lambda A, B: kernel(registry.step("08"), A, B),
    "cuBLAS, TF32": lambda A, B: gpu.matmul_tf32(A, B, cupy.empty((M, N), cupy.float32)),
    "12_wgmma_tf32 (TF32)": lambda A, B: kernel(registry.step("12"), A, B),
    "13_wgmma_3xtf32 (3xTF32)": lambda A, B: kernel(registry.step("13"), A, B),
    "3xTF32 split, exact sum": split_exact_sum,
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
accuracy.write(sys.argv[1], rows)
for r in rows:
    print(f"{r.inputs:<30} {r.result:<28} max e {r.max_e:.2e}  median e {r.median_e:.2e}")

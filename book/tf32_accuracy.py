"""How far from the exact product are TF32 results? Measured for book/11_tensor_core_tf32.md
and book/12_wgmma_tf32.md.

11's and (on an H100 or H200) 12's kernels, cuBLAS in TF32 and in strict FP32,
08's kernel, and the exact products of TF32-rounded inputs and of a truncated A
with a rounded B (what 12 computes), each against a float64 reference at 4096^3,
with each error relative to (|A||B|)_ij, the scale of the checker's tolerance.
Needs a GPU of compute capability 8.0 or later and CuPy; run from the
repository root:

    python book/tf32_accuracy.py > book/data/tf32_accuracy_<gpu>.txt
"""

import os

import cupy

from autograder import KernelSpec
from autograder.judge import checker
from autograder.ladder import registry
from autograder.measure.accuracy import tf32, truncated
from autograder.run import gpu
from autograder.run.backends import gpu_launcher

M = N = K = int(os.environ.get("SIZE", "4096"))
u_tf32, u_fp32 = registry.TF32_INPUT_ROUNDOFF, checker.U

rng = cupy.random.default_rng(2026)
A = rng.standard_normal((M, K), dtype=cupy.float32)
B = rng.standard_normal((K, N), dtype=cupy.float32)
A64, B64 = A.astype(cupy.float64), B.astype(cupy.float64)
exact = A64 @ B64
scale = cupy.abs(A64) @ cupy.abs(B64)


def kernel(step):
    C = cupy.zeros((M, N), dtype=cupy.float32)
    # tune=False: the tensor cores at every shape, never step 09's FP32 path (run.paths).
    gpu_launcher(KernelSpec.from_step(step), tune=False)(M, N, K, 1.0, A, B, 0.0, C)
    return C


results = {
    "strict FP32: cuBLAS": A @ B,
    "strict FP32: 08_pipelining": kernel(registry.step("08")),
    "TF32: cuBLAS (FAST_TF32)": gpu.matmul_tf32(A, B, cupy.empty((M, N), cupy.float32)),
    "TF32: 11_tensor_core_tf32": kernel(registry.step("11")),
    "TF32-rounded inputs, exact sum": tf32(A).astype(cupy.float64) @ tf32(B).astype(cupy.float64),
}
info = gpu.device_info()
if registry.step("12").runs_on_gpu(info.arch):
    results["TF32: 12_wgmma_tf32"] = kernel(registry.step("12"))
    truncated_a = truncated(A).astype(cupy.float64)
    results["truncated A, rounded B, exact sum"] = truncated_a @ tf32(B).astype(cupy.float64)
print(f"{M}x{N}x{K}, A and B standard normal, {info.name}, CUDA {info.cuda}, CuPy {info.cupy}")
print("error e_ij = |C_ij - exact_ij| / (|A||B|)_ij; u32 = 2^-24, u = 2^-11 (TF32)")
print(
    f"{'result':<32}{'max e':>10}{'median e':>11}{'max e/u32':>11}{'max e/u':>9}"
    f"{'med e/u':>9}{'||C-ref||/||ref||':>19}"
)
ref_norm = float(cupy.linalg.norm(exact))
for name, C in results.items():
    e = cupy.abs(C.astype(cupy.float64) - exact) / scale
    emax, emed = float(e.max()), float(cupy.median(e))
    rel = float(cupy.linalg.norm(C.astype(cupy.float64) - exact)) / ref_norm
    print(
        f"{name:<32}{emax:>10.2e}{emed:>11.2e}{emax / u_fp32:>11.1f}{emax / u_tf32:>9.3f}"
        f"{emed / u_tf32:>9.4f}{rel:>19.2e}"
    )
fp32_tol = (8 + 2 * K**0.5) * u_fp32
tf32_tol = fp32_tol + 2 * u_tf32 + u_tf32**2
print(
    f"checker tolerance on e at K={K}: FP32 steps (8 + 2 sqrt(K)) u32 = {fp32_tol:.2e}; "
    f"TF32 step that + 2u + u^2 = {tf32_tol:.2e}"
)
for name, C in results.items():
    e = float((cupy.abs(C.astype(cupy.float64) - exact) / scale).max())
    print(
        f"  {name:<32} max e = {e / fp32_tol:8.3f} of the FP32 tolerance, "
        f"{e / tf32_tol:6.3f} of the TF32 one"
    )
d = cupy.abs(results["TF32: 11_tensor_core_tf32"] - results["TF32: cuBLAS (FAST_TF32)"])
d = d.astype(cupy.float64) / scale
print(f"11 vs cuBLAS TF32: max |difference| / (|A||B|) = {float(d.max()):.2e}")

"""Kernels that try to earn speed points without doing the work, for proving the
timing protocol (autograder/judge/timing.py) turns each of them away.

Each is step 05's reference kernel with lines added (nothing re-typed, and each
anchor must occur once, as in planted.py), told the size it will be timed at,
since that is the first thing a cheat looks for. Each must score no speed
points, with a message containing its `expected` phrase; the honest reference
beside them keeps its verdict.
"""


import numpy as np

from autograder import KernelSpec
from autograder.ladder import registry
from autograder.run.kernel import substituted

STEP = registry.step("05")
WRONG_WHEN_TIMED = "a timed launch's output was wrong"

_BODY = "  const int blockCol = blockIdx.x * BN;\n"
_K_LOOP = "for (int k0 = 0; k0 < K; k0 += BK) {"
_STORE = "        C[row * N + col] = alpha * acc[m][n] + beta * C[row * N + col];\n"
_KERNEL = "// [docs:kernel]\n"


def tf32(x: np.ndarray) -> np.ndarray:
    """x rounded to TF32 (10 mantissa bits), to nearest, ties away from zero."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def _edit(*substitutions: tuple[str, str]) -> KernelSpec:
    return substituted(KernelSpec.from_step(STEP), substitutions)


def cheats(M: int, N: int, K: int) -> dict[str, KernelSpec]:
    """The cheats, each aimed at a timing at M x N x K."""
    timed = f"(M == {M} && N == {N} && K == {K})"
    gx, gy = STEP.geometry.grid(M, N)
    threads = gx * gy * STEP.geometry.threads  # the launch's threads, for per-thread memory
    return {
        # The issue's own example: one line, and the timed launch does nothing.
        "skips the work at the timed size": _edit((_BODY, _BODY + f"  if {timed} return;\n")),
        "does half the K loop at the timed size": _edit(
            (_K_LOOP, f"for (int k0 = 0; k0 < ({timed} ? K / 2 : K); k0 += BK) {{")
        ),
        # Computes on its first launch at the timed size, keeps C in device memory,
        # and from then on copies it back instead of multiplying.
        "computes once, then replays": _edit(
            (
                _KERNEL,
                f"__device__ float replay_C[{M * N}];\n__device__ int replay_ready[{threads}];\n"
                + _KERNEL,
            ),
            (
                _BODY,
                _BODY
                + "  const int me = blockIdx.y * gridDim.x * blockDim.x + blockIdx.x * blockDim.x"
                " + threadIdx.x;\n" + f"  if ({timed} && replay_ready[me]) {{\n"
                "    for (int m = 0; m < TM; ++m)\n"
                "      for (int n = 0; n < TN; ++n) {\n"
                "        const int row = blockRow + (threadIdx.x / (BN / TN)) * TM + m;\n"
                "        const int col = blockCol + (threadIdx.x % (BN / TN)) * TN + n;\n"
                "        if (row < M && col < N) C[row * N + col] = replay_C[row * N + col];\n"
                "      }\n"
                "    return;\n"
                "  }\n",
            ),
            (
                _STORE,
                _STORE + f"        if {timed} {{ replay_C[row * N + col] = C[row * N + col]; "
                "replay_ready[me] = 1; }\n",
            ),
        ),
        # Right for as many launches as a warm-up usually has, then skips the work:
        # right whenever it is checked, wrong whenever it is timed.
        "right only until it is timed": _edit(
            (_KERNEL, f"__device__ int launches_seen[{threads}];\n" + _KERNEL),
            (
                _BODY,
                _BODY
                + "  const int me = blockIdx.y * gridDim.x * blockDim.x + blockIdx.x * blockDim.x"
                " + threadIdx.x;\n" + f"  if ({timed} && launches_seen[me]++ >= 2) return;\n",
            ),
        ),
    }


def honest() -> KernelSpec:
    return KernelSpec.from_step(STEP)

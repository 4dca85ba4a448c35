"""Kernels that try to earn speed points without doing the work, for proving the
timing protocol (autograder/judge/timing.py) turns each of them away.

Each is step 05's reference kernel with lines added (nothing re-typed, and each
anchor must occur once, as in planted.py), told the size it will be timed at,
since that is the first thing a cheat looks for. Each must score no speed
points, with a message containing WRONG_WHEN_TIMED (and NOT_FP32_EXACT for the
precision cheats); the honest reference, and an honest kernel that reaches FP32
accuracy from TF32 parts (three_tf32), keep every timed launch.
"""

from autograder import KernelSpec
from autograder.ladder import registry
from autograder.run.kernel import substituted

STEP = registry.step("05")
WRONG_WHEN_TIMED = "a timed launch's output was wrong"
NOT_FP32_EXACT = "not FP32-exact"

_BODY = "  const int blockCol = blockIdx.x * BN;\n"
_K_LOOP = "for (int k0 = 0; k0 < K; k0 += BK) {"
_STORE = "        C[row * N + col] = alpha * acc[m][n] + beta * C[row * N + col];\n"
_KERNEL = "// [docs:kernel]\n"
_LOAD_A = "      As[r][c] = inside ? A[(blockRow + r) * K + k0 + c] : 0.0f;\n"
_LOAD_B = "      Bs[r][c] = inside ? B[(k0 + r) * N + blockCol + c] : 0.0f;\n"
# The thread's index in the launch, for memory of its own: no two threads share a slot.
_ME = (
    "  const int me = blockIdx.y * gridDim.x * blockDim.x + blockIdx.x * blockDim.x"
    " + threadIdx.x;\n"
)
# Rounding by bit arithmetic, which the CPU backend runs too (no inline PTX).
_ROUNDING = """__device__ float to_tf32(float x) {  // to nearest, ties away: 10 mantissa bits
  return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xFFFFE000u);
}
__device__ float to_fp16(float x) {  // 10 mantissa bits in FP16's range
  const float y = fminf(fmaxf(to_tf32(x), -65504.0f), 65504.0f);  // saturated
  return fabsf(y) < 6.103515625e-05f ? 0.0f : y;  // below 2^-14, flushed to zero
}
"""


def _edit(*substitutions: tuple[str, str]) -> KernelSpec:
    return substituted(KernelSpec.from_step(STEP), substitutions)


def _aim(M: int, N: int, K: int) -> tuple[str, int]:
    """What is true only when timed at M x N x K, and the launch's threads there
    (for per-thread memory)."""
    gx, gy = STEP.geometry.grid(M, N)
    return f"(M == {M} && N == {N} && K == {K})", gx * gy * STEP.geometry.threads


def cheats(M: int, N: int, K: int) -> dict[str, KernelSpec]:
    """The cheats, each aimed at a timing at M x N x K."""
    timed, threads = _aim(M, N, K)
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
                _BODY + _ME + f"  if ({timed} && replay_ready[me]) {{\n"
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
                _BODY + _ME + f"  if ({timed} && launches_seen[me]++ >= 2) return;\n",
            ),
        ),
    }


def _rounded(when: str, *more: tuple[str, str], rounding: str = "to_tf32") -> KernelSpec:
    """Step 05 with A and B rounded by `rounding` as they are copied to shared memory,
    where `when` holds."""
    return _edit(
        (_KERNEL, _ROUNDING + _KERNEL),
        *more,
        (_LOAD_A, _LOAD_A + f"      if ({when}) As[r][c] = {rounding}(As[r][c]);\n"),
        (_LOAD_B, _LOAD_B + f"      if ({when}) Bs[r][c] = {rounding}(Bs[r][c]);\n"),
    )


def precision_cheats(M: int, N: int, K: int) -> dict[str, KernelSpec]:
    """Cheats that multiply inputs rounded to fewer bits, as tensor cores would, at
    M x N x K: their errors, of random sign, cancel in the sums of Freivalds' check
    but not element by element (timing.ExactSample)."""
    timed, threads = _aim(M, N, K)
    return {
        "rounds its inputs to TF32 at the timed size": _rounded(timed),
        "rounds its inputs to FP16 at the timed size": _rounded(timed, rounding="to_fp16"),
        "every other k-slice in reduced precision": _rounded(f"{timed} && (k0 / BK) % 2 == 1"),
        # A timing's first launches are its warm-up, which a cheat may think unchecked
        # (pygpubench's audit found kernels that detect it).
        "full precision while warming up, then TF32": _rounded(
            "warmed_up",
            (_KERNEL, f"__device__ int launches_seen[{threads}];\n" + _KERNEL),
            (
                _BODY,
                _BODY + _ME + f"  const bool warmed_up = {timed} && launches_seen[me]++ >= 2;\n",
            ),
        ),
    }


def honest() -> KernelSpec:
    return KernelSpec.from_step(STEP)


def three_tf32() -> KernelSpec:
    """Honest, everywhere: each input split into its TF32 part and the rest, and
    big * big + big * small + small * big summed, each product exact in FP32, as
    3xTF32 on tensor cores does; the dropped small * small is under 2^-22 of a
    product, so C is as exact as FP32 makes it. Slower than step 05, so it may miss
    the speed points, but none of its timed outputs may be rejected."""
    split = """__device__ float three_tf32(float a, float b, float acc) {  // acc + a * b
  const float a_big = to_tf32(a), b_big = to_tf32(b);
  acc += a_big * (b - b_big) + (a - a_big) * b_big;
  return acc + a_big * b_big;
}
"""
    return _edit(
        (_KERNEL, _ROUNDING + split + _KERNEL),
        ("acc[m][n] += regM[m] * regN[n];", "acc[m][n] = three_tf32(regM[m], regN[n], acc[m][n]);"),
    )


def misbehaving_when_timed(M: int, N: int, K: int) -> dict[str, tuple[KernelSpec, str]]:
    """Kernels right on every shape the checker runs that hang, fault or print only at
    the timed size, and what their speed verdict must say: each costs its own speed
    points with the reason, nothing else."""
    timed, _ = _aim(M, N, K)
    return {
        "hangs when timed": (
            # Waits for A[0] to become 1e30 (it never does): a volatile read of global
            # memory, which no compiler may take out of the loop.
            _edit((_BODY, f"{_BODY}  if {timed} while (*(volatile const float*)A != 1e30f);\n")),
            "did not finish",
        ),
        # A gigabyte past C: on a GPU, memory nobody mapped.
        "writes far past the end of C when timed": (
            _edit((_BODY, _BODY + f"  if {timed} C[M * N + (1 << 28)] = 0.0f;\n")),
            "past the end of C",
        ),
        # What lies before A: read, its value kept, so no compiler may drop the read.
        "reads far before the start of A when timed": (
            _edit((_BODY, _BODY + f"  if ({timed} && A[-(1 << 28)] == 1234.5f) C[0] = 0.0f;\n")),
            "before the start of A",
        ),
        "floods its output when timed": (
            _edit((_BODY, _BODY + f'  if {timed} printf("timed! %d\\n", threadIdx.x);\n')),
            "",  # it prints, and is timed as it is: its prints are capped, not its points
        ),
    }

"""Bugs planted in the reference kernels, for proving that the checker catches them.

A planted bug is one substitution in a reference kernel's source (nothing is
re-typed), and each substitution must apply exactly once, so a change to the
kernel cannot silently leave a "bug" that is no bug. Each comes with a phrase
the checker's message must contain, on every backend.
"""

from autograder import KernelSpec
from autograder.ladder import registry
from autograder.run import composed
from autograder.run.kernel import substituted


def planted_all(step_id: str, *substitutions) -> KernelSpec:
    """Several substitutions into one reference kernel, each applying exactly once."""
    return substituted(KernelSpec.from_step(registry.step(step_id)), substitutions)


def planted(step_id: str, old: str, new: str) -> KernelSpec:
    return planted_all(step_id, (old, new))


BOUNDS = "if (row < M && col < N) {"
PLANTED = {
    "missing N bound": (planted("02", BOUNDS, "if (row < M) {"), "past the end of C"),
    "missing M bound": (planted("05", BOUNDS, "if (col < N) {"), "past the end of C"),
    "unwritten element": (
        planted("01", BOUNDS, "if (row < M && col < N && !(row == 0 && col == 5)) {"),
        "element (0, 5) was never written",
    ),
    "beta ignored": (
        planted("04", "alpha * acc[m] + beta * C[row * N + col]", "alpha * acc[m]"),
        "ignores beta",
    ),
    "K loop one short": (planted("01", "k < K;", "k < K - 1;"), "wrong"),
    "missing K bound in the tile load": (
        planted("03", "(row < M && k0 + tx < K)", "(row < M)"),
        "read outside A",
    ),
    "float4 without the alignment fallback": (
        planted("06", "const bool vecB = N % 4 == 0 && aligned16(B);", "const bool vecB = true;"),
        "cudaErrorMisalignedAddress",
    ),
    "column-major store": (
        planted(
            "01",
            "C[row * N + col] = alpha * acc + beta * C[row * N + col];",
            "C[col * M + row] = alpha * acc + beta * C[col * M + row];",
        ),
        "column-major order",
    ),
    "endless loop": (
        planted(
            "02",
            "float acc = 0.0f;",
            "float acc = 0.0f;\n    while (*(volatile float*)A == *(volatile float*)A) {}",
        ),
        "did not finish within",
    ),
    # Step 09's reduction, run inside the whole GEMM with K split in 2 to 4 layers.
    "reduction stops after two layers": (
        planted("09", "s < splits", "s < 2"),
        "C holds the sum of the first 2 only",
    ),
    "reduction reads one layer over and over": (
        planted("09", "partial[s * layer + i]", "partial[i]"),
        "every pass of the loop reads the same layer",
    ),
    "reduction with the wrong distance between layers": (
        planted("09", "partial[s * layer + i]", "partial[s * N + i]"),
        "C is not alpha times their sum plus beta C",
    ),
    "reduction without the N bound": (
        planted("09", "if (row >= M || col >= N) return;", "if (row >= M) return;"),
        "past the end of C",
    ),
    # Right wherever beta < 0, as the suite's beta once always was (checker.beta_of).
    "reduction that tells beta != 0 by its sign": (
        planted("09", "beta != 0.0f", "beta < 0.0f"),
        "without + beta*C",
    ),
    # On a GPU its register may well hold 0: the CPU backend's run shows it every time.
    "reduction's sum never given a value": (
        planted("09", "float sum = 0.0f;", "float sum;"),
        "a thread's own float that was never given a value",
    ),
}
RACES = {
    "missing first __syncthreads": planted(
        "03", "__syncthreads();  // the tiles are complete", "// the tiles are complete"
    ),
    "missing second __syncthreads": planted(
        "03", "__syncthreads();  // everyone is done reading", "// everyone is done reading"
    ),
}

# Step 08's handover without its barrier: warps load the next slice's first
# fragments before every thread has stored that slice (the learner's region).
HANDOVER_WITHOUT_BARRIER = planted(
    "08",
    "stash(buf ^ 1, LOADS - 1, next);\n        sync();",
    "stash(buf ^ 1, LOADS - 1, next);",
)


# Step 09's blocks of groups of warps (kernels/08's GROUPS), each group walking its own
# run of K past barriers of its own: without them, and with one that waits for more
# threads than its group has (on a GPU, a hang).
GROUPED = composed.gemm_specs(("32x32w2g4",))["32x32w2g4"]
GROUP_BARRIER = "__barrier_sync_count(1 + group(), NUM_THREADS);"
GROUPS_WITHOUT_BARRIERS = substituted(GROUPED, [(GROUP_BARRIER, "")])
GROUP_BARRIER_OF_TOO_MANY = substituted(
    GROUPED, [(GROUP_BARRIER, "__barrier_sync_count(1 + group(), 2 * NUM_THREADS);")]
)

# Step 09's staged epilogue (kernels/08's STAGE), where C's rows are not aligned for
# float4s: each warp stores a chunk of C into shared memory and its threads write out
# one another's floats. Without the warp's barrier between, they read them before the
# other threads stored them.
STAGED = composed.gemm_specs(("32x64w4",))["32x64w4 staged"]
WARP_BARRIER_BEFORE_WRITES = "          __syncwarp();\n#pragma unroll\n          for (int i = 0;"
STAGE_WITHOUT_SYNCWARP = substituted(
    STAGED, [(WARP_BARRIER_BEFORE_WRITES, "#pragma unroll\n          for (int i = 0;")]
)

# The A tile's load in step 05 checks K but not M: rows past the end of A are
# read (into the checker's NaN padding) and then never used for C.
MISSING_ROW_BOUND = planted(
    "05",
    "const bool inside = blockRow + r < M && k0 + c < K;",
    "const bool inside = k0 + c < K;",
)
# Step 03's loads guarded with threadIdx instead of the global row and column:
# right in block (0, 0) only.
GUARD_ON_THREADIDX = planted_all(
    "03",
    ("(row < M && k0 + tx < K)", "(ty < M && k0 + tx < K)"),
    ("(k0 + ty < K && col < N)", "(k0 + ty < K && tx < N)"),
)
# Step 03 with only the first half of the A tile's rows loaded: the rest of As
# is read before any thread wrote it.
HALF_A_TILE = planted(
    "03", "    As[ty][tx] = (row < M", "    if (ty < BS / 2) As[ty][tx] = (row < M"
)

# Step 09's reduction with its bounds check after the loop: threads outside C
# add up layers too, and those of the last rows read past the end of the
# workspace, then store nothing.
LATE_BOUND = planted_all(
    "09",
    ("  if (row >= M || col >= N) return;\n", ""),
    ("  C[i] = alpha", "  if (row >= M || col >= N) return;\n  C[i] = alpha"),
)

# Right on every case by luck only: their reads outside A or B (or the split-K
# workspace) land in padding and go unused. On exact-size buffers they read
# other data.
UNSAFE = {
    "A tile's row bound missing": (MISSING_ROW_BOUND, "the kernel read outside A"),
    "load guards on threadIdx": (GUARD_ON_THREADIDX, "the kernel read outside"),
    "reduction's bounds checked after its loads": (LATE_BOUND, "the kernel read outside partial"),
}

# Row and column swapped in the sums: C[i][j] gets (AB)[j][i]. Only a square C
# shows it as such (elsewhere the reads leave A and B).
TRANSPOSED = planted(
    "01", "acc += A[row * K + k] * B[k * N + col];", "acc += A[col * K + k] * B[k * N + row];"
)

# Index mistakes, each reproduced exactly by one of judge.mapping's hypotheses,
# with the phrase its message must hold on every backend (and the line it names).
MAPPING = {
    "threadIdx.x and threadIdx.y exchanged in the mapping": (
        planted_all(
            "03",
            ("const int row = blockIdx.y * BS + ty;", "const int row = blockIdx.y * BS + tx;"),
            ("const int col = blockIdx.x * BS + tx;", "const int col = blockIdx.x * BS + ty;"),
        ),
        "threadIdx.x and threadIdx.y exchanged), at 03_smem_tiling.cu:21 and 22",
    ),
    "a tile of A stored transposed": (
        planted("03", "As[ty][tx] = (row < M", "As[tx][ty] = (row < M"),
        "C is what A gives with each of its 32x32 tiles transposed",
    ),
    "the warp sub-tile offset missing in B's fragments": (
        planted(
            "07",
            "warpCol * WN + wn * WSUBN + threadCol * TN + n]",
            "warpCol * WN + threadCol * TN + n]",
        ),
        "lacks the warp sub-tile's offset (wn * WSUBN, 32 columns), at 07_warptiling.cu:160",
    ),
    "the warp sub-tile offset missing in A's fragments (WMITER = 1 hides it)": (
        planted(
            "07",
            "warpRow * WM + wm * WSUBM + threadRow * TM + m]",
            "warpRow * WM + threadRow * TM + m]",
        ),
        "lacks the warp sub-tile's offset (wm * WSUBM, 32 rows), at 07_warptiling.cu:152",
    ),
    "a stride of K where N belongs": (
        planted("02", "B[k * N + col]", "B[k * K + col]"),
        "B is read with rows K floats apart (B[k * K + col]), where they are N apart",
    ),
    "a stride of N where K belongs": (
        planted("02", "A[row * K + k]", "A[row * N + k]"),
        "A is read with rows N floats apart (A[row * N + k]), where they are K apart",
    ),
    "the block's row offset missing": (
        planted("03", "const int row = blockIdx.y * BS + ty;", "const int row = ty;"),
        "lacks the block's offset (blockIdx.y times the tile's 32 rows), at 03_smem_tiling.cu:21",
    ),
}

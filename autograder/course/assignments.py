"""The exercise notebooks' own words, one entry per assignment: the one place
their text lives. autograder/course/notebooks.py builds solutions/<name>/<name>.ipynb
from these entries and from kernels/ (the code a learner writes is the region
of the kernel file between the entry's docs anchors).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Assignment:
    name: str  # the step's name: the nbgrader assignment id and the notebook's file name
    title: str
    idea: str  # the chapter's idea in brief (Markdown)
    task: str  # what to write (Markdown)
    # docs anchors of the learner's parts of the kernel; none for Python steps
    regions: tuple[str, ...] = ()
    hints: tuple[str, ...] = field(default_factory=tuple)

    @property
    def step(self) -> str:
        return self.name[:2]

    @property
    def chapter(self) -> str:
        """The book page that teaches the step: it has the step's name too."""
        return f"book/{self.name}"


ASSIGNMENTS = (
    Assignment(
        "00_cpu_triple_loop",
        "The CPU triple loop",
        idea="""\
C = A·B with A of M×K and B of K×N takes M·N·K multiply-adds: **2·M·N·K floating-point
operations** (FLOPs). Dividing by the time gives FLOP/s, the number every later chapter
compares. A triple loop in Python runs about a million times slower than NumPy, which hands
the work to an optimized BLAS; and even in a fast language, the *order* of the three loops
decides whether the innermost loop walks memory with stride 1 or with stride N.""",
        task="""\
Write `matmul(A, B)` as a plain triple loop over Python lists or NumPy scalars (no `@`, no
`np.dot`), then `matmul_ikj(A, B)` with the loops in the order i, k, j, and `gflops(M, N, K,
seconds)`. The check cell times your loops against NumPy.""",
        hints=(
            "`C[i][j]` is the dot product of row i of A and column j of B: "
            "`sum(A[i][k] * B[k][j] for k in range(K))`.",
            "In i-k-j order, the innermost loop adds `A[i][k] * B[k][j]` to `C[i][j]` for every "
            "j: it walks row k of B and row i of C, both with stride 1.",
            "`gflops` is `2 * M * N * K / seconds / 1e9`.",
        ),
    ),
    Assignment(
        "01_naive",
        "The first CUDA kernel",
        idea="""\
A kernel is a function that every thread of a **grid** runs. Threads come in **blocks** (here
32×32); `blockIdx`, `blockDim` and `threadIdx` tell a thread which element of C is its own.
The grid is rounded up to whole blocks, so threads beyond the edge of C must do nothing:
that bounds check is what makes a kernel right on 1001×777, not just on 1024×1024.""",
        task="""\
Write the body of `sgemm_naive`: one thread computes one element of C. As in the course's
step 01, `threadIdx.x` walks the **rows** of C (the geometry in the registry launches the grid
that way: `grid.x` covers the rows). About 10 lines.""",
        regions=("body",),
        hints=(
            "`row = blockIdx.x * blockDim.x + threadIdx.x`, and `col` the same along y.",
            "Guard everything with `if (row < M && col < N)`: the last blocks stick out of C.",
            "Accumulate in a `float`, then store `alpha * acc + beta * C[row * N + col]`.",
        ),
    ),
    Assignment(
        "02_coalescing",
        "Global memory coalescing",
        idea="""\
The 32 threads of a warp load together. When they touch 32 neighbouring floats, the hardware
serves them with one 128-byte transaction; when they touch 32 different rows, it needs 32.
In step 01, `threadIdx.x` walked the rows of C, so a warp read 32 rows of A. Swap the roles of
x and y and a warp reads one row of A (a broadcast) and 32 neighbouring floats of B.""",
        task="""\
Rewrite the two lines that compute `row` and `col` so that `threadIdx.x` walks the
**columns** of C (the registry launches this step with `grid.x` over the columns). The rest of
the kernel is the same as step 01. Use the explorer below to see the transactions.""",
        regions=("indices",),
        hints=(
            "`col` now comes from the x components: `blockIdx.x * blockDim.x + threadIdx.x`.",
            "`row` comes from y. Nothing else changes.",
        ),
    ),
    Assignment(
        "03_smem_tiling",
        "Shared-memory tiling",
        idea="""\
In steps 01–02 every thread reads its own row of A and column of B from global memory, so
each value is read BS times by different threads. A block of BS×BS threads can instead copy
one BS×BS tile of A and one of B into **shared memory**, wait with `__syncthreads()`, and let
every thread read from there. Two barriers per tile: one before reading (the tile is
complete), one after (nobody still reads it when the next copy starts).""",
        task="""\
Write the main loop: for each tile of K, copy one element of A and one of B per thread into
`As` and `Bs` (0 outside the matrices), synchronize, accumulate the BS products, synchronize
again. About 12 lines.""",
        regions=("mainloop",),
        hints=(
            "Thread (tx, ty) copies `A[row][k0 + tx]` into `As[ty][tx]` and "
            "`B[k0 + ty][col]` into `Bs[ty][tx]`.",
            "Store 0 where `k0 + tx >= K` (or `row >= M`): then the last, partial tile needs no "
            "special case in the inner loop.",
            "Leave out the second `__syncthreads()` and the kernel still passes small tests on a "
            "GPU; on the CPU backend it fails every time. Try it.",
        ),
    ),
    Assignment(
        "04_blocktiling_1d",
        "1D register blocking",
        idea="""\
Each FMA in step 03 needs two shared-memory loads, and shared memory cannot feed the FMA units
that fast. If each thread computes TM results down a column of C, it can load one value of
`Bs` into a register and use it TM times: about 1 + 1/TM loads per FMA instead of 2.""",
        task="""\
Write the inner loop over the BK values of the tile: load `Bs[k][threadCol]` once, then add its
products with TM values of `As` to the TM accumulators. About 6 lines.""",
        regions=("inner",),
        hints=(
            "`const float b = Bs[k][threadCol];` outside the loop over m.",
            "`acc[m] += As[threadRow * TM + m][k] * b;`",
        ),
    ),
    Assignment(
        "05_blocktiling_2d",
        "2D register blocking",
        idea="""\
Keep TN values of B in registers as well as TM values of A, and every k becomes an **outer
product**: TM + TN loads feed TM × TN FMAs. With TM = TN = 8 that is 16 loads for 64 FMAs,
and the block's 256 threads cover a 128×128 tile of C.""",
        task="""\
Write the inner loop: for each k, load `regM` (TM values of a column of `As`) and `regN` (TN
values of a row of `Bs`), then accumulate their outer product into `acc`. About 12 lines.""",
        regions=("inner",),
        hints=(
            "`regM[m] = As[threadRow * TM + m][k];` and `regN[n] = Bs[k][threadCol * TN + n];`",
            "`acc[m][n] += regM[m] * regN[n];` in two nested loops.",
            "`#pragma unroll` on every loop keeps `acc` in registers: a loop the compiler cannot "
            "unroll indexes `acc` at run time, which moves it to slow local memory (see "
            "`python -m autograder compile`).",
        ),
    ),
    Assignment(
        "06_vectorized",
        "Vectorized loads",
        idea="""\
A `float4` load moves 16 bytes in one instruction. Loading A's tile as `float4`s and storing
it **transposed** (`As[k][m]`) makes the TM values a thread needs for one k consecutive, so
they load as `float4`s from shared memory too. A `float4` access must be 16-byte aligned:
when K (for A) or N (for B) is not a multiple of 4, row starts are misaligned, and the kernel
must fall back to scalar loads. `load4` does that.""",
        task="""\
Write the copy of the two tiles: A's tile through `load4` and stored transposed into `As`,
B's tile through `load4` straight into `Bs` as a `float4`. About 15 lines.""",
        regions=("load",),
        hints=(
            "Each thread copies `BM * BK / (4 * NUM_THREADS)` float4s of A: "
            "row `r = idx / (BK / 4)`, column `c = idx % (BK / 4) * 4`.",
            "A float4 `a` from row r, columns c..c+3 of A goes to `As[c + 0][r] = a.x; ... "
            "As[c + 3][r] = a.w;`.",
            "For B: `*reinterpret_cast<float4*>(&Bs[r][c]) = load4(B, k0 + r, blockCol + c, K, N, "
            "vecB);`",
        ),
    ),
    Assignment(
        "07_warptiling",
        "Warptiling",
        idea="""\
Between the block tile and the thread tile sits the level the hardware schedules: the warp.
Each warp computes a WM × WN piece of the block tile; inside it, each thread computes
WMITER × WNITER small TM × TN tiles, spread WSUBM rows and WSUBN columns apart, so that the 32
lanes read neighbouring `float4`s of shared memory (or the same one) while each thread still
keeps many accumulators. Everything else is step 06: the same copies, bounds and tails.""",
        task="""\
Write the warp level, the loop over the BK values of the slice: for each k, load the thread's
WMITER × TM values of `As` into `regM` and its WNITER × TN values of `Bs` into `regN` with
`copy4`, from where its warp and lane put them, then accumulate their outer product into `acc`.
About 25 lines.""",
        regions=("inner",),
        hints=(
            "The thread's rows in sub-tile wm start at "
            "`warpRow * WM + wm * WSUBM + threadRow * TM`.",
            "Its columns in sub-tile wn start at `warpCol * WN + wn * WSUBN + threadCol * TN`.",
            "`copy4(&regM[wm * TM + m], &As[k][...])` for m = 0, 4, ...; the same for regN; then "
            "`acc[m][n] += regM[m] * regN[n]` for every m < WMITER * TM and n < WNITER * TN.",
        ),
    ),
    Assignment(
        "08_pipelining",
        "Software pipelining",
        idea="""\
Step 07's threads are fewer and busier, so a block waits twice and nothing hides it: at every
slice for global memory (the barrier after the copy) and at every k for shared memory (the
fragments before the FMAs). Software pipelining starts each load one step early. The next slice
of A and B goes into registers while the current one is multiplied, a float4 at a time, and is
stored into a second shared buffer, so one barrier per slice is enough; the fragments for
k + 1 go into a second set of registers while the FMAs of k run.""",
        task="""\
Write the pipeline's two parts: its fill, and `slice(k0, buf, next)`, which multiplies slice k0
(in shared buffer `buf`) while the next one is on its way. Written for you: `fetch(k0, how, p)`
(this thread's float4 p of slice k0 into registers, the way `how` says: `CHECKED` at the edges),
`stash(buf, p, how)` (that float4 into shared buffer `buf`), `load_fragments(buf, k, set)`,
`multiply(set)`, `sync()` (the barrier: `__syncthreads()`, or in step 09's blocks of several
groups of warps the group's own), and the walk over K that calls `slice`. A thread moves `LOADS`
float4s of each slice. Fill the pipeline with slice 0 and its first fragments. In `slice`,
unless `next` is `NONE`, fetch float4 p of the next slice at k = p * BK / LOADS, and stash
float4 p - 1 just before (stash is told how its float4 was fetched). For each k load the
fragments for k + 1 into the other set before multiplying those for k. At the last k, if there
is a next slice, hand over: stash its last float4, pass the barrier, load its first fragments,
and only then run the last FMAs. About 25 lines.""",
        regions=("mainloop",),
        hints=(
            "The fill: fetch every p of slice 0 (`fetch(0, CHECKED, p)` for p below `LOADS`), "
            "stash them into buffer 0 (`stash(0, p, CHECKED)`), then "
            "`sync(); load_fragments(0, 0, 0);`.",
            "`auto slice = [&](int k0, int buf, Next next) "
            "{ for (int k = 0; k < BK; ++k) { ... } };`. "
            "The walk passes `NONE` for the last slice of the block's share of K (layerK: all of "
            "K, except in step 09's split-K).",
            "For each k, first the loads: for each p, if `next != NONE && k == p * BK / LOADS`, "
            "`stash(buf ^ 1, p - 1, next)` (when p > 0) and `fetch(k0 + BK, next, p)`. Then, if "
            "`k + 1 < BK`, `load_fragments(buf, k + 1, (k + 1) % 2)`; else, if `next != NONE`, "
            "`stash(buf ^ 1, LOADS - 1, next); sync(); load_fragments(buf ^ 1, 0, 0);`. "
            "Then `multiply(k % 2)`.",
            "One barrier per slice is enough: `stash` writes buffer `buf ^ 1`, which every warp "
            "finished reading before the previous barrier.",
        ),
    ),
    Assignment(
        "09_by_shape",
        "Choosing by shape",
        idea="""\
A GPU is only busy when every SM has blocks to run. 128×128 tiles cut a 4096² C into 1024
blocks, but a 512² C into 16: on a GPU of 40 or 132 SMs most of them idle, however long K
is. **Split-K** cuts K instead: a grid S layers deep, where layer s multiplies its own run of
K into its own M×N matrix of partial sums, gives S times the blocks, at the price of writing
S matrices and reading them back. The course's dispatcher (`autograder/run/by_shape.py`) picks,
for each M, N, K, a tile shape and a number of layers, from a table the tuner measured on
the GPU at hand.""",
        task="""\
Write the body of `splitk_reduce`, which adds the layers up: for each element (row, col) of
C, `C = alpha * (partial[0] + ... + partial[splits - 1]) + beta * C`, where layer s of that
element is `partial[s * M * N + row * N + col]`. With beta = 0, leave C unread, as step 08
does: BLAS lets C hold anything then, and the checker's C holds infinity there. One thread
per element of C, launched as in step 02 (`threadIdx.x` walks the columns). The checker runs
it inside the whole GEMM: step 08's kernel writes the layers, your kernel turns them into C,
with K split in 2 to 4 layers on every shape. About 10 lines.""",
        regions=("body",),
        hints=(
            "`row = blockIdx.y * blockDim.y + threadIdx.y`, `col = blockIdx.x * blockDim.x + "
            "threadIdx.x`; return when `row >= M || col >= N`.",
            "One layer is M × N floats, so layer s starts `s * M * N` floats in. With S layers "
            "that can pass 2³¹ floats: compute offsets in `size_t`.",
            "Sum the layers in a `float`, then `C[i] = alpha * sum + beta * C[i]` once, "
            "where beta != 0; with beta = 0, `C[i] = alpha * sum` (0 * C[i] is NaN where C[i] "
            "is infinity or NaN).",
        ),
    ),
    Assignment(
        "12_wgmma_tf32",
        "Tensor cores, Hopper's way",
        idea="""\
An H100 multiplies fastest with **wgmma**: a warpgroup (4 warps, 128 threads) issues one
64×BM×8 product (BM = 256 rows of C, fewer for small shapes) whose B operand the tensor cores read straight from shared memory, and goes on
while they work. The tiles get there by **TMA**, a copy engine that moves a whole box of a matrix
on one thread's request and counts its bytes on an **mbarrier**. So the block splits its work:
one *producer* warpgroup fills a ring of STAGES shared buffers, two *consumer* warpgroups
multiply. Each buffer has two barriers: `full[s]` (its slice has landed) and `empty[s]` (every
consumer is done with it). This step needs an sm_90a GPU (an H100 or H200); without one, the
notebook compiles your kernel for it and the chapter shows what it does.""",
        task="""\
Write the consumer's loop over the slices of K. For slice t, in buffer `s = t % STAGES`: wait
until `full[s]` has completed its phase for this round of the ring, load this thread's
fragments of B^T from `bs` (rounded to TF32 with `to_tf32`), then fence, issue the BK / 8 wgmmas
against A's slice in `as` (`descriptor(as + 8 * kk)`), commit them, wait for them, and say on
`empty[s]` that you are done with the buffer. The producer above, the helpers, `column` and
the epilogue below are written for you. About 25 lines.""",
        regions=("mainloop",),
        hints=(
            "Buffer s is filled once per round of the ring, so the phase to wait for is the "
            "round's parity: `bar_wait(&full[s], (t / STAGES) & 1);`. A wrong parity either "
            "waits forever or reads a buffer before it has landed.",
            "`unsigned a[BK / 8][4];` For fragment kk, register i: "
            "`j = 2 * warp + (i & 1)`, column `n = 64 * consumer + column(j, g)` of the block "
            "tile, `k = 8 * kk + q + 4 * (i >> 1)`; B's slice lies as BN / 32 swizzled boxes of "
            "BK rows by 32, so the float is `bs[n / 32 * BK * 32 + swizzled(k, n % 32)]`.",
            "`wgmma_fence();` then `wgmma_64xNx8<BM>(acc, a[kk], descriptor(as + 8 * kk));` for "
            "each kk, `wgmma_commit(); wgmma_wait<0>();` and only then `bar_arrive(&empty[s]);` "
            "from every thread: the tensor cores read `as` and `a` until the wait returns, and "
            "the producer refills the buffer as soon as `empty[s]` completes.",
        ),
    ),
    Assignment(
        "13_wgmma_3xtf32",
        "FP32 on tensor cores (3xTF32)",
        idea="""\
TF32 keeps 10 of FP32's 23 stored mantissa bits: rounding an input to TF32 costs up to 2^-11 of
it, where FP32 costs 2^-24. Split each input x into two TF32 values, **big** = x rounded to TF32
and **small** = what is left (x − big), rounded too: big + small holds about 22 of x's 24
significant bits. Then
a·b ≈ big_a·big_b + big_a·small_b + small_a·big_b (the small·small term is below FP32's
rounding), three tensor-core products per term instead of one, and the result is judged with
the **FP32** tolerance, as the ladder is. This step is step 12 with the split: the producer
splits A's slices in shared memory (A's small parts in `AsSmall`), the consumers split B's
fragments as they load them. The tensor cores sum one slice of K at a time into `part`, and the
FP32 lanes add each slice's sums into `acc` (promotion: the tensor cores' additions round toward
zero, and over all of K that would show). Each block notes the largest magnitude of its rows of A
and columns of B as it splits them; one that found any far from 1 multiplies its slices again,
scaled by powers of two, so that inputs near either end of the float range keep their bits
(written for you: `split_scaled`; your split serves the first pass, and every ordinary block). It
needs an sm_90a GPU (an H100 or H200); without one, the notebook compiles your kernel for it and
the chapter shows what it does.""",
        task="""\
Write the split, `__device__ __forceinline__ void split(float x, unsigned& big, unsigned&
small)`, giving `big` and `small` as TF32 bit patterns (`to_tf32` rounds a float and returns
its bits), which the producer uses for A and the consumers for B; then the slice's products in
the consumer's loop: for each `kk`, add A's big and small parts (`descriptor(as + 8 * kk)` and
`descriptor(asSmall + 8 * kk)`) times B's (`big[kk]`, `small[kk]`) into `part`, every product
but small·small, the slice's first product starting `part` afresh. About 15 lines.""",
        regions=("split", "products"),
        hints=(
            "`to_tf32(x)` rounds x and gives the bits of `big`; `__uint_as_float(big)` is the "
            "number they hold. `small` is what x - big leaves, rounded to TF32 the same way. "
            "(Numbers near FP32's top may reach it in the first pass: the block then finds them "
            "far from 1 and splits them again with `split_scaled`.)",
            "`wgmma_64xNx8<BM, false>(part, small[0], descriptor(as));` starts the slice's sum "
            "(A's big by B's small; `<false>`: part's old values are not added), "
            "`wgmma_64xNx8<BM, true>(...)` adds to it. The small terms first, then the big ones: "
            "the tensor cores drop what falls below the bits they keep of the largest term "
            "so far.",
            "Leave out a cross product and each term keeps an error of up to 2^-11 of it: the "
            "checker finds the result outside the FP32 tolerance. Start `part` afresh in no "
            "slice, and each slice's sums are added to `acc` again and again.",
        ),
    ),
)


def assignment(name: str) -> Assignment:
    for a in ASSIGNMENTS:
        if name in (a.name, a.step):
            return a
    raise KeyError(f"no assignment {name!r}; they are {', '.join(a.name for a in ASSIGNMENTS)}")

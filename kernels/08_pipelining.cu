// Step 08: software pipelining. Step 07's warptiling, with every wait for
// memory hidden behind FMAs (CUTLASS calls this MmaPipelined).
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// In step 07 a warp waits twice: at each slice, for the copy from global
// memory to finish before the barrier, and at each k, for its fragments to
// arrive from shared memory before its FMAs. Its threads are fewer and busier
// than step 06's, so a block can no longer hide those waits behind other
// blocks' work; this step hides them itself, by starting each load one step
// before its values are needed. The loop nest:
//
//   block tile   for k0 in K, step BK:    compute on slice k0 in shared memory
//   warp tile      for k in BK:           load the fragments for k + 1 while
//                                         the FMAs of k run; now and then,
//                                         a float4 of slice k0 + BK into
//                                         registers
//   thread tile      for wm, wn, m, n:    acc += regM * regN  (registers only)
//
// Each trick was measured on an H100, in % of cuBLAS at 4096^3, before -> after
// (74%: warptiling alone, as in step 07, at the best tiles found then):
// - it loads slice k0 + BK into registers before multiplying slice k0, and
//   keeps two shared-memory buffers so that one barrier per slice does
//   (74 -> 81);
// - it loads the fragments for k + 1 while the FMAs of k run, and the first
//   fragments of the next slice before the last FMAs of this one, so that no
//   FMA waits for shared memory, not even right after the barrier; BK = 16
//   halves the barriers and index arithmetic per FMA, and the launch bounds
//   keep two blocks per SM in spite of it (81 -> 84, these three together);
// - blocks inside the matrices load whole float4s without bounds checks
//   (84 -> 88);
// - the FMAs of a thread tile run in serpentine order (88 -> 91);
// - those blocks walk K in loops of their own, one for float4 loads and one
//   for single floats where rows are not 16-byte aligned, so that no loop
//   carries the others' bounds checks and registers (93 -> 95; at
//   4095x4097x4093, whose rows are not aligned, 87 -> 96);
// - the next slice is fetched one float4 at a time, spread over the slice's
//   ks, instead of all at its first k: then one float4 of registers at a time
//   holds it, not four. At 128 registers a thread the compiler had made room
//   for the whole slice by issuing its loads late in the slice, and the
//   fragment loads there right before their FMAs, which then waited for them;
// - blocks of 256 x 128, 16 warps of 64 x 32 (one block per SM), instead of
//   128 x 128 with 8 warps of 32 x 64 (two per SM): each value loaded from
//   global memory serves more FMAs, and at 4095x4097x4093 the 528 tiles make
//   exactly four rounds of 132 SMs (95 -> 100, these two together);
// - where rows are not aligned, a thread's four floats of B lie a quarter row
//   apart (load4_spread), so that each load of a warp is coalesced. At the
//   unaligned shapes measured that was worth nothing (-3 to +3 points), but
//   in tiles 256 wide the whole kernel compiled with it ran the big aligned
//   shapes faster, with the same source for their loop (99.5 -> 101.0;
//   8192^3 100.3 -> 102.1, 2048^3 97.5 -> 99.3): ptxas allocates and
//   schedules the registers of every loop of a kernel together. In tiles 128
//   wide it spilled on sm_80 instead. Kept where it helps (SPREAD_B), as the
//   walk's spelling is.
// SLIDE is step 09's, for its smaller tiles: a block whose tile runs past C's
// last row or column slides back inside C, so that it too loads without
// bounds checks. In one wave of blocks the slowest sets the time, and with
// the checks a block at the edges ran 1000x776x516 in 64 x 128 tiles of 8
// warps 16% slower than the rest (37.6 us against 32.3 us for the whole
// product once every block slid; H100, 2026-11-27). It changes what ptxas
// makes of the other loops too, so step 09 sets it per tile shape, where it
// was measured faster (autograder/run/by_shape.py); with B read spread out
// in the 64 x 128 tiles of 8 warps too (SPREAD_B), 1001x777x513 ran at 80%
// of cuBLAS instead of 75%. Step 08's own tiles run without it: there it
// cost up to a point at 4096^3 and gained nothing at 4095x4097x4093. Step
// 09's tiles of the same shape slide, and on sm_90 they read B spread out
// too (SPREAD, which step 09 sets for the GPU at hand: on sm_75 and sm_80
// ptxas spilled them): then 4095x4097x4093 ran at 100.5% of cuBLAS instead
// of 99.2%. Either alone gained nothing there.
// RAGGED is step 09's too: where K is not a multiple of BK, the last slice
// stops where K does, instead of multiplying the zeros its loads filled in
// for the rest. That is up to BK - 1 ks of FMAs of the whole slice: with
// 64 x 128 tiles of 8 warps, 2000x3000x100 (7 slices, the last one 4 ks
// long) ran at 102% of cuBLAS instead of 96%, and 1001x777x513 at 81%
// instead of 80% (H100, 2026-11-27). The check changes what ptxas makes of
// the other loops, for the worse where K is a multiple of BK (1024^3: 99%
// instead of 101%), so step 09 runs it only where K is not.
// GROUPS is step 09's too, for products too small to fill the GPU: the
// block has GROUPS sets of warps, each multiplying its own run of K in
// buffers of its own (its barriers are its own: `sync`), and at the end
// they add their sums up in shared memory. A small C gives few blocks, and
// each walks all of K slice by slice, one wait for memory after another;
// in groups each walks a GROUPSth of it, with no second launch and no
// partial product in global memory, as split-K's layers need. With 4 groups
// of two warps, 32 x 32 tiles ran 128^3 at 118% of cuBLAS and 256^3 at 136%,
// where the best tiles without groups ran at 89% and 85%; 64 x 128 tiles in
// 2 groups ran 1001x777x513 at 88% instead of 82% (H200, 2026-11-30, GPU
// time).
// STAGE is step 09's too: where C's rows are not aligned for float4s, each
// warp writes C through shared memory, its 32 threads storing neighbouring
// floats of a row (see the epilogue). Step 09 ran 2000x3001x100 at 91% of
// cuBLAS with it and 79% without, 1001x777x513 at 93% and 87% (H200,
// 2026-11-30, GPU time). In 256 x 128 tiles it made ptxas spill on sm_75.
// BLOCKS is step 09's too: the fewest blocks an SM must hold, where a tile
// shape is better served by another number than blocks_per_sm's (0 keeps
// that). A product too small to fill the GPU gives a scheduler about one
// warp, and then the time is that warp's latency: a budget of 64 registers
// for 16 accumulators left ptxas no room to load ahead. With 2 instead of 8,
// 32 x 64 tiles of 4 warps (94 registers) ran 128^3 at 99% of cuBLAS instead
// of 88%, 256^3 at 97% instead of 82% and 512x512x128 at 106% instead of
// 94% (H200, 2026-12-01, GPU time). Where an SM must hold many blocks at
// once, the same freedom costs: blocks that no longer fit wait for a second
// wave.
// What each is worth in the final kernel: `python -m autograder bench
// --ablation` (book/data/ablation_*).

// [docs:helpers]
// True when p can be read and written as float4.
__device__ __forceinline__ bool aligned16(const void* p) {
  return reinterpret_cast<size_t>(p) % 16 == 0;
}

// src[row * stride + col ... + 3] of a matrix whose rows are `stride` floats
// apart, with 0 for elements outside its first rows x cols. `vec` says every
// row start is 16-byte aligned (stride % 4 == 0 and src aligned); col is
// always a multiple of 4.
__device__ __forceinline__ float4 load4(const float* src, int row, int col,
                                        int rows, int cols, int stride,
                                        bool vec) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (row >= rows) return v;
  const float* p = src + row * stride + col;
  if (vec && col + 3 < cols) return *reinterpret_cast<const float4*>(p);
  if (col + 0 < cols) v.x = p[0];
  if (col + 1 < cols) v.y = p[1];
  if (col + 2 < cols) v.z = p[2];
  if (col + 3 < cols) v.w = p[3];
  return v;
}

// p[0..3], all inside the matrix: one 16-byte load where `vec` says rows
// are aligned (as in load4), else four 4-byte loads.
__device__ __forceinline__ float4 load4_inside(const float* p, bool vec) {
  if (vec) return *reinterpret_cast<const float4*>(p);
  return make_float4(p[0], p[1], p[2], p[3]);
}

// p[0], p[step], p[2 * step], p[3 * step], all inside the matrix: where rows
// are not aligned for float4s, a thread's four floats of a row of B lie a
// quarter of the slice's width apart, so that the 32 threads of a warp read
// neighbouring floats with each load (step 02's coalescing) ...
__device__ __forceinline__ float4 load4_spread(const float* p, int step) {
  return make_float4(p[0], p[step], p[2 * step], p[3 * step]);
}

// ... and are stored as far apart in shared memory.
__device__ __forceinline__ void store4_spread(float* p, int step, float4 v) {
  p[0] = v.x;
  p[step] = v.y;
  p[2 * step] = v.z;
  p[3 * step] = v.w;
}

// dst[0..3] = src[0..3] with one 16-byte load (src must be 16-byte aligned).
__device__ __forceinline__ void copy4(float* dst, const float* src) {
  const float4 v = *reinterpret_cast<const float4*>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
}

// C[row * N + col ... + 3] = alpha * acc + beta * C[...], inside C only, and
// with OWN only from column `from` on (a block's own columns: see SLIDE in the
// kernel). With beta = 0, C is not read: BLAS lets it hold anything then, and
// step 09's partial products are written this way into memory nobody cleared.
template <bool OWN>
__device__ __forceinline__ void update4(float* C, int row, int col, int M,
                                        int N, int from, bool vec, float4 acc,
                                        float alpha, float beta) {
  if (row >= M) return;
  float* p = C + row * N + col;
  const bool readC = beta != 0.0f;
  if (vec && col + 3 < N) {
    // With vec, col and from are multiples of 4: the four are all or none.
    if (OWN && col < from) return;
    float4 c = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (readC) c = *reinterpret_cast<float4*>(p);
    c.x = alpha * acc.x + beta * c.x;
    c.y = alpha * acc.y + beta * c.y;
    c.z = alpha * acc.z + beta * c.z;
    c.w = alpha * acc.w + beta * c.w;
    *reinterpret_cast<float4*>(p) = c;
    return;
  }
  auto mine = [&](int c) { return (!OWN || from <= c) && c < N; };
  if (mine(col + 0)) p[0] = alpha * acc.x + (readC ? beta * p[0] : 0.0f);
  if (mine(col + 1)) p[1] = alpha * acc.y + (readC ? beta * p[1] : 0.0f);
  if (mine(col + 2)) p[2] = alpha * acc.z + (readC ? beta * p[2] : 0.0f);
  if (mine(col + 3)) p[3] = alpha * acc.w + (readC ? beta * p[3] : 0.0f);
}
// [docs:helpers-end]

// The threads of a block: one warp per WM x WN warp tile.
__host__ __device__ constexpr int block_threads(int BM, int BN, int WM, int WN) {
  return (BM / WM) * (BN / WN) * 32;
}

// How many blocks an SM should hold: as many as its 64K registers fit, at what
// a thread holds. That is its accumulators, both sets of fragments, its share
// of the prefetched slice and about 16 registers of indices and pointers, or
// twice its accumulators where that is more (the compiler takes about that at
// the largest warp tiles). __launch_bounds__ makes the compiler stay within
// that budget: left alone, it takes a few registers more than 128 for an
// 8 x 8 thread tile, and then a block of 512 threads cannot launch at all
// (512 x 128 is the SM's 64K), and one of 256 has an SM to itself, with
// nothing to run while it waits. (At step 09's small tiles,
// 32 accumulators a thread, the fixed part is what counts: a budget of two
// registers per accumulator made them spill.) A block of GROUPS groups has
// that many times the threads, and each thread its group's indices too.
__host__ __device__ constexpr int blocks_per_sm(int BM, int BN, int BK, int WM,
                                                int WN, int WNITER, int TN,
                                                int GROUPS) {
  const int threads = block_threads(BM, BN, WM, WN);
  const int accumulators = WM * WN / 32;
  const int fragments = accumulators / (WNITER * TN) + WNITER * TN;
  // In groups, 8 more: at 64, 32 x 32 tiles in 4 groups spilled.
  const int held = accumulators + 2 * fragments + BK * (BM + BN) / threads +
                   (GROUPS > 1 ? 24 : 16);
  const int wanted = held > 2 * accumulators ? held : 2 * accumulators;
  // A thread gets its registers 8 at a time: at a cap of 85, ptxas has 80.
  const int registers = (wanted + 7) / 8 * 8;
  const int blocks = 65536 / (registers * threads * GROUPS);
  return blocks > 1 ? blocks : 1;
}

// [docs:kernel]
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN,
          int SLIDE = 0, int RAGGED = 0, int SPREAD = 0, int GROUPS = 1,
          int STAGE = 0, int BLOCKS = 0>
__global__ void __launch_bounds__(
    GROUPS * block_threads(BM, BN, WM, WN),
    BLOCKS ? BLOCKS
           : blocks_per_sm(BM, BN, BK, WM, WN, WNITER, TN, GROUPS))
sgemm_pipelining(int M, int N, int K, float alpha, const float* A,
                 const float* B, float beta, float* C) {
  // [docs:params]
  constexpr int NUM_THREADS = block_threads(BM, BN, WM, WN);
  // A warp's 32 threads each own WMITER x WNITER tiles of TM x TN.
  constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
  constexpr int WSUBM = WM / WMITER;  // rows of one warp sub-tile
  constexpr int WSUBN = WN / WNITER;  // columns of one warp sub-tile
  // [docs:params-end]
  static_assert(WMITER >= 1 && (WSUBM / TM) * (WSUBN / TN) == 32,
                "a warp sub-tile is exactly 32 thread tiles");
  static_assert(BK % 4 == 0 && BN % 4 == 0 && TM % 4 == 0 && TN % 4 == 0,
                "tiles are moved in groups of 4 floats");
  static_assert(BM * BK % (4 * NUM_THREADS) == 0 &&
                    BK * BN % (4 * NUM_THREADS) == 0,
                "every thread copies the same number of float4s");
  // Two buffers per tile: while the block computes on one, the next slice of
  // K is stored into the other, so one barrier per slice is enough. With
  // GROUPS, two for each group: group g's are 2 * g and 2 * g + 1. (As is
  // transposed: As[buf][k][m].)
  __shared__ __align__(16) float As[2 * GROUPS][BK][BM];
  __shared__ __align__(16) float Bs[2 * GROUPS][BK][BN];
  // The thread's group and its place in it (with GROUPS = 1, the block and
  // threadIdx.x), read where they are used: ptxas reads threadIdx.x again as
  // it needs it, where a variable would hold a register through the main
  // loop (and at 64 registers a thread, spilled).
  auto group = [&] {
    return GROUPS == 1 ? 0 : static_cast<int>(threadIdx.x / NUM_THREADS);
  };
  auto tid = [&] {
    return GROUPS == 1 ? threadIdx.x : threadIdx.x % NUM_THREADS;
  };
  // The barrier of the thread's group: each walks its own run of K, so they
  // pass different numbers of barriers (barrier 0 is the block's).
  auto sync = [&] {
    if (GROUPS == 1) {
      __syncthreads();
    } else {
      __barrier_sync_count(1 + group(), NUM_THREADS);
    }
  };

  // The block's tile: its own rows and columns of C, blockIdx.y * BM and
  // blockIdx.x * BN on. With SLIDE, a tile that runs past C's last row or
  // column slides back to end at C's edge (where C has a whole tile's rows or
  // columns): then it lies inside the matrices and loads without bounds
  // checks like every other block (the walk below), computes a strip that
  // its neighbour computes too, and writes only its own part (the epilogue).
  const int blockRow =
      SLIDE ? max(0, min(static_cast<int>(blockIdx.y) * BM, M - BM))
            : blockIdx.y * BM;
  const int blockCol =
      SLIDE ? max(0, min(static_cast<int>(blockIdx.x) * BN, N - BN))
            : blockIdx.x * BN;
  // [docs:indices]
  // Where this thread's warp sits in the block tile ...
  const int warp = tid() / 32;
  const int warpRow = warp / (BN / WN);
  const int warpCol = warp % (BN / WN);
  // ... and where this thread sits in each warp sub-tile.
  const int lane = tid() % 32;
  const int threadRow = lane / (WSUBN / TN);
  const int threadCol = lane % (WSUBN / TN);
  // [docs:indices-end]
  // Uniform for the whole launch, so these branches never diverge.
  const bool vecA = K % 4 == 0 && aligned16(A);
  const bool vecB = N % 4 == 0 && aligned16(B);
  // [docs:split]
  // The block's share of K: all of it, unless the grid has layers
  // (gridDim.z > 1, step 09's split-K). Then layer z multiplies only the z-th
  // run of whole BK-wide slices, layerK long, as a product of its own:
  // A and B start at kBegin (A's rows are still K floats apart), and
  // the partial product goes to the z-th M x N matrix of C, which holds
  // gridDim.z of them one after the other (the epilogue moves C there). A
  // reduction adds them up afterwards. With GROUPS, each layer's run is cut
  // again, a run for each group.
  const unsigned runs = GROUPS * gridDim.z;
  const int kPerLayer = (K + runs * BK - 1) / (runs * BK) * BK;
  const int kBegin = (blockIdx.z * GROUPS + group()) * kPerLayer;
  const int layerK = max(0, min(K - kBegin, kPerLayer));
  A += kBegin;
  B += static_cast<size_t>(kBegin) * N;
  // [docs:split-end]

  // [docs:prefetch]
  // The next slice of A and B, on its way from global memory to registers
  // while the current slice is being multiplied: the loads' latency hides
  // behind the FMAs instead of stalling the block at the barrier. Each thread
  // moves LOADS float4s of a slice, B's first, then A's (faster on the H100
  // than A's first).
  constexpr int A_LOADS = BM * BK / (4 * NUM_THREADS);
  constexpr int B_LOADS = BK * BN / (4 * NUM_THREADS);
  constexpr int LOADS = A_LOADS + B_LOADS;
  float4 nextSlice[LOADS];
  // Whether B's unaligned rows are read spread out (load4_spread): where it
  // was measured faster (see the top) and compiles without spilling, in the
  // tiles 256 wide and in those 128 wide whose threads are 256 at most and
  // prefetch three float4s at most; and where step 09 asks for it (SPREAD).
  constexpr bool SPREAD_B =
      SPREAD || BN >= 256 || (BN >= 128 && LOADS <= 3 && NUM_THREADS <= 256);
  // A block whose tile lies inside C reads every slice but perhaps the last
  // one wholly inside A and B, and can load it with no bounds checks, from
  // the block's own corner of A and B (32-bit offsets from there need fewer
  // registers than full 64-bit addresses).
  const bool interior = blockRow + BM <= M && blockCol + BN <= N;
  const float* blockA = A + blockRow * K;
  const float* blockB = B + blockCol;
  // How fetch loads a slice: with every float4 checked at the edges, or
  // inside the matrices in single floats or in float4s; NONE: there is no
  // next slice to load. Each call passes a constant, so that each loop of the
  // walk below is compiled with one way of loading only.
  enum Next { CHECKED, INSIDE_FLOATS, INSIDE_FLOAT4S, NONE };
  // Float4 p of slice k0 into registers, the way `how` says: row r of the
  // slice, columns 4q ... 4q + 3; or of B, with INSIDE_FLOATS, columns q,
  // q + W, q + 2W and q + 3W of its W float4s a row (load4_spread) ...
  auto fetch = [&](int k0, Next how, int p) {
    if (p < B_LOADS) {
      const int r = (tid() + p * NUM_THREADS) / (BN / 4);
      const int q = (tid() + p * NUM_THREADS) % (BN / 4);
      const float* row = blockB + (k0 + r) * N;
      nextSlice[p] =
          how == CHECKED         ? load4(B, k0 + r, blockCol + 4 * q, layerK, N, N, vecB)
          : how == INSIDE_FLOATS && SPREAD_B ? load4_spread(row + q, BN / 4)
                                             : load4_inside(row + 4 * q, how == INSIDE_FLOAT4S);
    } else {
      const int r = (tid() + (p - B_LOADS) * NUM_THREADS) / (BK / 4);
      const int q = (tid() + (p - B_LOADS) * NUM_THREADS) % (BK / 4);
      const float* row = blockA + r * K + k0;
      nextSlice[p] =
          how == CHECKED ? load4(A, blockRow + r, k0 + 4 * q, M, layerK, K, vecA)
                         : load4_inside(row + 4 * q, how == INSIDE_FLOAT4S);
    }
  };
  // ... and from there into shared buffer buf, where `how` says it came from.
  auto stash = [&](int buf, int p, Next how) {
    if (p < B_LOADS) {
      const int r = (tid() + p * NUM_THREADS) / (BN / 4);
      const int q = (tid() + p * NUM_THREADS) % (BN / 4);
      if (how == INSIDE_FLOATS && SPREAD_B) {
        store4_spread(&Bs[2 * group() + buf][r][q], BN / 4, nextSlice[p]);
      } else {
        *reinterpret_cast<float4*>(&Bs[2 * group() + buf][r][4 * q]) = nextSlice[p];
      }
    } else {
      const int r = (tid() + (p - B_LOADS) * NUM_THREADS) / (BK / 4);
      const int q = (tid() + (p - B_LOADS) * NUM_THREADS) % (BK / 4);
      As[2 * group() + buf][4 * q + 0][r] = nextSlice[p].x;  // transpose on the way in
      As[2 * group() + buf][4 * q + 1][r] = nextSlice[p].y;
      As[2 * group() + buf][4 * q + 2][r] = nextSlice[p].z;
      As[2 * group() + buf][4 * q + 3][r] = nextSlice[p].w;
    }
  };
  // [docs:prefetch-end]

  float acc[WMITER * TM][WNITER * TN] = {{0.0f}};
  // Two sets of fragments: the FMAs of one k use one set while the values for
  // the next k are on their way into the other, so no FMA waits for them.
  float regM[2][WMITER * TM];
  float regN[2][WNITER * TN];
  // [docs:inner]
  // Level 2, the warp tile: the warp's fragments of As and Bs for one k ...
  auto load_fragments = [&](int buf, int k, int set) {
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
      for (int m = 0; m < TM; m += 4) {
        copy4(&regM[set][wm * TM + m],
              &As[2 * group() + buf][k][warpRow * WM + wm * WSUBM + threadRow * TM + m]);
      }
    }
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn) {
#pragma unroll
      for (int n = 0; n < TN; n += 4) {
        copy4(&regN[set][wn * TN + n],
              &Bs[2 * group() + buf][k][warpCol * WN + wn * WSUBN + threadCol * TN + n]);
      }
    }
  };
  // ... and level 3, the thread tiles: their outer products, in registers.
  auto multiply = [&](int set) {
#pragma unroll
    for (int n = 0; n < WNITER * TN; ++n) {
#pragma unroll
      for (int i = 0; i < WMITER * TM; ++i) {
        // Odd columns run bottom to top, so that every FMA shares an operand
        // with the one before it, at the turn too (regM[set][m]): most
        // likely what lets the hardware's operand reuse cache serve more of
        // them.
        const int m = n % 2 ? WMITER * TM - 1 - i : i;
        acc[m][n] += regM[set][m] * regN[set][n];
      }
    }
  };
  // [docs:inner-end]

  // [docs:mainloop]
  // Fill the pipeline: slice 0 in shared memory, its first fragments on their
  // way into registers.
#pragma unroll
  for (int p = 0; p < LOADS; ++p) fetch(0, CHECKED, p);
#pragma unroll
  for (int p = 0; p < LOADS; ++p) stash(0, p, CHECKED);
  sync();
  load_fragments(0, 0, 0);
  // Level 1, the block tile, one BK-wide slice: multiply slice k0 (in buffer
  // buf) while slice k0 + BK is fetched the way `next` says.
  auto slice = [&](int k0, int buf, Next next) {
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      // With RAGGED, the last slice ends where K does (see the top).
      if (RAGGED && next == NONE && k0 + k >= layerK) break;
      // The next slice, one float4 at a time, spread over this slice's ks:
      // float4 p is fetched at k = p * BK / LOADS and stored into the other
      // buffer when the next one is fetched. Nobody reads that buffer any
      // more: the previous barrier saw every warp finish with it.
#pragma unroll
      for (int p = 0; p < LOADS; ++p) {
        if (next != NONE && k == p * BK / LOADS) {
          if (p > 0) stash(buf ^ 1, p - 1, next);
          fetch(k0 + BK, next, p);
        }
      }
      if (k + 1 < BK) {
        load_fragments(buf, k + 1, (k + 1) % 2);
      } else if (next != NONE) {
        // Before the last k's FMAs, hand over to the next slice: store its
        // last float4, wait for every warp, and start loading its first
        // fragments, so that this k's FMAs cover their latency.
        stash(buf ^ 1, LOADS - 1, next);
        sync();
        load_fragments(buf ^ 1, 0, 0);
      }
      multiply(k % 2);
    }
  };
  // [docs:mainloop-end]

  // [docs:walk]
  // Walk the block's share of K. An interior block fetches every slice but
  // the last without checks, in a loop of its own for each way of loading:
  // each loop is then compiled without the others' code and registers.
  int k0 = 0, buf = 0;
  if (interior && !(vecA && vecB)) {
    for (; k0 + 2 * BK <= layerK; k0 += BK, buf ^= 1)
      slice(k0, buf, INSIDE_FLOATS);
  } else if (interior) {
    for (; k0 + 2 * BK <= layerK; k0 += BK, buf ^= 1)
      slice(k0, buf, INSIDE_FLOAT4S);
  }
  // What is left (all of it, for a block at the edges), with the checks, and
  // the last slice apart: it has no next slice to fetch.
  //
  // These lines, multiply's two loops and fetch's and stash's indices have
  // equivalent spellings (the loops in the other order, the last slice
  // inside the loop, one helper for the indices, ...). Each is
  // right, but at 128 registers ptxas fits some of them only by spilling (on
  // sm_75 or sm_80), and the fastest of the others on an H100 ran up to 12%
  // faster than the slowest: this is the spelling that was spill-free on
  // sm_75 and sm_90 and fastest there (on sm_80 the 256 x 128 tiles spill
  // 16 bytes).
  for (; k0 + BK < layerK; k0 += BK, buf ^= 1) slice(k0, buf, CHECKED);
  if (k0 < layerK) slice(k0, buf, NONE);
  // [docs:walk-end]

  // [docs:groups]
  // With GROUPS, group 0 adds up the others' sums, in group order, and
  // writes C; Bs holds them, each thread's accumulators a row of NUM_THREADS
  // apart from the next, so that a warp's 32 threads touch 32 banks.
  if (GROUPS > 1) {
    constexpr int COLS = WNITER * TN, ACC = WMITER * TM * COLS;
    static_assert((GROUPS - 1) * ACC * NUM_THREADS <= 2 * GROUPS * BK * BN,
                  "the groups' sums fit where their slices of B were");
    // A group whose run of K is shorter passes its barrier as often as group
    // 0 does all the same. That orders nothing the block's barrier below does
    // not, but compute-sanitizer's racecheck (2025.3) reported the sums'
    // writes racing with the slices' reads wherever the groups had passed
    // their barriers unequally often (4480 hazards at 67x131x70), and none so.
    const int layer0 = static_cast<int>(blockIdx.z) * GROUPS * kPerLayer;
    const int first = max(0, min(K - layer0, kPerLayer));  // group 0's run
    auto passes = [&](int run) { return max(1, (run + BK - 1) / BK); };
    for (int n = passes(layerK); n < passes(first); ++n) sync();
    // Where group g > 0 keeps this thread's accumulator i.
    float* sums = &Bs[0][0][0] + tid();
    auto sum = [&](int g, int i) -> float& {
      return sums[((g - 1) * ACC + i) * NUM_THREADS];
    };
    __syncthreads();  // every group done with its buffers
    if (group() > 0) {
#pragma unroll
      for (int i = 0; i < ACC; ++i) sum(group(), i) = acc[i / COLS][i % COLS];
    }
    __syncthreads();
    if (group() > 0) return;
#pragma unroll
    for (int g = 1; g < GROUPS; ++g) {
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[i / COLS][i % COLS] += sum(g, i);
    }
  }
  // [docs:groups-end]

  // [docs:epilogue]
  // Decided here rather than at the top, so that they hold no register
  // during the main loop: this layer's matrix of C, and whether it takes
  // float4s.
  C += static_cast<size_t>(blockIdx.z) * M * N;
  const bool vecC = N % 4 == 0 && aligned16(C);
  // The block's own rows and columns: a tile slid back writes none before them.
  const int ownRow = blockIdx.y * BM;
  const int ownCol = blockIdx.x * BN;
  // [docs:stage]
  if (STAGE && !vecC) {
    // Rows of C that are not 16-byte aligned take no float4s, and a thread's
    // four floats in four single stores would leave each 32-byte piece of C
    // a quarter written by every store, four times the writes (unstaged,
    // 2000x3001x100 ran at 79% of cuBLAS, 2000x3000x100 at 102%). So the
    // warp puts each chunk of its rows (a row of each threadRow, 32 x TN
    // floats) through shared memory, in the buffer of A that the last slice
    // did not use (no warp reads it since the barrier before that slice), and
    // writes it out with its 32 threads side by side: each store then writes
    // 32 neighbouring floats of a row (step 02's coalescing).
    static_assert(NUM_THREADS * TN <= BK * BM, "every warp's chunk fits in a buffer of A");
    static_assert(32 % WSUBN == 0, "a thread writes the same column of every row");
    float* chunk = &As[2 * group() + (buf ^ 1)][0][0] + warp * 32 * TN;
    // The thread's column of the chunk, and its first row.
    const int col0 = blockCol + warpCol * WN + lane % WSUBN;
    const int row0 = blockRow + warpRow * WM + lane / WSUBN * TM;
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
      for (int m = 0; m < TM; ++m) {
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn) {
          __syncwarp();  // the warp's previous chunk is out
#pragma unroll
          for (int n = 0; n < TN; n += 4) {
            const float* a = &acc[wm * TM + m][wn * TN + n];
            *reinterpret_cast<float4*>(&chunk[threadRow * WSUBN + threadCol * TN + n]) =
                make_float4(a[0], a[1], a[2], a[3]);
          }
          __syncwarp();
#pragma unroll
          for (int i = 0; i < 32 * TN; i += 32) {
            const int row = row0 + wm * WSUBM + i / WSUBN * TM + m;
            const int col = col0 + wn * WSUBN;
            if (row >= M || col >= N || (SLIDE && (row < ownRow || col < ownCol))) continue;
            float* p = C + row * N + col;
            *p = alpha * chunk[i + lane] + (beta != 0.0f ? beta * *p : 0.0f);
          }
        }
      }
    }
    return;
  }
  // [docs:stage-end]
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
    for (int m = 0; m < TM; ++m) {
      const int row =
          blockRow + warpRow * WM + wm * WSUBM + threadRow * TM + m;
      if (SLIDE && row < ownRow) continue;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
#pragma unroll
        for (int n = 0; n < TN; n += 4) {
          const int col =
              blockCol + warpCol * WN + wn * WSUBN + threadCol * TN + n;
          const float* a = &acc[wm * TM + m][wn * TN + n];
          update4<SLIDE>(C, row, col, M, N, ownCol, vecC,
                  make_float4(a[0], a[1], a[2], a[3]), alpha, beta);
        }
      }
    }
  }
  // [docs:epilogue-end]
}
// [docs:kernel-end]

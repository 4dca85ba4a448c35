// Beyond the ladder (sm_80 and later): asynchronous copies. Step 08's
// software pipeline, with the slices of A and B copied from global to shared
// memory by cp.async, STAGES slices deep, instead of through registers.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// Step 08 hid the wait for global memory by loading the next slice into
// registers before the FMAs and storing it to shared memory after them: every
// float made two trips (global -> register -> shared) and the staging took
// registers. From sm_80 (A100) on, cp.async copies global memory straight into
// shared memory: a thread issues the copy and computes on; the copy lands
// later, and cp.async.wait_group waits for it. With nothing held in registers,
// more than one slice can be on its way: STAGES buffers in shared memory, the
// block computing on one while the next STAGES - 1 arrive. The loop nest:
//
//   block tile   for k0 in K, step BK:    wait for slice k0, start slice
//                                         k0 + (STAGES - 1) * BK
//   warp tile      for k in BK:           each warp reads WM + WN values
//   thread tile      for wm, wn, m, n:    acc += regM * regN  (registers only)
//
// The inner two levels are step 07's: each k loads its fragments, then
// multiplies them (it has none of step 08's second set of fragments,
// serpentine order and bounds-free interior blocks, and was measured so). What
// changes from step 08 is the copy:
// - cp.async moves 4, 8 or 16 bytes and cannot transpose, so A, which is
//   stored transposed (As[k][m]), is copied one float at a time, and B in
//   float4s where N % 4 == 0 and B is 16-byte aligned (else float by float).
// - A copy of an element outside A or B reads nothing and writes a zero
//   (cp.async's src-size operand is 0), so the edges need no special case.
// - Bank conflicts: the lanes of a warp copy 8 ks of 4 rows of A into
//   As[k][m]; with rows of As BM = 128 floats long, the 8 ks of one row of A
//   would land in one bank. Padding each row of As by A_PAD = 4 floats puts
//   k at bank 4k + m, so the 32 lanes hit 32 different banks (and rows stay
//   16-byte aligned for the float4 reads).
//
// What it buys, measured on an H100: little. Step 08's register prefetch
// already hid the loads' latency, and an FP32 kernel this close to cuBLAS is
// limited by its FMAs and shared-memory reads, not by waiting for memory: a
// third stage gained nothing over two, and BK = 16 (half the barriers per
// FMA) about 3% over BK = 8. The padding matters more: without it the
// conflicting copies cost about 10%.
//
// Written for NVRTC, which has no CUDA headers on its search path here (so no
// <cuda_pipeline.h>): the three cp.async instructions are stated in PTX, each
// in a helper of one line.

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "10_cp_async needs sm_80 or later (cp.async); on a T4 (sm_75) use 08_pipelining"
#endif

// [docs:helpers]
// True when p can be read and written as float4.
__device__ __forceinline__ bool aligned16(const void* p) {
  return reinterpret_cast<size_t>(p) % 16 == 0;
}

// Start copying BYTES (4 or 16) from global src to shared dst; when !inside,
// write BYTES zeros to dst and read nothing (src must still be a valid
// address, so callers pass the matrix itself).
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, bool inside) {
  const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared),
               "l"(src), "n"(BYTES), "r"(inside ? BYTES : 0)
               : "memory");
}

// Close the group of copies this thread has started since the last commit.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Wait until at most PENDING of this thread's groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// src[row * cols + col ... + 3] into dst[0..3] (16-byte aligned shared
// memory), with zeros for elements outside the rows x cols matrix. `vec`
// says every row start is 16-byte aligned (cols % 4 == 0 and src aligned);
// col is always a multiple of 4.
__device__ __forceinline__ void copy4_async(float* dst, const float* src,
                                            int row, int col, int rows,
                                            int cols, bool vec) {
  const float* p = src + row * cols + col;
  if (vec) {
    const bool inside = row < rows && col < cols;
    cp_async<16>(dst, inside ? p : src, inside);
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const bool inside = row < rows && col + j < cols;
    cp_async<4>(dst + j, inside ? p + j : src, inside);
  }
}

// dst[0..3] = src[0..3] with one 16-byte load (src must be 16-byte aligned).
__device__ __forceinline__ void copy4(float* dst, const float* src) {
  const float4 v = *reinterpret_cast<const float4*>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
}

// C[row * N + col ... + 3] = alpha * acc + beta * C[...], inside C only.
__device__ __forceinline__ void update4(float* C, int row, int col, int M,
                                        int N, bool vec, float4 acc,
                                        float alpha, float beta) {
  if (row >= M) return;
  float* p = C + row * N + col;
  if (vec && col + 3 < N) {
    float4 c = *reinterpret_cast<float4*>(p);
    c.x = alpha * acc.x + beta * c.x;
    c.y = alpha * acc.y + beta * c.y;
    c.z = alpha * acc.z + beta * c.z;
    c.w = alpha * acc.w + beta * c.w;
    *reinterpret_cast<float4*>(p) = c;
    return;
  }
  if (col + 0 < N) p[0] = alpha * acc.x + beta * p[0];
  if (col + 1 < N) p[1] = alpha * acc.y + beta * p[1];
  if (col + 2 < N) p[2] = alpha * acc.z + beta * p[2];
  if (col + 3 < N) p[3] = alpha * acc.w + beta * p[3];
}
// [docs:helpers-end]

// [docs:kernel]
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN,
          int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
sgemm_cp_async(int M, int N, int K, float alpha, const float* A,
               const float* B, float beta, float* C) {
  // [docs:params]
  constexpr int NUM_THREADS = (BM / WM) * (BN / WN) * 32;
  // A warp's 32 threads each own WMITER x WNITER tiles of TM x TN.
  constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
  constexpr int WSUBM = WM / WMITER;  // rows of one warp sub-tile
  constexpr int WSUBN = WN / WNITER;  // columns of one warp sub-tile
  // Floats of padding at the end of each row of As (see the top of the file).
  constexpr int A_PAD = 4;
  // [docs:params-end]
  static_assert(WMITER >= 1 && (WSUBM / TM) * (WSUBN / TN) == 32,
                "a warp sub-tile is exactly 32 thread tiles");
  static_assert(BN % 4 == 0 && TM % 4 == 0 && TN % 4 == 0,
                "tiles are moved in groups of 4 floats");
  static_assert(BK % 8 == 0 && BM % 4 == 0, "A is copied 8 ks x 4 rows per warp");
  static_assert(BM * BK % NUM_THREADS == 0 && BK * BN % (4 * NUM_THREADS) == 0,
                "every thread copies the same number of floats");
  static_assert(STAGES >= 2, "one slice to compute on, at least one arriving");
  // STAGES buffers per tile: the block computes on one while the copies into
  // the next STAGES - 1 are in flight.
  __shared__ __align__(16) float As[STAGES][BK][BM + A_PAD];  // As[s][k][m]
  __shared__ __align__(16) float Bs[STAGES][BK][BN];

  const int blockRow = blockIdx.y * BM;
  const int blockCol = blockIdx.x * BN;
  // [docs:indices]
  // Where this thread's warp sits in the block tile ...
  const int warp = threadIdx.x / 32;
  const int warpRow = warp / (BN / WN);
  const int warpCol = warp % (BN / WN);
  // ... and where this thread sits in each warp sub-tile.
  const int lane = threadIdx.x % 32;
  const int threadRow = lane / (WSUBN / TN);
  const int threadCol = lane % (WSUBN / TN);
  // [docs:indices-end]
  // Uniform for the whole launch, so these branches never diverge.
  const bool vecB = N % 4 == 0 && aligned16(B);
  const bool vecC = N % 4 == 0 && aligned16(C);

  // [docs:copy]
  // Start copying the slice of A and B at k0 into buffer `stage`. Nothing
  // waits here: the copies land while the block computes.
  constexpr int A_COPIES = BM * BK / NUM_THREADS;        // floats per thread
  constexpr int B_COPIES = BK * BN / (4 * NUM_THREADS);  // float4s per thread
  auto copy_slice = [&](int stage, int k0) {
#pragma unroll
    for (int i = 0; i < A_COPIES; ++i) {
      // Each 8 neighbouring lanes take 8 neighbouring ks of one row of A (a
      // 32-byte read) and write them down a column of As (the transpose).
      const int n = threadIdx.x + i * NUM_THREADS;
      const int k = n / (8 * BM) * 8 + n % 8;
      const int r = n / 8 % BM;
      const bool inside = blockRow + r < M && k0 + k < K;
      cp_async<4>(&As[stage][k][r],
                  inside ? &A[(blockRow + r) * K + k0 + k] : A, inside);
    }
#pragma unroll
    for (int i = 0; i < B_COPIES; ++i) {
      const int r = (threadIdx.x + i * NUM_THREADS) / (BN / 4);
      const int c = (threadIdx.x + i * NUM_THREADS) % (BN / 4) * 4;
      copy4_async(&Bs[stage][r][c], B, k0 + r, blockCol + c, K, N, vecB);
    }
  };
  // [docs:copy-end]

  float acc[WMITER * TM][WNITER * TN] = {{0.0f}};
  float regM[WMITER * TM];
  float regN[WNITER * TN];
  const int slices = (K + BK - 1) / BK;
  // [docs:mainloop]
  // Fill the pipeline: the first STAGES - 1 slices on their way. Each slice
  // is one commit group, empty past the end of K, so that the count of groups
  // in flight is the same in every iteration.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < slices) copy_slice(s, s * BK);
    cp_async_commit();
  }
  // Level 1, the block tile: walk K one BK-wide slice at a time.
  for (int t = 0; t < slices; ++t) {
    // This thread's copies of slice t have landed (the STAGES - 2 newer
    // groups may still be in flight); after the barrier, everyone's have, and
    // everyone has finished computing on slice t - 1.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    // So buffer (t - 1) % STAGES is free: start the slice STAGES - 1 ahead.
    const int ahead = t + STAGES - 1;
    if (ahead < slices) copy_slice(ahead % STAGES, ahead * BK);
    cp_async_commit();
    const int stage = t % STAGES;

    // [docs:inner]
    // Level 2, the warp tile: for each k, the warp's fragments of As and Bs.
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
        for (int m = 0; m < TM; m += 4) {
          copy4(&regM[wm * TM + m],
                &As[stage][k][warpRow * WM + wm * WSUBM + threadRow * TM + m]);
        }
      }
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
#pragma unroll
        for (int n = 0; n < TN; n += 4) {
          copy4(&regN[wn * TN + n],
                &Bs[stage][k][warpCol * WN + wn * WSUBN + threadCol * TN + n]);
        }
      }
      // Level 3, the thread tiles: outer products in registers.
#pragma unroll
      for (int m = 0; m < WMITER * TM; ++m) {
#pragma unroll
        for (int n = 0; n < WNITER * TN; ++n) {
          acc[m][n] += regM[m] * regN[n];
        }
      }
    }
    // [docs:inner-end]
  }
  // [docs:mainloop-end]

  // [docs:epilogue]
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
    for (int m = 0; m < TM; ++m) {
      const int row =
          blockRow + warpRow * WM + wm * WSUBM + threadRow * TM + m;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
#pragma unroll
        for (int n = 0; n < TN; n += 4) {
          const int col =
              blockCol + warpCol * WN + wn * WSUBN + threadCol * TN + n;
          const float* a = &acc[wm * TM + m][wn * TN + n];
          update4(C, row, col, M, N, vecC,
                  make_float4(a[0], a[1], a[2], a[3]), alpha, beta);
        }
      }
    }
  }
  // [docs:epilogue-end]
}
// [docs:kernel-end]

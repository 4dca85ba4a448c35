// Beyond the ladder (sm_80 and later): tensor cores in TF32. Each warp
// multiplies its WM x WN tile with mma.sync, 16 x 8 x 8 at a time, fed by a
// cp.async pipeline STAGES slices deep.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// Every kernel so far ran on the FP32 units: one FMA per lane per
// instruction. A tensor core multiplies whole tiles: one mma.sync of shape
// m16n8k8 is 16 x 8 x 8 = 1024 multiply-adds issued by one warp, several times
// the FP32 units' rate. Its inputs are TF32: FP32's 8-bit exponent with 10
// bits of mantissa instead of 23, so each input is rounded to a relative
// error of at most 2^-11 (the products are summed in FP32). The result is a
// different function from strict SGEMM: the checker judges this kernel with a
// TF32 tolerance (autograder/ladder/registry.py says why it is a bound).
//
//   block tile   for k0 in K, step BK:    wait for slice k0 (cp.async, as in
//                                         step 10), start slice k0 + (STAGES - 1) * BK
//   warp tile      for kk in BK, step 8:  load A and B fragments from shared
//                                         memory, rounded to TF32
//   mma tile         for i, j:            acc[i][j] += a[i] * b[j]: one
//                                         mma.sync, 16 x 8 x 8
//
// A fragment is the part of a 16 x 8 (A) or 8 x 8 (B) tile that one lane
// holds; the PTX manual fixes which: with g = lane / 4 and q = lane % 4, lane
// holds A[g][q], A[g + 8][q], A[g][q + 4], A[g + 8][q + 4], B[q][g] and
// B[q + 4][g], and its accumulators are C[g][2q], C[g][2q + 1],
// C[g + 8][2q] and C[g + 8][2q + 1].
//
// Why the padding: for one fragment register, the 32 lanes read 8 rows x 4
// columns of A (or 4 rows x 8 columns of B). Rows of As are BK + 4 floats
// long and rows of Bs BN + 8, so those 32 addresses fall in 32 different
// banks; unpadded, rows that are a multiple of 32 floats apart would share
// banks and the reads would serialize (measured on an H100: a third slower).
//
// Why it pays: on an H100 this kernel runs at about 2.3 times cuBLAS's strict
// FP32 SGEMM at 4096^3, with results as accurate as cuBLAS's own TF32 mode
// (whose Hopper-only wgmma kernels are about 3 times faster again).
//
// Written for NVRTC, which has no CUDA headers on its search path here (so no
// <mma.h> or <cuda_pipeline.h>): mma.sync, the TF32 rounding and the three
// cp.async instructions are stated in PTX, each in a helper of a few lines.

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "11_tensor_core_tf32 needs sm_80 or later (TF32 mma.sync, cp.async); a T4 (sm_75) has neither"
#endif

// [docs:helpers]
// True when p is a multiple of `bytes` (a power of 2).
__device__ __forceinline__ bool aligned(const void* p, int bytes) {
  return reinterpret_cast<size_t>(p) % bytes == 0;
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

// x rounded to the nearest TF32 value (ties away from zero), as the tensor
// cores take it: the low 13 bits of the mantissa become 0.
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned rounded;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(rounded) : "f"(x));
  return rounded;
}

// d += a * b for one 16 x 8 x 8 tile, on the tensor cores. a and b are this
// lane's fragments (TF32), d its four accumulators (FP32).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// C[row * N + col ... + 1] = alpha * (c0, c1) + beta * C[...], inside C only.
// `vec` says C's rows start 8-byte aligned (N even and C aligned); col is even.
__device__ __forceinline__ void update2(float* C, int row, int col, int M,
                                        int N, bool vec, float c0, float c1,
                                        float alpha, float beta) {
  if (row >= M) return;
  float* p = C + row * N + col;
  if (vec && col + 1 < N) {
    float2 c = *reinterpret_cast<float2*>(p);
    c.x = alpha * c0 + beta * c.x;
    c.y = alpha * c1 + beta * c.y;
    *reinterpret_cast<float2*>(p) = c;
    return;
  }
  if (col + 0 < N) p[0] = alpha * c0 + beta * p[0];
  if (col + 1 < N) p[1] = alpha * c1 + beta * p[1];
}
// [docs:helpers-end]

// [docs:kernel]
template <int BM, int BN, int BK, int WM, int WN, int STAGES>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
sgemm_tf32(int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C) {
  // [docs:params]
  constexpr int NUM_THREADS = (BM / WM) * (BN / WN) * 32;
  // The shape of one mma.sync: a 16 x 8 tile of A times an 8 x 8 tile of B.
  constexpr int MMA_M = 16, MMA_N = 8, MMA_K = 8;
  constexpr int M_TILES = WM / MMA_M;  // mma tiles down a warp tile
  constexpr int N_TILES = WN / MMA_N;  // and across it
  // Row lengths of As and Bs in floats, padded (see the top of the file).
  constexpr int LDA = BK + 4;
  constexpr int LDB = BN + 8;
  // [docs:params-end]
  static_assert(WM % MMA_M == 0 && WN % MMA_N == 0 && BK % MMA_K == 0,
                "warp tiles and slices are whole mma tiles");
  static_assert(BM * BK % (4 * NUM_THREADS) == 0 &&
                    BK * BN % (4 * NUM_THREADS) == 0,
                "every thread copies the same number of float4s");
  static_assert(STAGES >= 2, "one slice to compute on, at least one arriving");
  // STAGES buffers per tile, in dynamic shared memory (more than the 48 KB a
  // static array may have): As[s][m][k] as A is laid out, Bs[s][k][n] as B is.
  // The launch must give STAGES * (BM * LDA + BK * LDB) floats.
  extern __shared__ __align__(16) float shared[];
  auto As = reinterpret_cast<float(*)[BM][LDA]>(shared);
  auto Bs = reinterpret_cast<float(*)[BK][LDB]>(shared + STAGES * BM * LDA);

  const int blockRow = blockIdx.y * BM;
  const int blockCol = blockIdx.x * BN;
  // [docs:indices]
  // Where this thread's warp sits in the block tile ...
  const int warp = threadIdx.x / 32;
  const int warpRow = warp / (BN / WN) * WM;
  const int warpCol = warp % (BN / WN) * WN;
  // ... and which elements of each fragment this lane holds (see the top).
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;
  const int q = lane % 4;
  // [docs:indices-end]
  // Uniform for the whole launch, so these branches never diverge.
  const bool vecA = K % 4 == 0 && aligned(A, 16);
  const bool vecB = N % 4 == 0 && aligned(B, 16);
  const bool vecC = N % 2 == 0 && aligned(C, 8);

  // [docs:copy]
  // Start copying the slice of A and B at k0 into buffer `stage`, one float4
  // per copy where the matrix allows it (zeros outside the matrices).
  constexpr int A_COPIES = BM * BK / (4 * NUM_THREADS);
  constexpr int B_COPIES = BK * BN / (4 * NUM_THREADS);
  auto copy_slice = [&](int stage, int k0) {
#pragma unroll
    for (int i = 0; i < A_COPIES; ++i) {
      const int r = (threadIdx.x + i * NUM_THREADS) / (BK / 4);
      const int c = (threadIdx.x + i * NUM_THREADS) % (BK / 4) * 4;
      copy4_async(&As[stage][r][c], A, blockRow + r, k0 + c, M, K, vecA);
    }
#pragma unroll
    for (int i = 0; i < B_COPIES; ++i) {
      const int r = (threadIdx.x + i * NUM_THREADS) / (BN / 4);
      const int c = (threadIdx.x + i * NUM_THREADS) % (BN / 4) * 4;
      copy4_async(&Bs[stage][r][c], B, k0 + r, blockCol + c, K, N, vecB);
    }
  };
  // [docs:copy-end]

  float acc[M_TILES][N_TILES][4] = {};
  const int slices = (K + BK - 1) / BK;
  // [docs:mainloop]
  // Fill the pipeline: the first STAGES - 1 slices on their way, one commit
  // group each (empty past the end of K, to keep the count uniform).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < slices) copy_slice(s, s * BK);
    cp_async_commit();
  }
  // Level 1, the block tile: walk K one BK-wide slice at a time.
  for (int t = 0; t < slices; ++t) {
    // Slice t has landed for everyone, and everyone is done with slice t - 1,
    // whose buffer now receives the slice STAGES - 1 ahead.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int ahead = t + STAGES - 1;
    if (ahead < slices) copy_slice(ahead % STAGES, ahead * BK);
    cp_async_commit();
    const int stage = t % STAGES;

    // [docs:inner]
    // Level 2, the warp tile: one MMA_K-wide step of the slice at a time.
#pragma unroll
    for (int kk = 0; kk < BK; kk += MMA_K) {
      unsigned a[M_TILES][4];
      unsigned b[N_TILES][2];
#pragma unroll
      for (int i = 0; i < M_TILES; ++i) {
        const float* tile = &As[stage][warpRow + i * MMA_M][kk];
        a[i][0] = to_tf32(tile[g * LDA + q]);
        a[i][1] = to_tf32(tile[(g + 8) * LDA + q]);
        a[i][2] = to_tf32(tile[g * LDA + q + 4]);
        a[i][3] = to_tf32(tile[(g + 8) * LDA + q + 4]);
      }
#pragma unroll
      for (int j = 0; j < N_TILES; ++j) {
        const float* tile = &Bs[stage][kk][warpCol + j * MMA_N];
        b[j][0] = to_tf32(tile[q * LDB + g]);
        b[j][1] = to_tf32(tile[(q + 4) * LDB + g]);
      }
      // Level 3, the mma tiles: M_TILES x N_TILES tensor-core products.
#pragma unroll
      for (int i = 0; i < M_TILES; ++i) {
#pragma unroll
        for (int j = 0; j < N_TILES; ++j) {
          mma_tf32(acc[i][j], a[i], b[j]);
        }
      }
    }
    // [docs:inner-end]
  }
  // [docs:mainloop-end]

  // [docs:epilogue]
  // Each accumulator pair (acc[i][j][2h], acc[i][j][2h + 1]) is two
  // neighbouring elements of C, in row g + 8h of mma tile (i, j).
#pragma unroll
  for (int i = 0; i < M_TILES; ++i) {
#pragma unroll
    for (int j = 0; j < N_TILES; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = blockRow + warpRow + i * MMA_M + g + 8 * h;
        const int col = blockCol + warpCol + j * MMA_N + 2 * q;
        update2(C, row, col, M, N, vecC, acc[i][j][2 * h],
                acc[i][j][2 * h + 1], alpha, beta);
      }
    }
  }
  // [docs:epilogue-end]
}
// [docs:kernel-end]

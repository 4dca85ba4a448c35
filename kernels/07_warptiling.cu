// Step 07: warptiling. Each warp computes a WM x WN tile of C, each thread
// WMITER x WNITER small TM x TN tiles inside it.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// Step 06 tiled C at two levels, the block and the thread. This step adds the
// level in between that the hardware schedules: the warp. The loop nest, from
// the outside in (the names of the levels are CUTLASS's):
//
//   block tile   for k0 in K, step BK:    copy A, B slices to shared memory
//   warp tile      for k in BK:           each warp reads WM + WN values
//   thread tile      for wm, wn, m, n:    acc += regM * regN  (registers only)
//
// Why it pays: the 32 threads of a warp now cover a compact WM x WN region,
// so the values one warp reads from shared memory for one k are few (WM + WN)
// and its lanes read neighbouring float4s; and each thread computes several
// small tiles spread WSUBM rows / WSUBN columns apart, which keeps its
// register tile large (many FMAs per load) while its lanes' addresses stay
// contiguous. Everything else (the copies, the bounds, the float4 tails) is
// step 06's.

// [docs:helpers]
// True when p can be read and written as float4.
__device__ __forceinline__ bool aligned16(const void* p) {
  return reinterpret_cast<size_t>(p) % 16 == 0;
}

// src[row * cols + col ... + 3] of a rows x cols matrix, with 0 for elements
// outside it. `vec` says every row start is 16-byte aligned (cols % 4 == 0
// and src aligned); col is always a multiple of 4.
__device__ __forceinline__ float4 load4(const float* src, int row, int col,
                                        int rows, int cols, bool vec) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (row >= rows) return v;
  const float* p = src + row * cols + col;
  if (vec && col + 3 < cols) return *reinterpret_cast<const float4*>(p);
  if (col + 0 < cols) v.x = p[0];
  if (col + 1 < cols) v.y = p[1];
  if (col + 2 < cols) v.z = p[2];
  if (col + 3 < cols) v.w = p[3];
  return v;
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
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
sgemm_warptiling(int M, int N, int K, float alpha, const float* A,
                 const float* B, float beta, float* C) {
  // [docs:params]
  constexpr int NUM_THREADS = (BM / WM) * (BN / WN) * 32;
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
  __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
  __shared__ __align__(16) float Bs[BK][BN];

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
  const bool vecA = K % 4 == 0 && aligned16(A);
  const bool vecB = N % 4 == 0 && aligned16(B);
  const bool vecC = N % 4 == 0 && aligned16(C);

  float acc[WMITER * TM][WNITER * TN] = {{0.0f}};
  float regM[WMITER * TM];
  float regN[WNITER * TN];
  // [docs:mainloop]
  // Level 1, the block tile: walk K one BK-wide slice at a time.
  for (int k0 = 0; k0 < K; k0 += BK) {
    // [docs:load]
    // Copy the BM x BK tile of A and the BK x BN tile of B, zero outside.
#pragma unroll
    for (int i = 0; i < BM * BK / (4 * NUM_THREADS); ++i) {
      const int r = (threadIdx.x + i * NUM_THREADS) / (BK / 4);
      const int c = (threadIdx.x + i * NUM_THREADS) % (BK / 4) * 4;
      const float4 a = load4(A, blockRow + r, k0 + c, M, K, vecA);
      As[c + 0][r] = a.x;  // transpose on the way in
      As[c + 1][r] = a.y;
      As[c + 2][r] = a.z;
      As[c + 3][r] = a.w;
    }
#pragma unroll
    for (int i = 0; i < BK * BN / (4 * NUM_THREADS); ++i) {
      const int r = (threadIdx.x + i * NUM_THREADS) / (BN / 4);
      const int c = (threadIdx.x + i * NUM_THREADS) % (BN / 4) * 4;
      *reinterpret_cast<float4*>(&Bs[r][c]) =
          load4(B, k0 + r, blockCol + c, K, N, vecB);
    }
    // [docs:load-end]
    __syncthreads();

    // [docs:inner]
    // Level 2, the warp tile: for each k, the warp's fragments of As and Bs
    // (the lanes of a warp read neighbouring float4s, or the same one) ...
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
        for (int m = 0; m < TM; m += 4) {
          copy4(&regM[wm * TM + m],
                &As[k][warpRow * WM + wm * WSUBM + threadRow * TM + m]);
        }
      }
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
#pragma unroll
        for (int n = 0; n < TN; n += 4) {
          copy4(&regN[wn * TN + n],
                &Bs[k][warpCol * WN + wn * WSUBN + threadCol * TN + n]);
        }
      }
      // ... and level 3, the thread tiles: their outer products, in registers.
#pragma unroll
      for (int m = 0; m < WMITER * TM; ++m) {
#pragma unroll
        for (int n = 0; n < WNITER * TN; ++n) {
          acc[m][n] += regM[m] * regN[n];
        }
      }
    }
    // [docs:inner-end]
    __syncthreads();
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

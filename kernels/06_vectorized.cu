// Step 06: vectorized memory access. Each thread still computes TM x TN of C.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// Three changes from step 05, all about moving 16 bytes per instruction:
//  1. Global loads and stores of 4 consecutive floats use one float4 access
//     (LDG.128 / STG.128) instead of four scalar ones.
//  2. A's tile is stored TRANSPOSED in shared memory (As[k][m]), so the TM
//     values a thread needs for one k are consecutive and load as float4.
//  3. Tails: a float4 access must be 16-byte aligned. When K (for A) or N
//     (for B and C) is not a multiple of 4, rows start at unaligned
//     addresses, so the kernel falls back to scalar accesses, and it always
//     does so for the last, partial group of 4 at the end of a row.

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
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_vectorized(int M, int N, int K, float alpha, const float* A,
                 const float* B, float beta, float* C) {
  constexpr int NUM_THREADS = (BM / TM) * (BN / TN);
  static_assert(BK % 4 == 0 && BN % 4 == 0 && TM % 4 == 0 && TN % 4 == 0,
                "tiles are moved in groups of 4 floats");
  static_assert(BM * BK % (4 * NUM_THREADS) == 0 &&
                    BK * BN % (4 * NUM_THREADS) == 0,
                "every thread copies the same number of float4s");
  __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
  __shared__ __align__(16) float Bs[BK][BN];

  const int blockRow = blockIdx.y * BM;
  const int blockCol = blockIdx.x * BN;
  // This thread owns rows threadRow * TM ... + TM - 1 and columns
  // threadCol * TN ... + TN - 1 of the block's tile.
  const int threadCol = threadIdx.x % (BN / TN);
  const int threadRow = threadIdx.x / (BN / TN);
  // Uniform for the whole launch, so these branches never diverge.
  const bool vecA = K % 4 == 0 && aligned16(A);
  const bool vecB = N % 4 == 0 && aligned16(B);
  const bool vecC = N % 4 == 0 && aligned16(C);

  float acc[TM][TN] = {{0.0f}};
  float regM[TM];
  float regN[TN];
  // [docs:mainloop]
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
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      // TM / 4 + TN / 4 float4 shared-memory loads ...
#pragma unroll
      for (int m = 0; m < TM; m += 4) copy4(&regM[m], &As[k][threadRow * TM + m]);
#pragma unroll
      for (int n = 0; n < TN; n += 4) copy4(&regN[n], &Bs[k][threadCol * TN + n]);
      // ... feed TM * TN multiply-adds.
#pragma unroll
      for (int m = 0; m < TM; ++m) {
#pragma unroll
        for (int n = 0; n < TN; ++n) {
          acc[m][n] += regM[m] * regN[n];
        }
      }
    }
    // [docs:inner-end]
    __syncthreads();
  }
  // [docs:mainloop-end]

#pragma unroll
  for (int m = 0; m < TM; ++m) {
#pragma unroll
    for (int n = 0; n < TN; n += 4) {
      update4(C, blockRow + threadRow * TM + m, blockCol + threadCol * TN + n,
              M, N, vecC,
              make_float4(acc[m][n], acc[m][n + 1], acc[m][n + 2],
                          acc[m][n + 3]),
              alpha, beta);
    }
  }
}
// [docs:kernel-end]

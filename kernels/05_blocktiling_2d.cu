// Step 05: 2D register blocking. Each thread computes a TM x TN tile of C.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// Step 04 reused one value of B for TM multiply-adds. Now a thread also keeps
// TN values of B in registers: for every k it loads TM values of As and TN of
// Bs and does TM * TN multiply-adds with them (an outer product), so the floats
// read from shared memory per FMA fall from 1 + 1/TM to 1/TN + 1/TM. The block
// covers BM x BN of C with (BM / TM) * (BN / TN) threads.

// [docs:kernel]
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
sgemm_blocktiling_2d(int M, int N, int K, float alpha, const float* A,
                     const float* B, float beta, float* C) {
  constexpr int NUM_THREADS = (BM / TM) * (BN / TN);
  static_assert(BM * BK % NUM_THREADS == 0 && BK * BN % NUM_THREADS == 0,
                "every thread copies the same number of tile elements");
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];

  const int blockRow = blockIdx.y * BM;
  const int blockCol = blockIdx.x * BN;
  // This thread owns rows threadRow * TM ... + TM - 1 and columns
  // threadCol * TN ... + TN - 1 of the block's tile.
  const int threadCol = threadIdx.x % (BN / TN);
  const int threadRow = threadIdx.x / (BN / TN);

  float acc[TM][TN] = {{0.0f}};
  float regM[TM];
  float regN[TN];
  // [docs:mainloop]
  for (int k0 = 0; k0 < K; k0 += BK) {
    // [docs:load]
    // Copy the BM x BK tile of A and the BK x BN tile of B, zero outside.
#pragma unroll
    for (int i = 0; i < BM * BK / NUM_THREADS; ++i) {
      const int r = (threadIdx.x + i * NUM_THREADS) / BK;
      const int c = (threadIdx.x + i * NUM_THREADS) % BK;
      const bool inside = blockRow + r < M && k0 + c < K;
      As[r][c] = inside ? A[(blockRow + r) * K + k0 + c] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < BK * BN / NUM_THREADS; ++i) {
      const int r = (threadIdx.x + i * NUM_THREADS) / BN;
      const int c = (threadIdx.x + i * NUM_THREADS) % BN;
      const bool inside = k0 + r < K && blockCol + c < N;
      Bs[r][c] = inside ? B[(k0 + r) * N + blockCol + c] : 0.0f;
    }
    // [docs:load-end]
    __syncthreads();

    // [docs:inner]
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      // TM + TN floats read from shared memory ...
#pragma unroll
      for (int m = 0; m < TM; ++m) regM[m] = As[threadRow * TM + m][k];
#pragma unroll
      for (int n = 0; n < TN; ++n) regN[n] = Bs[k][threadCol * TN + n];
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
    const int row = blockRow + threadRow * TM + m;
#pragma unroll
    for (int n = 0; n < TN; ++n) {
      const int col = blockCol + threadCol * TN + n;
      if (row < M && col < N) {
        C[row * N + col] = alpha * acc[m][n] + beta * C[row * N + col];
      }
    }
  }
}
// [docs:kernel-end]

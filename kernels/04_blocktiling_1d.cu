// Step 04: 1D register blocking. Each thread computes TM elements of one
// column of C.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// In step 03 every multiply-add read two floats of shared memory. Here a thread
// reads one value of Bs into a register and reuses it for TM multiply-adds
// down a column, so the floats read from shared memory per FMA drop from 2 to
// 1 + 1/TM (the compiler reads A's TM values along k four at a time, so the
// load instructions fall further: `python -m autograder sass 04`). The block covers a BM x BN tile of C with (BM / TM) * BN threads
// and walks K in slices of BK.

// [docs:kernel]
template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__((BM / TM) * BN)
sgemm_blocktiling_1d(int M, int N, int K, float alpha, const float* A,
                     const float* B, float beta, float* C) {
  constexpr int NUM_THREADS = (BM / TM) * BN;
  static_assert(BM * BK % NUM_THREADS == 0 && BK * BN % NUM_THREADS == 0,
                "every thread copies the same number of tile elements");
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];

  const int blockRow = blockIdx.y * BM;  // first row of C this block covers
  const int blockCol = blockIdx.x * BN;  // first column
  // Neighbouring threads take neighbouring columns (coalesced, as in step 02);
  // each thread owns rows threadRow * TM ... threadRow * TM + TM - 1.
  const int threadCol = threadIdx.x % BN;
  const int threadRow = threadIdx.x / BN;

  float acc[TM] = {0.0f};
  // [docs:mainloop]
  for (int k0 = 0; k0 < K; k0 += BK) {
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
    __syncthreads();

    // [docs:inner]
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][threadCol];  // one load, reused TM times
#pragma unroll
      for (int m = 0; m < TM; ++m) {
        acc[m] += As[threadRow * TM + m][k] * b;
      }
    }
    // [docs:inner-end]
    __syncthreads();
  }
  // [docs:mainloop-end]

  const int col = blockCol + threadCol;
#pragma unroll
  for (int m = 0; m < TM; ++m) {
    const int row = blockRow + threadRow * TM + m;
    if (row < M && col < N) {
      C[row * N + col] = alpha * acc[m] + beta * C[row * N + col];
    }
  }
}
// [docs:kernel-end]

// Step 01: the naive kernel. One thread computes one element of C.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// The thread mapping is the one most people write first: threadIdx.x walks the
// ROWS of C. The 32 threads of a warp therefore read 32 different rows of A
// (addresses K floats apart) and write 32 different rows of C: every access
// of the warp touches its own memory segment. Step 02 fixes exactly that.

// [docs:kernel]
extern "C" __global__ void sgemm_naive(int M, int N, int K, float alpha,
                                       const float* A, const float* B,
                                       float beta, float* C) {
  // [docs:body]
  // [docs:indices]
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  // [docs:indices-end]

  // The grid is rounded up to whole blocks, so some threads fall outside C.
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
  // [docs:body-end]
}
// [docs:kernel-end]

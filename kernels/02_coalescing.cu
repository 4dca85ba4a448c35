// Step 02: global-memory coalescing. One thread computes one element of C.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// The only change from step 01: threadIdx.x now walks the COLUMNS of C.
// The 32 threads of a warp share one row, so they read the same A[row][k]
// (one broadcast) and 32 neighbouring floats of B and C: four 32-byte sectors
// per warp instead of 32.

// [docs:kernel]
extern "C" __global__ void sgemm_coalescing(int M, int N, int K, float alpha,
                                            const float* A, const float* B,
                                            float beta, float* C) {
  // [docs:body]
  // [docs:indices]
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
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

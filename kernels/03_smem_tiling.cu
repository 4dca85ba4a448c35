// Step 03: shared-memory tiling. One thread still computes one element of C.
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// Steps 01-02 read every element of A and B from global memory BS times over
// (once per thread that needs it). Here a block of BS x BS threads walks K in
// steps of BS: it copies one BS x BS tile of A and one of B into shared memory,
// waits, and then every thread reads its row of As and column of Bs from
// there. Each global float is now loaded once per block instead of BS times.

// [docs:kernel]
template <int BS>
__global__ void __launch_bounds__(BS * BS)
sgemm_smem_tiling(int M, int N, int K, float alpha, const float* A,
                  const float* B, float beta, float* C) {
  __shared__ float As[BS][BS];
  __shared__ float Bs[BS][BS];

  const int tx = threadIdx.x;  // walks the columns, as in step 02
  const int ty = threadIdx.y;
  const int row = blockIdx.y * BS + ty;
  const int col = blockIdx.x * BS + tx;

  float acc = 0.0f;
  // [docs:mainloop]
  for (int k0 = 0; k0 < K; k0 += BS) {
    // Each thread copies one element of each tile. Outside A or B it stores 0,
    // so the inner loop below needs no bounds checks and the last, partial
    // tile of K adds nothing.
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int k = 0; k < BS; ++k) {
      acc += As[ty][k] * Bs[k][tx];
    }
    __syncthreads();  // everyone is done reading before the next copy
  }
  // [docs:mainloop-end]

  if (row < M && col < N) {
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
}
// [docs:kernel-end]

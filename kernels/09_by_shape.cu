// Step 09: choosing by shape. The one kernel this step adds: split-K's
// reduction. The rest is Python (autograder/run/by_shape.py) and step 08's kernel.
//
// One tile shape does not fit every problem. 128 x 128 tiles cover a 4096^2 C
// with 1024 blocks, eight per SM of an H100; a 512^2 C gets 16 blocks, and
// 116 of its 132 SMs have nothing to do, however long K is. The dispatcher
// answers in two ways, for each M, N, K from a table the tuner fills:
// smaller tiles (more blocks, each reusing its loads less), and split-K.
//
// Split-K runs step 08's kernel on a grid S layers deep: layer s multiplies
// its own run of K and writes its partial product to partial[s], the s-th of
// S matrices of M x N laid one after the other in a workspace. S times as
// many blocks share the work, at the price of writing S matrices and reading
// them back here:
//
//   C = alpha * (partial[0] + ... + partial[S - 1]) + beta * C
//
// One thread per element of C, as in step 02: threadIdx.x walks the columns,
// so a warp reads 32 neighbouring floats of each layer in one transaction.

// [docs:kernel]
extern "C" __global__ void splitk_reduce(int M, int N, int splits, float alpha,
                                         const float* partial, float beta,
                                         float* C) {
  // [docs:body]
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  // Layer s of element (row, col) is partial[s * M * N + row * N + col]; in
  // size_t, since S * M * N can pass 2^31.
  const size_t layer = static_cast<size_t>(M) * N;
  const size_t i = static_cast<size_t>(row) * N + col;
  float sum = 0.0f;
  for (int s = 0; s < splits; ++s) sum += partial[s * layer + i];
  // With beta = 0, C is not read: BLAS lets it hold anything then (NaN too).
  C[i] = alpha * sum + (beta != 0.0f ? beta * C[i] : 0.0f);
  // [docs:body-end]
}
// [docs:kernel-end]

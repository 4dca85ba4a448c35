# Step 00: SGEMM on the CPU in plain Python, to count FLOPs and to see why
# the order of the three loops matters.
#
# C = A * B, with A of M x K and B of K x N, as lists of rows.


def matmul(A, B):
    """C = A * B with the textbook i-j-k loop: C[i][j] is row i of A times column j of B."""
    M, K, N = len(A), len(B), len(B[0])
    C = [[0.0] * N for _ in range(M)]
    # [docs:ijk]
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += A[i][k] * B[k][j]  # B walked down a column: stride N
            C[i][j] = acc
    # [docs:ijk-end]
    return C


def matmul_ikj(A, B):
    """The same product with the loops in i-k-j order: the inner loop walks rows."""
    M, K, N = len(A), len(B), len(B[0])
    C = [[0.0] * N for _ in range(M)]
    # [docs:ikj]
    for i in range(M):
        row_c = C[i]
        for k in range(K):
            a, row_b = A[i][k], B[k]
            for j in range(N):
                row_c[j] += a * row_b[j]  # B and C walked along rows: stride 1
    # [docs:ikj-end]
    return C


def gflops(M, N, K, seconds):
    """Billions of floating-point operations per second: M*N*K multiply-adds, 2 FLOPs each."""
    # [docs:gflops]
    return 2 * M * N * K / seconds / 1e9
    # [docs:gflops-end]

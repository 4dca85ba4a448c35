// Beyond the ladder (sm_90a, an H100 or H200): FP32 results from TF32 tensor
// cores. Step 12's kernel, with each input split into a TF32 "big" part and a
// TF32 "small" remainder, and three products summed: big * big + big * small
// + small * big (3xTF32).
//
// C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
//
// TF32 keeps 10 of FP32's 23 mantissa bits, so step 12's products are off by
// up to 2^-10 of each term. Write x = big + small with big = tf32(x), the
// nearest TF32 value, and small = tf32(x - big): small holds the next 11 bits,
// and big + small is x to within 2^-22 of it. Then
//
//   a * b = big_a big_b + big_a small_b + small_a big_b + small_a small_b
//
// and the last term, at most 2^-22 of a * b, is dropped: three TF32 products
// give what one FP32 product gives, to a few units in FP32's last place, on
// tensor cores that run TF32 8 times as fast as the FP32 lanes run FP32, so
// at up to 8/3 of the FP32 peak.
//
// The tensor cores' own additions keep fewer bits than an FP32 add (chapter
// 13 measures how many), so a running sum kept in wgmma's accumulators over
// all of K drifts far from FP32's. Here the tensor cores sum only one slice
// of K (32 terms, three products each) into `part`, started afresh for every
// slice, and the slice's sum is added into the FP32 running sums `acc` by the
// FP32 lanes, rounded as any FP32 add: promotion, as DeepSeek-V3 does for
// FP8. Two sets of accumulators need twice the registers, so a block covers
// 128 rows of C at most (wgmma's N = 128), where step 12's covers 256.
//
// A small part under 2^-126 is a subnormal float, which TF32 keeps to fewer
// bits, and near 2^128 the big part rounds up to infinity. A first kernel,
// largest_magnitudes, finds the largest magnitude of each row of A and each
// column of B in one pass before the product. A block whose rows and columns
// are all far from both ends (ordinary: most matrices' every block) splits
// its numbers as they are; any other scales each row and column by the power
// of two that brings its largest magnitude to [1, 2) before it splits them,
// and C back as it is written (scale_shift), which keeps inputs near either
// end of the float range as accurate as FP32 keeps them.
//
// What changes from step 12 (the chapter shows the difference line by line):
// the producer warpgroup, idle between its copies, splits each slice of A
// once it has landed, each warp its own quarter of the rows: the big parts in
// place, the small ones into a buffer beside it (another barrier, ready[s],
// says when); the consumers split B's fragments as they load them, issue
// three wgmmas where step 12 issued one, and promote each slice's sums. A
// slice takes 48 KB of shared memory: A, its small parts and B.
//
// Written for NVRTC without CUDA headers: every Hopper instruction is stated
// in PTX, each in a helper of a few lines; the tensor maps come from the host
// (cuTensorMapEncodeTiled), 128 opaque bytes each.

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 900 || !defined(__CUDA_ARCH_FEAT_SM90_ALL))
#error "13_wgmma_3xtf32 needs sm_90a (wgmma, setmaxnreg): an H100 or H200, compiled for sm_90a"
#endif

// A tensor map as cuTensorMapEncodeTiled writes it: opaque to the kernel.
struct __align__(64) TensorMap {
  unsigned long long opaque[16];
};

// [docs:helpers]
__device__ __forceinline__ unsigned smem(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// --- mbarriers: a phase completes when `count` threads have arrived and the
// bytes announced with expect_tx have landed.
__device__ __forceinline__ void bar_init(unsigned long long* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem(bar)), "r"(count));
}
__device__ __forceinline__ void bar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem(bar)) : "memory");
}
__device__ __forceinline__ void bar_arrive_tx(unsigned long long* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem(bar)),
               "r"(bytes)
               : "memory");
}
// Wait until the phase of this parity (0 or 1) has completed.
__device__ __forceinline__ void bar_wait(unsigned long long* bar, int parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(smem(bar)),
      "r"(parity)
      : "memory");
}

// --- copies into shared memory.
// TMA: the box of `map` at (x, y) (x the contiguous coordinate) into dst;
// elements outside the matrix arrive as zeros, and count their bytes too.
__device__ __forceinline__ void tma_load(void* dst, const TensorMap& map, int x, int y,
                                         unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem(dst)),
      "l"(&map), "r"(x), "r"(y), "r"(smem(bar))
      : "memory");
}
// One float from src into dst, or a zero when !inside (src must still be a
// valid address): for rows TMA cannot describe (not 16-byte multiples).
__device__ __forceinline__ void copy_float(float* dst, const float* src, bool inside) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem(dst)), "l"(src),
               "r"(inside ? 4 : 0)
               : "memory");
}
// The 128-byte swizzle, as TMA writes it and wgmma reads it: in each row of 32
// floats, 16-byte chunk c of row r sits at chunk c ^ (r % 8), so that the 8
// rows of a 1024-byte block spread one column over all 32 banks.
__device__ __forceinline__ int swizzled(int row, int col) {
  return row * 32 + ((((col >> 2) ^ (row & 7)) << 2) | (col & 3));
}

// --- wgmma.
// Where the tensor cores find a K-major operand in shared memory: its address,
// 1024 bytes between groups of 8 rows, the 128-byte swizzle.
__device__ __forceinline__ unsigned long long descriptor(const float* tile) {
  return (static_cast<unsigned long long>(smem(tile) & 0x3FFFF) >> 4) | (1ull << 16) |
         (64ull << 32) | (1ull << 62);
}
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned rounded;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(rounded) : "f"(x));
  return rounded;
}
// [docs:split]
// x = big + small, both TF32 values (their low 13 bits zero): big is x
// rounded to TF32, small what is left, rounded too.
__device__ __forceinline__ void split(float x, unsigned& big, unsigned& small) {
  const float rounded = __uint_as_float(to_tf32(x));
  big = __float_as_uint(rounded);
  small = to_tf32(x - rounded);
}
// [docs:split-end]

// [docs:stop]
// A block whose rows and columns are scaled (SCALED, below) multiplies each
// number by its row's or column's power of two, then splits it. Scaled, every
// finite number lies under 4 in magnitude; but a row or column that holds an
// infinity is not scaled (scale_shift), and there a finite x within 2^-11 of
// 2^128 rounds up to an infinite big part, x - inf making its small part
// infinite, and an infinite x gives a NaN small part (inf - inf), where an
// FP32 product gives infinity. So there big stops at the largest TF32 value:
// small, x - big, is then exact and finite for a finite x, and infinite for
// an infinite one, which passes on through small_a * big_b as through an FP32
// product. An ordinary block splits its numbers as they are.
template <bool SCALED>
__device__ __forceinline__ void split_scaled(float x, float scale, unsigned& big, unsigned& small) {
  if (!SCALED) {
    split(x, big, small);
    return;
  }
  constexpr float LARGEST_TF32 = 3.4011621e38f;  // (2 - 2^-10) 2^127
  const float y = scale * x;
  const float rounded = copysignf(fminf(fabsf(__uint_as_float(to_tf32(y))), LARGEST_TF32), y);
  big = __float_as_uint(rounded);
  small = to_tf32(y - rounded);
}
// [docs:stop-end]

// The producer's split of a lane's QUADS float4s of a slice of A, 32 apart
// from big[lane]: the big parts in place, the small ones at the same offsets
// from small; row i's scaled by scale[i] where SCALED.
template <bool SCALED, int QUADS>
__device__ __forceinline__ void split_rows(float4* big, float4* small, const float (&scale)[QUADS],
                                           int lane) {
  float4 x[QUADS];  // all loaded before any store: the stores cannot hold them up
#pragma unroll
  for (int i = 0; i < QUADS; ++i) x[i] = big[lane + 32 * i];
#pragma unroll
  for (int i = 0; i < QUADS; ++i) {
    unsigned b[4], l[4];
    split_scaled<SCALED>(x[i].x, scale[i], b[0], l[0]);
    split_scaled<SCALED>(x[i].y, scale[i], b[1], l[1]);
    split_scaled<SCALED>(x[i].z, scale[i], b[2], l[2]);
    split_scaled<SCALED>(x[i].w, scale[i], b[3], l[3]);
    big[lane + 32 * i] = make_float4(__uint_as_float(b[0]), __uint_as_float(b[1]),
                                     __uint_as_float(b[2]), __uint_as_float(b[3]));
    small[lane + 32 * i] = make_float4(__uint_as_float(l[0]), __uint_as_float(l[1]),
                                       __uint_as_float(l[2]), __uint_as_float(l[3]));
  }
}

// [docs:scale]
// The small part of a number under 2^-115 is a subnormal float, which TF32
// keeps to fewer bits (or none), and near 2^128 the big part rounds up to
// infinity: there 3xTF32 would lose what FP32 keeps. A row of A or column of
// B whose largest magnitude, top (a float's bits), is ordinary, in
// [2^-50, 2^50) (or 0), is far from both, and so are its products with
// another's: a block whose rows and columns are all ordinary splits its
// numbers as they are. Any other block scales each row and column by
// 2^shift, the power of two that brings its largest magnitude to [1, 2),
// before it splits them, and C back as it is written: exact both ways. A row
// of infinities or NaN is not scaled: they pass through as they would in FP32.
__device__ __forceinline__ bool ordinary(unsigned top) {
  return top == 0 || (top >= 0x26800000u && top < 0x58800000u);  // 2^-50, 2^50
}
__device__ __forceinline__ int scale_shift(unsigned top) {
  const int biased = top >> 23;  // top >= 0
  return top >= 0x7f800000u || top == 0 ? 0 : max(-126, min(126, 127 - biased));
}
__device__ __forceinline__ float pow2(int e) {  // 2^e for |e| <= 126
  return __uint_as_float(static_cast<unsigned>(e + 127) << 23);
}
// [docs:scale-end]

// [docs:largest]
// Before the product: the largest magnitude in each row of A (M x K) and each
// column of B (its first rowsB rows: those it has, where K was rounded up past
// them), into top[m] and top[M + n], zeroed by the host. Magnitudes are kept
// as their bits, which order as unsigned integers do (NaN's above infinity's),
// so that atomicMax combines what the blocks found. The work comes in pieces
// of CHUNK values of k: 8 rows of A (a warp each), or 32 columns of B (a lane
// each), read as they lie; the blocks take pieces in turn, whatever the grid.
constexpr int CHUNK = 1024;
__global__ void __launch_bounds__(256)
largest_magnitudes(int M, int N, int K, int rowsB, const float* A, const float* B, unsigned* top) {
  __shared__ unsigned found[8][32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int chunks = (K + CHUNK - 1) / CHUNK;
  const int piecesA = (M + 7) / 8 * chunks, pieces = piecesA + (N + 31) / 32 * chunks;
  for (int piece = blockIdx.x; piece < pieces; piece += gridDim.x) {
    unsigned largest = 0;  // the bits of the largest magnitude this thread read
    if (piece < piecesA) {
      const int m = piece / chunks * 8 + warp;
      const int k0 = piece % chunks * CHUNK, end = min(K, k0 + CHUNK);
      if (m >= M) continue;  // the whole warp: m is the warp's
      const float* row = A + static_cast<size_t>(m) * K;
#pragma unroll 8
      for (int k = k0 + lane; k < end; k += 32)
        largest = max(largest, __float_as_uint(fabsf(row[k])));
      for (int lanes = 16; lanes > 0; lanes /= 2)
        largest = max(largest, __shfl_xor_sync(0xffffffffu, largest, lanes));
      if (lane == 0) atomicMax(&top[m], largest);
      continue;
    }
    const int n = (piece - piecesA) / chunks * 32 + lane;
    const int k0 = (piece - piecesA) % chunks * CHUNK, end = min(rowsB, k0 + CHUNK);
    if (n < N) {
#pragma unroll 8
      for (int k = k0 + warp; k < end; k += 8)
        largest = max(largest, __float_as_uint(fabsf(B[static_cast<size_t>(k) * N + n])));
    }
    found[warp][lane] = largest;
    __syncthreads();
    if (warp == 0 && n < N) {
      for (int w = 1; w < 8; ++w) largest = max(largest, found[w][lane]);
      atomicMax(&top[M + n], largest);
    }
    __syncthreads();  // found is free for the next piece
  }
}
// [docs:largest-end]
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Wait until at most PENDING committed groups of wgmmas are still running.
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
// d = a * b + (ACCUMULATE ? d : 0), 64 x N x 8: a from this thread's registers
// (4 TF32 values of the warpgroup's 64 x 8 tile), b (8 x N) from shared
// memory; N is the block's rows of C (BM: 64, 128 or 256), and each thread
// holds N / 2 of the warpgroup's 64 x N sums. With ACCUMULATE false, d's old
// values are not read: a sum starts afresh without zeroing them first. The
// instruction names N and every accumulator register, so each N is written
// out: the accumulators' numbers 32 at a time, then a, b and ACCUMULATE.
#define WGMMA_D0                                                                         \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22," \
  "%23,%24,%25,%26,%27,%28,%29,%30,%31"
#define WGMMA_D1                                                                          \
  "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52," \
  "%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define WGMMA_D2                                                                          \
  "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84," \
  "%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95"
#define WGMMA_D3                                                                         \
  "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112," \
  "%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
template <int N, bool ACCUMULATE = true>
__device__ __forceinline__ void wgmma_64xNx8(float (&d)[N / 2], const unsigned (&a)[4],
                                             unsigned long long b) {
#define D8(i)                                                                          \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define D32(i) D8(i), D8(i + 8), D8(i + 16), D8(i + 24)
#define OPERANDS "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(ACCUMULATE ? 1 : 0)
  static_assert(N == 64 || N == 128 || N == 256, "wgmma_64xNx8 is written for N = 64, 128, 256");
  if constexpr (N == 64) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{" WGMMA_D0 "}, {%32,%33,%34,%35}, %36, p, 1, 1;\n}\n"
        : D32(0)
        : OPERANDS);
  } else if constexpr (N == 128) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{" WGMMA_D0 "," WGMMA_D1 "}, {%64,%65,%66,%67}, %68, p, 1, 1;\n}\n"
        : D32(0), D32(32)
        : OPERANDS);
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
        "{" WGMMA_D0 "," WGMMA_D1 "," WGMMA_D2 "," WGMMA_D3 "}, "
        "{%128,%129,%130,%131}, %132, p, 1, 1;\n}\n"
        : D32(0), D32(32), D32(64), D32(96)
        : OPERANDS);
  }
#undef OPERANDS
#undef D32
#undef D8
}
// [docs:helpers-end]

// [docs:kernel]
// The kernel's work, for a block whose numbers are split as they are or one
// whose rows and columns are scaled first (SCALED: the kernel below decides).
template <int BM, int BN, int STAGES, bool SCALED>
__device__ __forceinline__ void multiply(int M, int N, int K, float alpha, const float* A,
                                         const float* B, float beta, float* C,
                                         const TensorMap& mapA, const TensorMap& mapB,
                                         const unsigned* top) {
  // [docs:params]
  // BM: rows of C per block, wgmma's N (128 at most here: 256 leaves no
  // registers for `part`; 64 where C has few rows)
  constexpr int BK = 32;   // one 128-byte swizzled row of floats per slice
  constexpr int CONSUMERS = BN / 64;  // warpgroups that multiply, 64 columns of C each
  constexpr int A_FLOATS = BM * BK;   // one slice of A: BM rows of BK
  constexpr int B_FLOATS = BK * BN;   // one slice of B: BN / 32 boxes of BK x 32
  // [docs:params-end]
  static_assert(BN % 64 == 0 && CONSUMERS >= 1, "each consumer warpgroup takes 64 columns");
  static_assert(STAGES >= 2, "one slice to multiply, at least one arriving");

  // Tiles in dynamic shared memory, each buffer on a 1024-byte boundary (the
  // swizzle's period); the launch gives 1024 bytes of slack for that.
  extern __shared__ unsigned char raw[];
  // (Offset from raw itself, so that the compiler still knows these are
  // shared-memory addresses and loads them with LDS, not generic loads.)
  float* const tiles = reinterpret_cast<float*>(raw + ((1024 - smem(raw) % 1024) % 1024));
  float* const As = tiles;  // As[s]: BM rows x BK, swizzled; A's big parts, once split
  float* const AsSmall = tiles + STAGES * A_FLOATS;  // their small parts, laid out alike
  float* const Bs = tiles + 2 * STAGES * A_FLOATS;   // Bs[s]: BN / 32 boxes of BK rows x 32
  // ready[s]: the producer's threads have split slice s of A (one arrival each).
  __shared__ unsigned long long full[STAGES], ready[STAGES], empty[STAGES];

  const int blockRow = blockIdx.y * BM;
  const int blockCol = blockIdx.x * BN;
  // Split-K (a grid gridDim.z layers deep, as step 09 runs step 08's kernel):
  // layer z multiplies its own run of slices, from k = kFirst, and writes its
  // partial product to the z-th of gridDim.z matrices of M x N laid out from C.
  const int perLayer = ((K + BK - 1) / BK + gridDim.z - 1) / gridDim.z;
  const int kFirst = blockIdx.z * perLayer * BK;
  const int slices = max(0, min(perLayer, (K - kFirst + BK - 1) / BK));
  C += static_cast<size_t>(blockIdx.z) * M * N;
  // TMA describes a matrix whose rows start at 16-byte multiples; the host
  // encoded a map for each matrix exactly when this holds.
  const bool tmaA = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  const bool tmaB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  // full[s]: one arrival announcing the TMA bytes, plus one per producer
  // thread when any matrix is copied float by float.
  const int fullCount = (tmaA || tmaB ? 1 : 0) + (tmaA && tmaB ? 0 : 128);
  const int tmaBytes = 4 * ((tmaA ? A_FLOATS : 0) + (tmaB ? B_FLOATS : 0));

  const int warpgroup = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      bar_init(&full[s], fullCount);
      bar_init(&ready[s], 128);
      bar_init(&empty[s], 128 * CONSUMERS);  // every consumer thread
    }
    // Make the initialized barriers visible to the copy engine.
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  // [docs:producer]
  if (warpgroup == 0) {
    // The producer needs few registers: give the rest to the consumers.
    // (64: a warp holds its rows of a slice of A, 32 floats a thread.)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 64;\n");
    const int p = threadIdx.x;  // 0..127
    // Slices are split LAG slices after their copies start, so that LAG + 1
    // are on their way at once: STAGES - 2, since the copy of slice t waits
    // for the consumers to finish slice t - STAGES (none with two stages).
    constexpr int LAG = STAGES - 2;
    // Warp w splits rows w BM / 4 on (a swizzled row is 128 contiguous bytes),
    // each lane QUADS float4s, 32 apart: rows w BM / 4 + lane / 8 + 4i of the
    // block. Scaled, each row by its own power of two: the same in every slice.
    constexpr int QUADS = BM / 4 * BK / 4 / 32;
    const int w = p / 32, lane = p % 32;
    float scale[QUADS];
#pragma unroll
    for (int i = 0; i < QUADS; ++i) {
      const int row = blockRow + w * BM / 4 + lane / 8 + 4 * i;
      scale[i] = SCALED && row < M ? pow2(scale_shift(top[row])) : 1.0f;
    }
    // Once slice u has landed, split its A: the big parts in place, the small
    // ones beside them (the split does not care where the swizzle put each
    // float); then show both to the tensor cores, and say so on ready[s].
    auto split_slice = [&](int u, bool last) {
      const int s = u % STAGES;
      if (!(tmaA && tmaB)) {
        // Wait for this thread's copies of slice u (all of them after the
        // last slice), then add its arrival to full[s].
        if (last) {
          asm volatile("cp.async.wait_group 0;\n" ::: "memory");
        } else {
          asm volatile("cp.async.wait_group %0;\n" ::"n"(LAG) : "memory");
        }
        bar_arrive(&full[s]);
      }
      bar_wait(&full[s], (u / STAGES) & 1);
      float4* const big = reinterpret_cast<float4*>(As + s * A_FLOATS) + w * QUADS * 32;
      float4* const small = reinterpret_cast<float4*>(AsSmall + s * A_FLOATS) + w * QUADS * 32;
      split_rows<SCALED>(big, small, scale, lane);
      // These stores are the generic proxy's; wgmma reads through the async one.
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      bar_arrive(&ready[s]);
    };
    for (int t = 0; t < slices; ++t) {
      const int s = t % STAGES;
      const int k0 = kFirst + t * BK;
      // Buffer s is free once the consumers released its last slice.
      if (t >= STAGES) bar_wait(&empty[s], (t / STAGES + 1) & 1);
      float* const as = As + s * A_FLOATS;
      float* const bs = Bs + s * B_FLOATS;
      if (p == 0 && (tmaA || tmaB)) {
        bar_arrive_tx(&full[s], tmaBytes);
        if (tmaA) tma_load(as, mapA, k0, blockRow, &full[s]);
        if (tmaB) {
          for (int b = 0; b < BN / 32; ++b)
            tma_load(bs + b * BK * 32, mapB, blockCol + 32 * b, k0, &full[s]);
        }
      }
      if (!(tmaA && tmaB)) {
        // Float by float, warp by warp along rows (coalesced), into the same
        // swizzled places as TMA's: warp w copies rows w, w + 4, w + 8, ...,
        // whose swizzle alternates between two patterns.
        const int lane = p % 32, warp = p / 32;
        const int swizzle[2] = {swizzled(warp, lane) - 32 * warp,
                                swizzled(warp + 4, lane) - 32 * (warp + 4)};
        if (!tmaA) {
          const bool inK = k0 + lane < K;
          const int rows = M - blockRow - warp;  // row warp + 4i is inside when 4i < rows
          const float* src = A + (blockRow + warp) * K + k0 + lane;
#pragma unroll 8
          for (int i = 0; i < BM / 4; ++i, src += 4 * K) {
            const bool inside = inK && 4 * i < rows;
            copy_float(as + 32 * (warp + 4 * i) + swizzle[i % 2], inside ? src : A, inside);
          }
        }
        if (!tmaB) {
          const int rows = K - k0 - warp;
#pragma unroll
          for (int b = 0; b < BN / 32; ++b) {
            const bool inN = blockCol + 32 * b + lane < N;
            const float* src = B + (k0 + warp) * N + blockCol + 32 * b + lane;
#pragma unroll
            for (int i = 0; i < BK / 4; ++i, src += 4 * N) {
              const bool inside = inN && 4 * i < rows;
              copy_float(bs + b * BK * 32 + 32 * (warp + 4 * i) + swizzle[i % 2],
                         inside ? src : B, inside);
            }
          }
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
      }
      if (t >= LAG) split_slice(t - LAG, false);
    }
    for (int u = max(slices - LAG, 0); u < slices; ++u) split_slice(u, true);
    return;
  }
  // [docs:producer-end]

  // [docs:consumer]
  asm volatile("setmaxnreg.inc.sync.aligned.u32 216;\n");
  const int consumer = warpgroup - 1;   // which 64 columns of the block tile
  const int warp = threadIdx.x / 32 % 4;  // warp within the warpgroup
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;

  // [docs:rows]
  // Lane (g, q) of warp w holds rows g and g + 8 of the warpgroup's 16w..16w+15
  // of B^T (columns of C) for wgmma. Which 64 columns of C those 64 rows are
  // is ours to choose, as long as the epilogue agrees: column(j, g) below
  // spreads the 8 lanes that share q over both halves of a swizzled row, so
  // that one load from Bs hits 32 different banks.
  auto column = [&](int j, int gg) {  // j = 2 * warp + (row >= 8)
    return (gg & 3) + 16 * (gg >> 2) + 4 * (j & 3) + 32 * (j >> 2);
  };
  // [docs:rows-end]

  // Scaled, this thread's two rows of B^T (columns of C, h = 0, 1) by their
  // columns' powers of two: the same in every slice.
  float scale[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int n = blockCol + 64 * consumer + column(2 * warp + h, g);
    scale[h] = SCALED && n < N ? pow2(scale_shift(top[M + n])) : 1.0f;
  }

  // acc: the running sums, added by the FP32 lanes; part: one slice's, summed
  // by the tensor cores.
  float acc[BM / 2], part[BM / 2];
#pragma unroll
  for (int i = 0; i < BM / 2; ++i) acc[i] = 0.0f;

  for (int t = 0; t < slices; ++t) {
    const int s = t % STAGES;
    bar_wait(&full[s], (t / STAGES) & 1);   // B's slice has landed
    bar_wait(&ready[s], (t / STAGES) & 1);  // A's is split
    const float* const as = As + s * A_FLOATS;
    const float* const asSmall = AsSmall + s * A_FLOATS;
    const float* const bs = Bs + s * B_FLOATS;
    // B^T's fragments for the slice: x[kk] holds rows (g, g + 8) x columns
    // (q, q + 4) of its kk-th 64 x 8 piece; big[kk] and small[kk], split.
    float x[BK / 8][4];
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int j = 2 * warp + (i & 1);
        const int n = 64 * consumer + column(j, g);  // column of the block tile
        const int k = 8 * kk + q + 4 * (i >> 1);
        x[kk][i] = bs[n / 32 * BK * 32 + swizzled(k, n % 32)];
      }
    }
    unsigned big[BK / 8][4], small[BK / 8][4];
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        split_scaled<SCALED>(x[kk][i], scale[i & 1], big[kk][i], small[kk][i]);
    }
    wgmma_fence();
    // [docs:products]
    // The slice's products into `part`, started afresh by the first; the small
    // terms first, since each addition inside the tensor cores loses what
    // falls below the bits it keeps of the largest term so far.
    wgmma_64xNx8<BM, false>(part, small[0], descriptor(as));
    wgmma_64xNx8<BM, true>(part, big[0], descriptor(asSmall));
#pragma unroll
    for (int kk = 1; kk < BK / 8; ++kk) {
      wgmma_64xNx8<BM, true>(part, small[kk], descriptor(as + 8 * kk));
      wgmma_64xNx8<BM, true>(part, big[kk], descriptor(asSmall + 8 * kk));
    }
#pragma unroll
    for (int kk = 0; kk < BK / 8; ++kk)
      wgmma_64xNx8<BM, true>(part, big[kk], descriptor(as + 8 * kk));
    // [docs:products-end]
    wgmma_commit();
    // The tensor cores read the fragments until their products are done: wait for
    // them before the next slice's fragments overwrite them. (Keeping one
    // group in flight with two sets of fragments made ptxas serialize the
    // wgmmas, warning C7513, and ran slower.) The other consumer warpgroup's
    // wgmmas keep the tensor cores busy meanwhile.
    wgmma_wait<0>();
    // Every thread says it is done with the buffer: one arrival per warp after
    // a __syncwarp would do as well, but compute-sanitizer's racecheck cannot
    // see that the warp's loads come before it, and reports a race.
    bar_arrive(&empty[s]);
    // [docs:promote]
    // Promotion: the slice's sums join the running sums in FP32, rounded to
    // the nearest. (Every slice is scaled alike: the sums are added as they are.)
#pragma unroll
    for (int i = 0; i < BM / 2; ++i) acc[i] += part[i];
    // [docs:promote-end]
  }
  // [docs:consumer-end]

  // [docs:epilogue]
  // acc[4 c + 2 h + e] is row g + 8h, column 8c + 2q + e of the warpgroup's
  // 64 x BM product: column (2 warp + h, g) of this warpgroup's 64 columns of
  // C, row 8c + 2q + e of the block tile. Written straight to C, a warp's
  // store would touch 8 pieces of 16 bytes in 4 rows; so the warpgroup first
  // lays its BM x 64 tile out in shared memory (the pipeline's buffers, once
  // every consumer is done with them), then writes C a row at a time.
  constexpr int LDC = 64 + 2;  // puts the 32 lanes' stores in 32 banks
  static_assert(CONSUMERS * BM * LDC <= STAGES * (2 * A_FLOATS + B_FLOATS),
                "the epilogue lays C out in the pipeline's buffers: they must hold it");
  // Scaled, C is scaled back by its rows' and columns' powers of two: the
  // rows' in shared memory, each found once, this thread's two columns' here.
  __shared__ int rowShift[BM];
  int colShift[2];
  if (SCALED) {
    const int r = threadIdx.x - 128;
    if (r < BM) rowShift[r] = blockRow + r < M ? scale_shift(top[blockRow + r]) : 0;
    for (int half = 0; half < 2; ++half) {
      const int col = blockCol + 64 * consumer + 32 * half + lane;
      colShift[half] = col < N ? scale_shift(top[M + col]) : 0;
    }
  }
  asm volatile("bar.sync 1, %0;\n" ::"n"(128 * CONSUMERS) : "memory");
  float* const Cs = tiles + consumer * BM * LDC;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int col = column(2 * warp + h, g);
#pragma unroll
    for (int c = 0; c < BM / 8; ++c) {
#pragma unroll
      for (int e = 0; e < 2; ++e) Cs[(8 * c + 2 * q + e) * LDC + col] = acc[4 * c + 2 * h + e];
    }
  }
  asm volatile("bar.sync %0, 128;\n" ::"r"(2 + consumer) : "memory");
  // With beta = 0, C is not read: BLAS lets it hold anything then (as step 08).
  const bool readC = beta != 0.0f;
  for (int r = warp; r < BM; r += 4) {
    const int row = blockRow + r;
    if (row >= M) break;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int col = blockCol + 64 * consumer + 32 * half + lane;
      if (col < N) {
        float sum = Cs[r * LDC + 32 * half + lane];
        if (SCALED) {
          // By both powers of two, in two halves of at most 126 each, so
          // that neither half overflows where their product does not.
          const int back = -(rowShift[r] + colShift[half]);
          sum = sum * pow2(back / 2) * pow2(back - back / 2);
        }
        float* const p = C + row * N + col;
        *p = alpha * sum + (readC ? beta * *p : 0.0f);
      }
    }
  }
  // [docs:epilogue-end]
}

// [docs:entry]
// Whether this block's rows of A and columns of B are all ordinary (top holds
// their largest magnitudes), found once for the whole block, decides which of
// multiply's two the block runs: most matrices never pay for scaling.
template <int BM, int BN, int STAGES>
__global__ void __launch_bounds__(128 * (1 + BN / 64), 1)
sgemm_wgmma_3xtf32(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                   float* C, const __grid_constant__ TensorMap mapA,
                   const __grid_constant__ TensorMap mapB, const unsigned* top) {
  bool far = false;  // a row or column of this thread's is not ordinary
  for (int i = threadIdx.x; i < BM + BN; i += blockDim.x) {
    const int row = blockIdx.y * BM + i, col = blockIdx.x * BN + i - BM;
    if (i < BM ? row < M : col < N) far |= !ordinary(top[i < BM ? row : M + col]);
  }
  if (__syncthreads_or(far)) {
    multiply<BM, BN, STAGES, true>(M, N, K, alpha, A, B, beta, C, mapA, mapB, top);
  } else {
    multiply<BM, BN, STAGES, false>(M, N, K, alpha, A, B, beta, C, mapA, mapB, top);
  }
}
// [docs:entry-end]
// [docs:kernel-end]

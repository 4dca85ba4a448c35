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
// bits, and near 2^128 the big part rounds up to infinity. So each block notes
// the largest magnitude of each of its rows of A and columns of B as it splits
// them. A block whose rows and columns were all far from both ends
// (ordinary: most matrices' every block) is done; any other multiplies its
// slices again, each row and column scaled by the power of two that brings
// its largest magnitude to [1, 2) before it is split, and C back as it is
// written (scale_shift), which keeps inputs near either end of the float
// range as accurate as FP32 keeps them.
//
// What changes from step 12 (the chapter shows the difference line by line):
// the producer warpgroup, idle between its copies, splits each slice of A
// once it has landed, each warp its own quarter of the rows: the big parts in
// place, the small ones into a buffer beside it (another barrier, ready[s],
// says when); the consumers split B's fragments as they load them, issue
// three wgmmas where step 12 issued one, and promote each slice's sums. A
// slice takes 48 KB of shared memory: A, its small parts and B. And where C
// has few tiles, a tile's layers of K add up their sums themselves, a cluster
// of blocks reading one another's shared memory (write), where step 12's go
// through memory to step 09's reduction.
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

// [docs:note]
// The largest magnitude seen so far: one instruction (FMNMX, with |x| for
// free). A NaN is passed over: it makes its sums NaN, scaled or not.
__device__ __forceinline__ void note(float& largest, float x) {
  largest = fmaxf(largest, fabsf(x));
}
// [docs:note-end]

// The producer's split of a lane's QUADS float4s of a slice of A, 32 apart
// from big[lane]: the big parts in place, the small ones at the same offsets
// from small. Scaled, row i's by scale[i]; else noting row i's largest
// magnitude in largest[i] (note, above).
template <bool SCALED, int QUADS>
__device__ __forceinline__ void split_rows(float4* big, float4* small, const float (&scale)[QUADS],
                                           float (&largest)[QUADS], int lane) {
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
    if (!SCALED) {
      note(largest[i], x[i].x);
      note(largest[i], x[i].y);
      note(largest[i], x[i].z);
      note(largest[i], x[i].w);
    }
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
// B whose largest magnitude over the block's slices, top (a float's bits), is
// ordinary, in [2^-50, 2^50) (or 0), is far from both, and so are its
// products with another's: numbers split as they are give the right sums.
// Any other is scaled by 2^shift, the power of two that brings its largest
// magnitude to [1, 2), before it is split, and C back as it is written: exact
// both ways. A row of infinities or NaN is not scaled: they pass through as
// they would in FP32.
__device__ __forceinline__ bool ordinary(float top) {
  return top == 0.0f || (top >= 0x1p-50f && top < 0x1p50f);
}
__device__ __forceinline__ int scale_shift(float top) {
  const int biased = __float_as_uint(top) >> 23;  // top >= 0
  return isinf(top) || top == 0.0f ? 0 : max(-126, min(126, 127 - biased));
}
__device__ __forceinline__ float pow2(int e) {  // 2^e for |e| <= 126
  return __uint_as_float(static_cast<unsigned>(e + 127) << 23);
}
// [docs:scale-end]

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
// --- a cluster of blocks (the layers of K of one tile of C, LAYERS > 1).
// Every thread of the cluster that has not exited arrives, then waits for
// the rest: what each wrote to its shared memory before is seen by all.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// The float at p in the shared memory of the cluster's block `rank`.
__device__ __forceinline__ float peer_float(const float* p, int rank) {
  unsigned remote;
  float x;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem(p)), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(x) : "r"(remote) : "memory");
  return x;
}
// [docs:helpers-end]

// [docs:kernel]
// One block's share of the product, and where its slices pass through shared
// memory: what its producer and its consumers (below) both need.
template <int BM, int BN, int STAGES>
struct Block {
  // [docs:params]
  // BM: rows of C per block, wgmma's N (128 at most here: 256 leaves no
  // registers for `part`; 64 where C has few rows)
  static constexpr int BK = 32;   // one 128-byte swizzled row of floats per slice
  static constexpr int CONSUMERS = BN / 64;  // warpgroups that multiply, 64 columns of C each
  static constexpr int A_FLOATS = BM * BK;   // one slice of A: BM rows of BK
  static constexpr int B_FLOATS = BK * BN;   // one slice of B: BN / 32 boxes of BK x 32
  // [docs:params-end]
  int M, N, K;
  const float *A, *B;
  const TensorMap *mapA, *mapB;
  int row, col;        // the block's first row and column of C
  int kFirst, slices;  // its first k, and how many slices of BK from there are its
  bool tmaA, tmaB;     // whether TMA copies each matrix (else cp.async, float by float)
  float *As, *AsSmall, *Bs;
  unsigned long long *full, *ready, *empty;
};

// Lane (g, q) of warp w holds rows g and g + 8 of the warpgroup's 16w..16w+15
// of B^T (columns of C) for wgmma. Which 64 columns of C those 64 rows are
// is ours to choose, as long as the epilogue agrees: column(j, g) spreads the
// 8 lanes that share q over both halves of a swizzled row, so that one load
// from Bs hits 32 different banks (j = 2 * warp + (row >= 8)).
__device__ __forceinline__ int column(int j, int g) {
  return (g & 3) + 16 * (g >> 2) + 4 * (j & 3) + 32 * (j >> 2);
}

// [docs:producer]
// The producer's pass over the block's slices. The ring of buffers runs on
// from any pass before: this pass's slice t is the ring's first + t. Warp w
// splits rows w BM / 4 on (a swizzled row is 128 contiguous bytes), each lane
// QUADS float4s, 32 apart: rows w BM / 4 + lane / 8 + 4i of the block.
// Scaled, row i by scale[i], the same in every slice; else noting each row's
// largest magnitude in largest[i].
template <bool SCALED, int BM, int BN, int STAGES, int QUADS>
__device__ __forceinline__ void produce(const Block<BM, BN, STAGES>& b, int first,
                                        const float (&scale)[QUADS], float (&largest)[QUADS]) {
  using Sizes = Block<BM, BN, STAGES>;
  constexpr int BK = Sizes::BK, A_FLOATS = Sizes::A_FLOATS, B_FLOATS = Sizes::B_FLOATS;
  const int p = threadIdx.x;  // 0..127
  const int w = p / 32, lane = p % 32;
  // Slices are split LAG slices after their copies start, so that LAG + 1
  // are on their way at once: STAGES - 2, since the copy of slice t waits
  // for the consumers to finish slice t - STAGES (none with two stages).
  constexpr int LAG = STAGES - 2;
  const int end = first + b.slices;
  // Once slice u has landed, split its A: the big parts in place, the small
  // ones beside them (the split does not care where the swizzle put each
  // float); then show both to the tensor cores, and say so on ready[s].
  auto split_slice = [&](int u, bool last) {
    const int s = u % STAGES;
    if (!(b.tmaA && b.tmaB)) {
      // Wait for this thread's copies of slice u (all of them after the
      // last slice), then add its arrival to full[s].
      if (last) {
        asm volatile("cp.async.wait_group 0;\n" ::: "memory");
      } else {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(LAG) : "memory");
      }
      bar_arrive(&b.full[s]);
    }
    bar_wait(&b.full[s], (u / STAGES) & 1);
    float4* const big = reinterpret_cast<float4*>(b.As + s * A_FLOATS) + w * QUADS * 32;
    float4* const small = reinterpret_cast<float4*>(b.AsSmall + s * A_FLOATS) + w * QUADS * 32;
    split_rows<SCALED>(big, small, scale, largest, lane);
    // These stores are the generic proxy's; wgmma reads through the async one.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    bar_arrive(&b.ready[s]);
  };
  for (int t = first; t < end; ++t) {
    const int s = t % STAGES;
    const int k0 = b.kFirst + (t - first) * BK;
    // Buffer s is free once the consumers released its last slice.
    if (t >= STAGES) bar_wait(&b.empty[s], (t / STAGES + 1) & 1);
    float* const as = b.As + s * A_FLOATS;
    float* const bs = b.Bs + s * B_FLOATS;
    if (p == 0 && (b.tmaA || b.tmaB)) {
      bar_arrive_tx(&b.full[s], 4 * ((b.tmaA ? A_FLOATS : 0) + (b.tmaB ? B_FLOATS : 0)));
      if (b.tmaA) tma_load(as, *b.mapA, k0, b.row, &b.full[s]);
      if (b.tmaB) {
        for (int box = 0; box < BN / 32; ++box)
          tma_load(bs + box * BK * 32, *b.mapB, b.col + 32 * box, k0, &b.full[s]);
      }
    }
    if (!(b.tmaA && b.tmaB)) {
      // Float by float, warp by warp along rows (coalesced), into the same
      // swizzled places as TMA's: warp w copies rows w, w + 4, w + 8, ...,
      // whose swizzle alternates between two patterns.
      const int swizzle[2] = {swizzled(w, lane) - 32 * w, swizzled(w + 4, lane) - 32 * (w + 4)};
      if (!b.tmaA) {
        const bool inK = k0 + lane < b.K;
        const int rows = b.M - b.row - w;  // row w + 4i is inside when 4i < rows
        const float* src = b.A + (b.row + w) * b.K + k0 + lane;
#pragma unroll 8
        for (int i = 0; i < BM / 4; ++i, src += 4 * b.K) {
          const bool inside = inK && 4 * i < rows;
          copy_float(as + 32 * (w + 4 * i) + swizzle[i % 2], inside ? src : b.A, inside);
        }
      }
      if (!b.tmaB) {
        const int rows = b.K - k0 - w;
#pragma unroll
        for (int box = 0; box < BN / 32; ++box) {
          const bool inN = b.col + 32 * box + lane < b.N;
          const float* src = b.B + (k0 + w) * b.N + b.col + 32 * box + lane;
#pragma unroll
          for (int i = 0; i < BK / 4; ++i, src += 4 * b.N) {
            const bool inside = inN && 4 * i < rows;
            copy_float(bs + box * BK * 32 + 32 * (w + 4 * i) + swizzle[i % 2],
                       inside ? src : b.B, inside);
          }
        }
      }
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    if (t - first >= LAG) split_slice(t - LAG, false);
  }
  for (int u = max(end - LAG, first); u < end; ++u) split_slice(u, true);
}
// [docs:producer-end]

// [docs:consumer]
// A consumer's pass over the block's slices (the ring's first + t, as the
// producer's), its sums into acc. Scaled, this thread's two columns of C (h =
// 0, 1) by scale[h]; else noting their largest magnitudes in largest[h].
template <bool SCALED, int BM, int BN, int STAGES>
__device__ __forceinline__ void consume(const Block<BM, BN, STAGES>& b, int first,
                                        const float (&scale)[2], float (&largest)[2],
                                        float (&acc)[BM / 2]) {
  using Sizes = Block<BM, BN, STAGES>;
  constexpr int BK = Sizes::BK, A_FLOATS = Sizes::A_FLOATS, B_FLOATS = Sizes::B_FLOATS;
  const int consumer = threadIdx.x / 128 - 1;  // which 64 columns of the block tile
  const int warp = threadIdx.x / 32 % 4;       // warp within the warpgroup
  const int lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;

  // acc: the running sums, added by the FP32 lanes; part: one slice's, summed
  // by the tensor cores.
  float part[BM / 2];
#pragma unroll
  for (int i = 0; i < BM / 2; ++i) acc[i] = 0.0f;

  for (int t = first; t < first + b.slices; ++t) {
    const int s = t % STAGES;
    bar_wait(&b.full[s], (t / STAGES) & 1);   // B's slice has landed
    bar_wait(&b.ready[s], (t / STAGES) & 1);  // A's is split
    const float* const as = b.As + s * A_FLOATS;
    const float* const asSmall = b.AsSmall + s * A_FLOATS;
    const float* const bs = b.Bs + s * B_FLOATS;
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
      for (int i = 0; i < 4; ++i) {
        split_scaled<SCALED>(x[kk][i], scale[i & 1], big[kk][i], small[kk][i]);
        if (!SCALED) note(largest[i & 1], x[kk][i]);
      }
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
    bar_arrive(&b.empty[s]);
    // [docs:promote]
    // Promotion: the slice's sums join the running sums in FP32, rounded to
    // the nearest. (Every slice is scaled alike: the sums are added as they are.)
#pragma unroll
    for (int i = 0; i < BM / 2; ++i) acc[i] += part[i];
    // [docs:promote-end]
  }
}
// [docs:consumer-end]

// [docs:epilogue]
// Two elements of row `row` of C, columns col and col + 32 (where they lie in
// C): alpha sums[h] + beta C. With beta = 0, C is not read: BLAS lets it hold
// anything then (as step 08).
__device__ __forceinline__ void put(float* C, int N, int row, int col, const float (&sums)[2],
                                    float alpha, float beta) {
#pragma unroll
  for (int half = 0; half < 2; ++half, col += 32) {
    if (col < N) {
      float* const p = C + static_cast<size_t>(row) * N + col;
      *p = alpha * sums[half] + (beta != 0.0f ? beta * *p : 0.0f);
    }
  }
}

// A consumer's sums into C. acc[4 c + 2 h + e] is row g + 8h, column 8c + 2q
// + e of the warpgroup's 64 x BM product: column (2 warp + h, g) of this
// warpgroup's 64 columns of C, row 8c + 2q + e of the block tile. Written
// straight to C, a warp's store would touch 8 pieces of 16 bytes in 4 rows;
// so the warpgroup first lays its BM x 64 tile out in shared memory (the
// pipeline's buffers, once every consumer is done with them), then writes C a
// row at a time. Scaled, each sum is scaled back as it is laid out, by its
// row's and column's powers of two, from the largest magnitudes in shared
// memory (top: the block's rows', then its columns').
//
// In a cluster of LAYERS blocks (one per layer of K, the same tile of C),
// each block lays out its own partial sums; then block z adds up rows 4z +
// warp, 4z + warp + 4 LAYERS, ... of every layer's, layer 0 first (so the
// sums do not depend on which block finished first), and writes them to C.
template <bool SCALED, int BM, int BN, int STAGES, int LAYERS>
__device__ __forceinline__ void write(const Block<BM, BN, STAGES>& b, const float (&acc)[BM / 2],
                                      float* tiles, const float* top, float alpha, float beta,
                                      float* C) {
  using Sizes = Block<BM, BN, STAGES>;
  constexpr int CONSUMERS = Sizes::CONSUMERS;
  const int consumer = threadIdx.x / 128 - 1, warp = threadIdx.x / 32 % 4;
  const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  constexpr int LDC = 64 + 2;  // puts the 32 lanes' stores in 32 banks
  static_assert(CONSUMERS * BM * LDC <= STAGES * (2 * Sizes::A_FLOATS + Sizes::B_FLOATS),
                "the epilogue lays C out in the pipeline's buffers: they must hold it");
  asm volatile("bar.sync 1, %0;\n" ::"n"(128 * CONSUMERS) : "memory");
  float* const Cs = tiles + consumer * BM * LDC;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int col = column(2 * warp + h, g);
#pragma unroll
    for (int c = 0; c < BM / 8; ++c) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int r = 8 * c + 2 * q + e;
        float sum = acc[4 * c + 2 * h + e];
        if (SCALED) {
          // By both powers of two, in two halves of at most 126 each, so
          // that neither half overflows where their product does not.
          const int back = -(scale_shift(top[r]) + scale_shift(top[BM + 64 * consumer + col]));
          sum = sum * pow2(back / 2) * pow2(back - back / 2);
        }
        Cs[r * LDC + col] = sum;
      }
    }
  }
  if (LAYERS == 1) {
    asm volatile("bar.sync %0, 128;\n" ::"r"(2 + consumer) : "memory");
    // Nothing to gather: a row at a time, the loop left rolled. Unrolled, as
    // the layers' below must be for their sums to stay in registers, it
    // doubled the kernel's machine code, and one layer ran 4 to 10% slower at
    // K of 64 to 256 (H200, 2026-11-30, GPU time).
    for (int r = warp; r < BM && b.row + r < b.M; r += 4) {
      const float row[2] = {Cs[r * LDC + lane], Cs[r * LDC + 32 + lane]};
      put(C, b.N, b.row + r, b.col + 64 * consumer + lane, row, alpha, beta);
    }
    return;
  }
  cluster_sync();  // every layer's partial sums are laid out
  // This warp's rows of the tile: r = first + 4 LAYERS i. Their sums are all
  // gathered before any is written, so that the loads from the other blocks
  // are on their way together (one at a time, each waited for, they took
  // longer than the multiplication at 1024^3).
  constexpr int ROWS = (BM + 4 * LAYERS - 1) / (4 * LAYERS);
  const int first = warp + 4 * blockIdx.z;  // the cluster: the grid's depth
  float sums[ROWS][2];
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int r = min(first + 4 * LAYERS * i, BM - 1);  // past BM: not written below
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float* const mine = &Cs[r * LDC + 32 * half + lane];
      float layer[LAYERS];
#pragma unroll
      for (int z = 0; z < LAYERS; ++z) layer[z] = peer_float(mine, z);
      sums[i][half] = 0.0f;
#pragma unroll
      for (int z = 0; z < LAYERS; ++z) sums[i][half] += layer[z];
    }
  }
  // No block leaves (its shared memory with it) while another reads its sums.
  cluster_sync();
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int r = first + 4 * LAYERS * i;
    if (r >= BM || b.row + r >= b.M) break;
    put(C, b.N, b.row + r, b.col + 64 * consumer + lane, sums[i], alpha, beta);
  }
}
// [docs:epilogue-end]

// Each block first multiplies its slices with its numbers split as they are,
// noting as it splits them the largest magnitude of each of its rows of A and
// columns of B. If every one is ordinary (scale, above: most matrices' every
// block), the sums are right and the block writes them. Any other block
// multiplies its slices once more, each row and column scaled by its own
// power of two, and scales C back as it writes it. LAYERS > 1: the grid is
// LAYERS deep, and each tile's layers, a cluster, add their sums up (write).
template <int BM, int BN, int STAGES, int LAYERS>
__global__ void __cluster_dims__(1, 1, LAYERS) __launch_bounds__(128 * (1 + BN / 64), 1)
sgemm_wgmma_3xtf32(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                   float* C, const __grid_constant__ TensorMap mapA,
                   const __grid_constant__ TensorMap mapB) {
  using Sizes = Block<BM, BN, STAGES>;
  constexpr int BK = Sizes::BK, CONSUMERS = Sizes::CONSUMERS, A_FLOATS = Sizes::A_FLOATS,
                THREADS = 128 * (1 + CONSUMERS);
  static_assert(BN % 64 == 0 && CONSUMERS >= 1, "each consumer warpgroup takes 64 columns");
  static_assert(STAGES >= 2, "one slice to multiply, at least one arriving");

  // Tiles in dynamic shared memory, each buffer on a 1024-byte boundary (the
  // swizzle's period); the launch gives 1024 bytes of slack for that.
  extern __shared__ unsigned char raw[];
  // (Offset from raw itself, so that the compiler still knows these are
  // shared-memory addresses and loads them with LDS, not generic loads.)
  float* const tiles = reinterpret_cast<float*>(raw + ((1024 - smem(raw) % 1024) % 1024));
  // ready[s]: the producer's threads have split slice s of A (one arrival each).
  __shared__ unsigned long long full[STAGES], ready[STAGES], empty[STAGES];
  // The largest magnitudes of the block's rows of A, then of its columns of B;
  // whether any is far from 1 (`far`), once every thread has arrived on `decided`.
  __shared__ float top[BM + BN];
  __shared__ int far;
  __shared__ unsigned long long decided;

  Block<BM, BN, STAGES> b;
  b.M = M, b.N = N, b.K = K, b.A = A, b.B = B, b.mapA = &mapA, b.mapB = &mapB;
  b.row = blockIdx.y * BM;
  b.col = blockIdx.x * BN;
  // Split-K (a grid gridDim.z layers deep): layer z multiplies its own run of
  // slices, from k = kFirst. (Its largest magnitudes are those of its own run
  // of k, and so is its scaling, undone before it writes.) In a cluster
  // (LAYERS = gridDim.z) the layers add up their sums themselves; else, as
  // step 09 runs step 08's kernel, layer z writes its partial product to the
  // z-th of gridDim.z matrices of M x N laid out from C.
  const int perLayer = ((K + BK - 1) / BK + gridDim.z - 1) / gridDim.z;
  b.kFirst = blockIdx.z * perLayer * BK;
  b.slices = max(0, min(perLayer, (K - b.kFirst + BK - 1) / BK));
  if (LAYERS == 1) C += static_cast<size_t>(blockIdx.z) * M * N;
  // TMA describes a matrix whose rows start at 16-byte multiples; the host
  // encoded a map for each matrix exactly when this holds.
  b.tmaA = K % 4 == 0 && reinterpret_cast<size_t>(A) % 16 == 0;
  b.tmaB = N % 4 == 0 && reinterpret_cast<size_t>(B) % 16 == 0;
  b.As = tiles;  // As[s]: BM rows x BK, swizzled; A's big parts, once split
  b.AsSmall = tiles + STAGES * A_FLOATS;  // their small parts, laid out alike
  b.Bs = tiles + 2 * STAGES * A_FLOATS;   // Bs[s]: BN / 32 boxes of BK rows x 32
  b.full = full, b.ready = ready, b.empty = empty;

  const int warpgroup = threadIdx.x / 128;
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    // full[s]: one arrival announcing the TMA bytes, plus one per producer
    // thread when any matrix is copied float by float.
    const int fullCount = (b.tmaA || b.tmaB ? 1 : 0) + (b.tmaA && b.tmaB ? 0 : 128);
    for (int s = 0; s < STAGES; ++s) {
      bar_init(&full[s], fullCount);
      bar_init(&ready[s], 128);
      bar_init(&empty[s], 128 * CONSUMERS);  // every consumer thread
    }
    bar_init(&decided, THREADS);
    far = 0;
    // Make the initialized barriers visible to the copy engine.
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  // [docs:decide]
  if (warpgroup == 0) {
    // The producer needs few registers: give the rest to the consumers. (72:
    // a thread holds 32 floats of a slice of A and its rows' largest
    // magnitudes, and spilled at 64; 72 x 128 + 216 x 256 = 168 x 384, all
    // the registers the block was launched with.)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 72;\n");
    constexpr int QUADS = BM / 4 * BK / 4 / 32;
    float scale[QUADS], largest[QUADS];
#pragma unroll
    for (int i = 0; i < QUADS; ++i) scale[i] = 1.0f, largest[i] = 0.0f;
    produce<false>(b, 0, scale, largest);
    // A row's 8 lanes pool what they saw, and one writes it down.
#pragma unroll
    for (int i = 0; i < QUADS; ++i) {
      for (int lanes = 4; lanes > 0; lanes /= 2)
        largest[i] = fmaxf(largest[i], __shfl_xor_sync(0xffffffffu, largest[i], lanes));
      if (lane % 8 == 0) top[threadIdx.x / 32 * BM / 4 + lane / 8 + 4 * i] = largest[i];
      if (!ordinary(largest[i])) atomicOr(&far, 1);
      scale[i] = pow2(scale_shift(largest[i]));
    }
    bar_arrive(&decided);
    bar_wait(&decided, 0);
    if (far) produce<true>(b, b.slices, scale, largest);
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 216;\n");
  const int consumer = warpgroup - 1;
  const int warp = threadIdx.x / 32 % 4;
  const int g = lane / 4, q = lane % 4;
  float acc[BM / 2], scale[2] = {1.0f, 1.0f}, largest[2] = {0.0f, 0.0f};
  consume<false>(b, 0, scale, largest, acc);
  // A column's 4 lanes (one q each) pool what they saw, and one writes it down.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    for (int lanes = 2; lanes > 0; lanes /= 2)
      largest[h] = fmaxf(largest[h], __shfl_xor_sync(0xffffffffu, largest[h], lanes));
    if (q == 0) top[BM + 64 * consumer + column(2 * warp + h, g)] = largest[h];
    if (!ordinary(largest[h])) atomicOr(&far, 1);
    scale[h] = pow2(scale_shift(largest[h]));
  }
  // Every thread has had its say once all have arrived (an mbarrier: the
  // producer's threads and the consumers' need not wait at one place).
  bar_arrive(&decided);
  bar_wait(&decided, 0);
  if (far) {
    consume<true>(b, b.slices, scale, largest, acc);
    write<true, BM, BN, STAGES, LAYERS>(b, acc, tiles, top, alpha, beta, C);
  } else {
    write<false, BM, BN, STAGES, LAYERS>(b, acc, tiles, top, alpha, beta, C);
  }
  // [docs:decide-end]
}
// [docs:kernel-end]

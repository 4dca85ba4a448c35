// CUDA on the CPU, for checking course kernels on machines without a GPU.
//
// autograder/run/cpu.py translates a kernel's source (keeping its line numbers)
// and compiles it with this header. Each CUDA thread of a block is a fiber:
// it runs until it reaches __syncthreads(), then the next thread runs. Blocks
// are shared out among the machine's cores (each worker has its own copy of
// shared memory), and each block runs the same way whichever core takes it.
// What that buys:
//  - missing barriers show every time: shared memory is filled with NaN when
//    a block starts, and a thread that reads it before the others have
//    written (or after they have moved on to the next tile) sees the wrong
//    data, deterministically;
//  - every pointer the kernel uses is checked. The checker hands A, B and C
//    over inside padded buffers, as on a GPU. Any access outside a matrix
//    fails the launch, even one inside its padding whose value is never
//    used: such an access goes ahead (so that a later one, into another
//    matrix, is seen too), and the launch then fails naming, for each
//    matrix, the first such access: element, thread, block and the learner's
//    line (captured with __builtin_LINE() at each access). An access beyond
//    the padding, or a float4 access at an address that is not a multiple of
//    16 bytes, stops the launch at once, as it would crash a GPU.
#pragma once

#include <cmath>
#include <math.h>  // fmaf, sqrtf, ... in the global namespace, as in CUDA
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <type_traits>
#include <vector>
#include <csignal>
#include <ctime>
#include <sys/mman.h>
#include <ucontext.h>

// What the library exports (it is built with hidden visibility: autograder/run/cpu.py).
#define CPU_EXPORT __attribute__((visibility("default")))
// What every access runs through: inlined whatever the optimiser thinks of the size of
// the kernel around it (the diagnostic builds' kernels hold many versions of it).
#define CPU_HOT __attribute__((always_inline))
// The builds autograder/judge/localize.py makes (see "The diagnostic builds" below).
#if defined(CPU_DIAGNOSE) || defined(CPU_VARIANTS)
#define CPU_BUDGET
#endif

// CUDA's qualifiers mean nothing here.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3() = default;
  dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct __attribute__((aligned(8))) float2 { float x, y; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(8))) int2 { int x, y; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

// CUDA's min and max take mixed argument types, as C's arithmetic does.
template <class A, class B>
inline std::common_type_t<A, B> min(A a, B b) { return b < a ? b : a; }
template <class A, class B>
inline std::common_type_t<A, B> max(A a, B b) { return a < b ? b : a; }
// CUDA's float intrinsics, with the results of their IEEE (_rn) forms: the fast
// forms (__fdividef, __expf, ...) differ from these in the last bits only, which
// the checker's tolerance allows.
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float rsqrtf(float a) { return 1.0f / std::sqrt(a); }
inline float __saturatef(float a) { return a < 0.0f ? 0.0f : (a > 1.0f ? 1.0f : a); }
inline float __expf(float a) { return std::exp(a); }
inline float __logf(float a) { return std::log(a); }
inline float __powf(float a, float b) { return std::pow(a, b); }
// Bits as another type, as CUDA's reinterpreting intrinsics do.
inline int __float_as_int(float a) { int i; std::memcpy(&i, &a, 4); return i; }
inline unsigned __float_as_uint(float a) { unsigned u; std::memcpy(&u, &a, 4); return u; }
inline float __int_as_float(int i) { float a; std::memcpy(&a, &i, 4); return a; }
inline float __uint_as_float(unsigned u) { float a; std::memcpy(&a, &u, 4); return a; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }

namespace __cpu {

constexpr size_t STACK_BYTES = 128 * 1024;  // a power of two: see self(); cpu.py's too
constexpr unsigned MAX_WORKERS = 8;  // cpu.py's too

// A suspended execution, and the switch from one to another. A block's
// threads switch at every barrier, so on x86-64 (Linux, Colab, CI) the switch
// is seven register saves and restores; elsewhere swapcontext does it.
#if defined(__x86_64__) && defined(__ELF__)
struct Context {
  void* sp = nullptr;
};
extern "C" void cpu_switch_stack(void** save_sp, void* load_sp);
asm(R"(
  .text
  .globl cpu_switch_stack
  .hidden cpu_switch_stack
  .type cpu_switch_stack, @function
cpu_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cpu_switch_stack, .-cpu_switch_stack
)");
inline void switch_to(Context& save, Context& load) { cpu_switch_stack(&save.sp, load.sp); }
inline void make_context(Context& c, char* stack, size_t size, void (*entry)()) {
  void** top = (void**)(((uintptr_t)(stack + size)) & ~(uintptr_t)15);
  *--top = nullptr;          // where entry would return to: it never does
  *--top = (void*)entry;     // popped by the first switch's ret
  for (int i = 0; i < 6; ++i) *--top = nullptr;  // rbp, rbx, r12-r15
  c.sp = top;
}
#else
struct Context {
  ucontext_t uc;
};
inline void switch_to(Context& save, Context& load) { swapcontext(&save.uc, &load.uc); }
inline void make_context(Context& c, char* stack, size_t size, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
#endif

struct Worker;

// Where in the learner's source an access is made: the translation keeps its
// line numbers (#line), and __builtin_FILE/LINE as default arguments give the
// caller's.
struct Where {
  const char* file = nullptr;
  int line = 0;
};
inline std::string at_line(const Where& w) {
  return w.file ? std::string(", at ") + w.file + ":" + std::to_string(w.line) : std::string();
}

// An index into a checked pointer, with the line that used it (an operator
// cannot take default arguments; the converting constructor can).
struct Index {
  std::ptrdiff_t i;
  Where where;
  template <class I, class = std::enable_if_t<std::is_integral_v<I> || std::is_enum_v<I>>>
  CPU_HOT Index(I i_, const char* file = __builtin_FILE(), int line = __builtin_LINE())
      : i((std::ptrdiff_t)i_), where{file, line} {}
};

// A CUDA thread: a fiber whose stack begins with a pointer to this record.
struct Thread {
  uint3 idx;
  unsigned linear = 0;  // its index in the block
  bool done = false;
  // The barrier it waits at: 0, the block's (__syncthreads), a named one of
  // `waits_for` threads (__barrier_sync_count, which step 08's groups pass),
  // or its warp's (WARP_BARRIER, __syncwarp).
  // Volatile: the thread writes them on its own stack and the scheduler reads
  // them on its, a switch the compiler cannot see (g++ -O2 read the 0 the
  // scheduler had stored before the switch).
  volatile unsigned barrier_id = 0, waits_for = 0;
  long accesses = 0;  // in this block, for the diagnostic builds' budget
  Worker* worker;
  Context context;
  char* stack = nullptr;  // from stack_pool: kept for the next launch
};

// An OS thread that runs whole blocks with its own fibers.
struct Worker {
  unsigned id;
  uint3 block_idx;
  long block_serial = 0;  // unique to each block run, so shared memory is poisoned once per block
  Context scheduler;
  jmp_buf abort_launch;
  struct Seen { void* memory; long serial; };
  std::vector<Seen> seen;  // shared arrays and the block that last poisoned them
};

#ifdef CPU_DIAGNOSE
// What the diagnostic build keeps per worker. Global, not in Worker: the scheduler
// and the threads of a block share it across stack switches, which the compiler
// cannot see, and it optimised a Worker's own field as if nobody else wrote it.
struct Diagnostics {
  long epoch = 0;  // the round between two barriers, over all the worker's blocks
  std::string unwritten_read;  // the round's first read of a shared element nobody wrote
};
inline Diagnostics diagnostics[MAX_WORKERS];
#endif

#ifdef CPU_BUDGET
// ---- The diagnostic builds (autograder/judge/localize.py) ----
// They run a failing kernel again, to name what went wrong (CPU_DIAGNOSE: a race, a
// thread's own float read before it was given a value), and run versions of it one
// edit away, to find the line where one change makes every case pass (CPU_VARIANTS:
// `site` names the place in the source that differs, `choice` which of its
// alternatives runs; -1: none, the kernel as written). A version may loop for ever:
// a thread is stopped after `budget` accesses to memory in one block.
inline int site = -1;
inline int choice = 0;
inline long budget = 0;  // accesses one thread may make in one block; 0: no limit
inline long first_blocks = 0;  // how many of the grid's first blocks a launch runs; 0: all
#ifdef CPU_DIAGNOSE
inline bool watch = true;  // races are watched for (shared arrays' Shadow)
#endif

extern "C" CPU_EXPORT void cpu_configure(int site_, int choice_, long budget_, long blocks_) {
  site = site_, choice = choice_, budget = budget_, first_blocks = blocks_;
}

// The most accesses a thread made in one block of the last launch (a block that
// faulted not counted): what a version of the kernel may need is measured on the
// kernel as written, not guessed.
inline std::atomic<long> most_accesses{0};
extern "C" CPU_EXPORT long cpu_most_accesses() { return most_accesses; }

inline void count_access();  // the budget (below)
#endif

// The running CUDA thread, found from the address of a local variable: fiber
// stacks are aligned to their size, so this needs no thread-local storage
// (which is slow in a library loaded at run time).
CPU_HOT inline Thread* self() {
  char probe;
  return *(Thread**)((uintptr_t)&probe & ~(uintptr_t)(STACK_BYTES - 1));
}

inline dim3 grid, block;  // the launch, the same for every worker
inline std::function<void()> kernel;

// What the workers report, kept for the lowest block index so that the
// message does not depend on which core got there first.
inline std::mutex report_lock;
inline std::atomic<bool> stopped;
inline long error_block;
inline std::string error;  // why the launch stopped
struct Note {
  const char* matrix;
  long block;
  std::string text;
};
inline std::vector<Note> notes;  // the first access outside each matrix

inline long linear_block(const uint3& b) { return ((long)b.z * grid.y + b.y) * grid.x + b.x; }

inline std::string who(const Thread* t) {
  const uint3 b = t->worker->block_idx;
  char text[96];
  std::snprintf(text, sizeof text, "thread (%u, %u, %u) of block (%u, %u, %u)", t->idx.x,
                t->idx.y, t->idx.z, b.x, b.y, b.z);
  return text;
}

[[noreturn]] inline void fault(const std::string& what) {
  Thread* t = self();
  const long b = linear_block(t->worker->block_idx);
  {
    std::lock_guard<std::mutex> hold(report_lock);
    if (!stopped || b < error_block) error = who(t) + " " + what, error_block = b;
    stopped = true;
  }
  _longjmp(t->worker->abort_launch, 1);
}

// fault(), for the scheduler of worker w rather than a thread.
[[noreturn]] inline void stop(Worker& w, const std::string& what) {
  const long b = linear_block(w.block_idx);
  {
    std::lock_guard<std::mutex> hold(report_lock);
    if (!stopped || b < error_block) error = what, error_block = b;
    stopped = true;
  }
  _longjmp(w.abort_launch, 1);
}

// The matrices of the launch, so that a raw pointer into one (&A[i], then
// reinterpret_cast to float4*) is checked against it and named.
struct Matrix {
  const char* name;
  const char *base, *end, *lo, *hi;
};
inline Matrix matrices[3];

inline void note(const char* matrix, const std::string& what) {
  const Thread* t = self();
  const long b = linear_block(t->worker->block_idx);
  std::lock_guard<std::mutex> hold(report_lock);
  for (Note& n : notes) {
    if (n.matrix != matrix) continue;
    if (b < n.block) n = {matrix, b, who(t) + " " + what};
    return;
  }
  notes.push_back({matrix, b, who(t) + " " + what});
}

struct ArrayInfo;
[[noreturn]] inline void outside_bytes(const ArrayInfo& info, std::ptrdiff_t byte, size_t bytes,
                                       const Where& w);

// A pointer that checks every access. Pointers into A, B and C know their
// matrix's extent, and pointers into a shared or a thread's own array (an array
// passed to a function) that array's: a write past it would otherwise land in the
// runtime's own memory. Others are checked for alignment.
template <class T>
struct ptr {
  T* p = nullptr;
  const char* base = nullptr;  // the matrix or the array; nullptr: extent unknown
  const char* end = nullptr;
  const char* lo = nullptr;  // the padded buffer around a matrix; an array's own extent
  const char* hi = nullptr;
  const char* name = nullptr;
  const ArrayInfo* array = nullptr;  // the array it points into, if any
  Where where;  // the line that last moved this pointer (for *p and p->x)

  ptr() = default;
  ptr(std::nullptr_t) {}
  // A raw pointer into A, B or C (&A[i]) gets that matrix's extent and name back.
  template <class U, class = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  ptr(U* raw) : p(raw) {
    const char* c = (const char*)raw;
    for (const Matrix& m : matrices) {
      if (m.name && c >= m.lo && c < m.hi) base = m.base, end = m.end, lo = m.lo, hi = m.hi, name = m.name;
    }
  }
  template <class U, class = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  ptr(const ptr<U>& o)
      : p(o.p), base(o.base), end(o.end), lo(o.lo), hi(o.hi), name(o.name), array(o.array),
        where(o.where) {}
  template <class U, class = std::enable_if_t<!std::is_convertible_v<U*, T*>>, class = void>
  explicit ptr(const ptr<U>& o)
      : p((T*)o.p), base(o.base), end(o.end), lo(o.lo), hi(o.hi), name(o.name), array(o.array),
        where(o.where) {}
  ptr(T* matrix, size_t count, T* buffer, size_t buffer_count, const char* matrix_name)
      : p(matrix), base((const char*)matrix), end((const char*)(matrix + count)),
        lo((const char*)buffer), hi((const char*)(buffer + buffer_count)), name(matrix_name) {}
  // An element of an array of `count` elements starting at `data`.
  template <class U>
  ptr(T* element, U* data, size_t count, const ArrayInfo* info)
      : p(element), base((const char*)data), end((const char*)(data + count)), lo(base),
        hi(end), array(info) {}

  CPU_HOT T& at(std::ptrdiff_t i, const Where& w) const {
#ifdef CPU_BUDGET
    count_access();
#endif
    T* q = p + i;
    const char* c = (const char*)q;
    if (base && (c < base || c + sizeof(T) > end)) outside(c, w);
    if ((uintptr_t)q % alignof(T) != 0) misaligned(w);
    return *q;
  }
  CPU_HOT T& operator[](Index i) const { return at(i.i, i.where); }
  T& operator*() const { return at(0, where); }
  T* operator->() const { return &at(0, where); }
  ptr operator+(Index i) const { ptr r = *this; r.p += i.i; r.where = i.where; return r; }
  ptr operator-(Index i) const { ptr r = *this; r.p -= i.i; r.where = i.where; return r; }
  std::ptrdiff_t operator-(const ptr& o) const { return p - o.p; }
  ptr& operator+=(Index i) { p += i.i; where = i.where; return *this; }
  ptr& operator-=(Index i) { p -= i.i; where = i.where; return *this; }
  ptr& operator++() { ++p; return *this; }
  ptr& operator--() { --p; return *this; }
  ptr operator++(int) { ptr r = *this; ++p; return r; }
  ptr operator--(int) { ptr r = *this; --p; return r; }
  bool operator==(const ptr& o) const { return p == o.p; }
  bool operator!=(const ptr& o) const { return p != o.p; }
  bool operator<(const ptr& o) const { return p < o.p; }
  explicit operator bool() const { return p != nullptr; }
  explicit operator T*() const { return p; }

 private:
  // Any access outside the matrix fails the launch, even one inside the
  // padding whose value is never used: on a GPU it reads another buffer's
  // data, or crashes, depending on what lies there.
  void outside(const char* c, const Where& w) const {
    if (array) outside_bytes(*array, c - base, end - base, w);
    const long element = (long)((c - base) / (long)sizeof(float));
    const long size = (long)((end - base) / (long)sizeof(float));
    const long distance = element >= size ? element - size + 1 : -element;
    const bool reading = std::is_const_v<T> || name[0] != 'C';
    char what[200];
    std::snprintf(what, sizeof what, "%s %s[%ld], %ld float%s %s %s", reading ? "read" : "accessed",
                  name, element, distance, distance == 1 ? "" : "s",
                  element >= size ? "past the end of" : "before the start of", name);
    if (c < lo || c + sizeof(T) > hi)
      fault(what + at_line(w) + ", outside the memory it was given (cudaErrorIllegalAddress "
            "on a GPU)");
    note(name, what + at_line(w));
  }
  [[noreturn]] void misaligned(const Where& w) const {
    char what[200];
    std::snprintf(what, sizeof what,
                  "made a misaligned %zu-byte access to %s at an address that is not a multiple "
                  "of %zu bytes",
                  sizeof(T), name ? name : "shared or local memory", alignof(T));
    fault(what + at_line(w) + " (cudaErrorMisalignedAddress on a GPU)");
  }
};
template <class T>
ptr<T> operator+(Index i, const ptr<T>& q) { return q + i; }

// void* in a kernel: only ever converted (to an integer, to check alignment).
struct vptr {
  const volatile void* p = nullptr;
  vptr(const volatile void* raw) : p(raw) {}
  template <class U>
  vptr(const ptr<U>& o) : p(o.p) {}
};

// reinterpret_cast<...>(...) in a kernel becomes __cpu::cast<...>(...).
template <class To, class From>
To cast(const From& from, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  if constexpr (std::is_integral_v<To>) {
    if constexpr (std::is_pointer_v<From>) return (To)(uintptr_t)from;
    else return (To)(uintptr_t)from.p;
  } else if constexpr (std::is_pointer_v<From>) {
    To to((typename std::remove_reference_t<decltype(*To().p)>*)from);  // named if in A, B or C
    to.where = {file, line};
    return to;
  } else {
    To to(from);
    to.where = {file, line};
    return to;
  }
}

template <class T>
T __ldg_impl(const ptr<const T>& p) { return *p; }

// Shared memory: every __shared__ array has one copy per worker, filled with
// NaN bytes when the first thread of a block reaches its declaration, so a
// read before anyone wrote is never right by luck.
inline unsigned worker_id() { return self()->worker->id; }

inline void fresh_shared(void* memory, size_t bytes) {
  Worker& w = *self()->worker;
  for (Worker::Seen& s : w.seen) {
    if (s.memory == memory) {
      if (s.serial != w.block_serial) std::memset(memory, 0xFF, bytes), s.serial = w.block_serial;
      return;
    }
  }
  std::memset(memory, 0xFF, bytes);
  w.seen.push_back({memory, w.block_serial});
}

// Checked arrays: a __shared__ array of floats (or doubles), one per worker, and
// a thread's own array or scalar of floats (registers on a GPU) declared without
// a value. Each starts filled with NaN bits that no float a kernel computes has
// (shared memory 0xFF...FF, as other shared memory; a thread's own 0xFFC0FFEE...)
// and its elements are read through sref, which stops the launch at the first
// read of an element still holding them: no thread of the block (or the thread
// itself) has written it. Every index is checked against the array. Reads
// through a pointer (&As[i][j]) are not checked; writes through one count, since
// they replace the bits. The normal build checks shared arrays only and just
// fills a thread's own arrays with their NaN (poison_local), so that C shows where
// they were read; the diagnostic build (CPU_DIAGNOSE) checks those too, and
// watches shared arrays for races (Shadow).
struct ArrayInfo {
  const char* name = nullptr;
  int rank = 0;
  size_t dims[4] = {};
  size_t count = 1;    // elements in all
  bool local = false;  // a thread's own, not shared memory
  const char* file = nullptr;  // where a thread's own is declared
  int line = 0;
#ifdef CPU_DIAGNOSE
  // Who last wrote and read an element of a shared array, and in which round
  // between barriers (Worker::epoch): two threads' accesses to one element in the
  // same round, one of them a write, are a race.
  struct Access {
    int thread = -1;
    Where where;
    long epoch = -1;
  };
  struct Shadow {
    Access write, read;
    Access earlier_read;  // by another thread than `read`'s, in the same round, if any
  };
  Shadow* shadow = nullptr;
#endif
  template <class A>
  void describe(const char* name_, bool local_, const char* file_ = nullptr, int line_ = 0) {
    name = name_, local = local_, file = file_, line = line_, rank = (int)std::rank_v<A>;
    if constexpr (std::rank_v<A> >= 1) dims[0] = std::extent_v<A, 0>;
    if constexpr (std::rank_v<A> >= 2) dims[1] = std::extent_v<A, 1>;
    if constexpr (std::rank_v<A> >= 3) dims[2] = std::extent_v<A, 2>;
    if constexpr (std::rank_v<A> >= 4) dims[3] = std::extent_v<A, 3>;
    count = sizeof(A) / sizeof(std::remove_all_extents_t<A>);
  }
  // "As[3][5]" for the element at flat offset i.
  std::string element(size_t i) const {
    std::string index;
    size_t rest = i, stride = count;
    for (int d = 0; d < rank; ++d) {
      stride /= dims[d];
      index += "[" + std::to_string(rest / stride) + "]";
      rest %= stride;
    }
    return name + index;
  }
  std::string shape() const {
    std::string text = name;
    for (int d = 0; d < rank; ++d) text += "[" + std::to_string(dims[d]) + "]";
    return text;
  }
};

// The NaN shared memory starts with: every byte 0xFF.
template <class T>
inline T shared_poison() {
  T v;
  std::memset(&v, 0xFF, sizeof(T));
  return v;
}

// The NaN a thread's own floats start with (quiet, so arithmetic passes it on).
template <class T>
inline T local_poison() {
  if constexpr (sizeof(T) == 4) {
    const uint32_t bits = 0xFFC0FFEEu;
    T v;
    std::memcpy(&v, &bits, 4);
    return v;
  } else {
    const uint64_t bits = 0xFFF8C0FFEEC0FFEEull;
    T v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
}

template <class T>
inline bool poisoned(T v, bool local) {
  const T p = local ? local_poison<T>() : shared_poison<T>();
  return std::memcmp(&v, &p, sizeof(T)) == 0;
}

// Either NaN: one compare each on the hot path, before asking which array it is.
template <class T>
inline bool maybe_poisoned(T v) {
  const T l = local_poison<T>(), s = shared_poison<T>();
  return __builtin_expect(std::memcmp(&v, &l, sizeof(T)) == 0 || std::memcmp(&v, &s, sizeof(T)) == 0, 0);
}

// A thread's own float (or array of floats) declared without a value: filled with
// its NaN in the normal build.
template <class A>
inline void poison_local(A& a) {
  using T = std::remove_all_extents_t<A>;
  T* p = (T*)&a;
  for (size_t i = 0; i < sizeof(A) / sizeof(T); ++i) p[i] = local_poison<T>();
}

#ifdef CPU_DIAGNOSE
inline void shared_read(const ArrayInfo& info, size_t i, const Where& where, bool unwritten);
inline void shared_write(const ArrayInfo& info, size_t i, const Where& where);
#endif

template <class T>
struct sref {
  T* p;
  const T* data;  // the whole array's
  const ArrayInfo* info;
  Where where;
  CPU_HOT operator T() const {
    const T v = *p;
    const bool unwritten = maybe_poisoned(v) && info && poisoned(v, info->local);
#ifdef CPU_BUDGET
    count_access();
#endif
#ifdef CPU_DIAGNOSE
    // A shared element read before it was written may be written by another thread
    // before the next barrier (a race) or not at all: shared_read tells which.
    if (info && info->shadow && watch) return shared_read(*info, (size_t)(p - data), where, unwritten), v;
#endif
    if (unwritten) this->unwritten();
    return v;
  }
  CPU_HOT sref& operator=(T v) {
#ifdef CPU_BUDGET
    count_access();
#endif
#ifdef CPU_DIAGNOSE
    if (info && info->shadow && watch) shared_write(*info, (size_t)(p - data), where);
#endif
    *p = v;
    return *this;
  }
  sref& operator=(const sref& o) { return *this = (T)o; }
  sref& operator+=(T v) { return *this = (T)*this + v; }
  sref& operator-=(T v) { return *this = (T)*this - v; }
  sref& operator*=(T v) { return *this = (T)*this * v; }
  sref& operator/=(T v) { return *this = (T)*this / v; }
  ptr<T> operator&() const { return info ? ptr<T>(p, data, info->count, info) : ptr<T>(p); }

 private:
  [[noreturn]] void unwritten() const {
    const std::string element = info->element((size_t)(p - data));
    if (info->local)
      fault("read " + element + " before any value was stored in it" + at_line(where) + ": " +
            info->name + ", declared at " + (info->file ? info->file : "line") + ":" +
            std::to_string(info->line) + ", has no initial value");
    fault("read " + element + " before any thread of the block wrote it" + at_line(where) +
          ": a missing __syncthreads() after the loads, or a tile not fully loaded");
  }
};

[[noreturn]] inline void outside_array(const ArrayInfo& info, std::ptrdiff_t at, const Where& w) {
  const bool before = at < 0;
  fault("indexed " + (before ? std::string(info.name) : info.element((size_t)at)) +
        (before ? ", before the start of " : ", past the end of ") +
        (info.local ? "its own array " : "the shared array ") + info.shape() + " (" +
        std::to_string(info.count) + " elements)" + at_line(w) +
        (info.local ? "" : " (on a GPU it reads or corrupts other shared data)"));
}

// Byte `byte` of an array of `bytes`, reached through a pointer.
[[noreturn]] inline void outside_bytes(const ArrayInfo& info, std::ptrdiff_t byte, size_t bytes,
                                       const Where& w) {
  const std::ptrdiff_t size = (std::ptrdiff_t)(bytes / info.count);
  outside_array(info, byte < 0 ? -1 : byte / size, w);
}

template <class T, class A>  // A: the array type this view indexes, e.g. float[BK]
struct sview {
  T* data;  // the whole array's
  const ArrayInfo* info;  // nullptr: an array the runtime does not check (rows' raw)
  size_t offset;  // of this view's first element, in elements
  size_t count;   // elements in the whole array
  using Sub = std::remove_extent_t<A>;
  static constexpr size_t SUB = sizeof(Sub) / sizeof(T);
  auto operator[](Index i) const {
    // The whole array is the bound, as on a GPU: As[r][BK] is As[r + 1][0].
    // One unsigned compare: a negative index wraps past the end.
    const size_t at = offset + (size_t)i.i * SUB;
    if (__builtin_expect(at > count - SUB, 0)) outside_array(*info, offset + i.i * (std::ptrdiff_t)SUB, i.where);
    if constexpr (std::rank_v<A> == 1) return sref<T>{data + at, data, info, i.where};
    else return sview<T, Sub>{data, info, at, count};
  }
  template <class U, class = std::enable_if_t<std::is_convertible_v<T*, U*>>>
  operator ptr<U>() const {
    return info ? ptr<U>(data + offset, data, count, info) : ptr<U>(data + offset);
  }
};

template <class A>
struct shared_array {
  using T = std::remove_all_extents_t<A>;
  alignas(16) A data;
  ArrayInfo info;
  long serial = -1;
#ifdef CPU_DIAGNOSE
  ArrayInfo::Shadow shadow[sizeof(A) / sizeof(T)];
#endif
  // The view a thread uses; the first thread of each block refills the array.
  sview<T, A> fresh(const char* name) {
    Worker& w = *self()->worker;
    if (serial != w.block_serial) {
      std::memset(&data, 0xFF, sizeof data);
      info.describe<A>(name, false);
#ifdef CPU_DIAGNOSE
      info.shadow = shadow;
#endif
      serial = w.block_serial;
    }
    return sview<T, A>{(T*)&data, &info, 0, sizeof(A) / sizeof(T)};
  }
};

// A shared array the runtime does not check element by element (ints, float4s, a
// scalar): as the kernel declared it, refilled for each block.
template <class A>
struct raw_shared {
  alignas(16) A data;
  A& fresh(const char*) {
    fresh_shared(&data, sizeof data);
    return data;
  }
};

// What a `__shared__ A name;` becomes. Decided here, where a template's element type is
// known: an array of floats or doubles is checked, whatever the kernel calls its type.
template <class A, class T = std::remove_all_extents_t<A>>
using shared_of = std::conditional_t<(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
                                         std::rank_v<A> >= 1 && std::rank_v<A> <= 4,
                                     shared_array<A>, raw_shared<A>>;

// A thread's own array of floats, with every index checked against it: on the CPU an
// index past its end would overwrite the thread's other values (on a GPU, it reads or
// writes other local data). Element access is a plain reference, as fast as the
// array's own. view() is what the kernel's code sees under the array's name.
template <class T, class A>
struct bview {
  T* data;  // the whole array's
  const ArrayInfo* info;
  size_t offset;  // of this view's first element
  size_t count;   // elements in the whole array
  using Sub = std::remove_extent_t<A>;
  static constexpr size_t SUB = sizeof(Sub) / sizeof(T);
  CPU_HOT decltype(auto) operator[](Index i) const {
    const size_t at = offset + (size_t)i.i * SUB;
    if (__builtin_expect(at > count - SUB, 0))
      outside_array(*info, (std::ptrdiff_t)offset + i.i * (std::ptrdiff_t)SUB, i.where);
    if constexpr (std::rank_v<A> == 1) return static_cast<T&>(data[at]);
    else return bview<T, Sub>{data, info, at, count};
  }
  // As the array decays to a pointer, when passed to a function.
  template <class U, class = std::enable_if_t<std::is_convertible_v<T*, U*>>>
  operator ptr<U>() const { return ptr<U>(data + offset, data, count, info); }
};

// A GPU thread's local memory holds 512 KB at most (a GPU refuses to launch more); a
// CUDA thread here runs on a fiber stack of STACK_BYTES, which an array past a quarter of
// it would run off (the process died of SIGSEGV, naming nothing). cpu.py reads these words.
template <class A>
constexpr bool fits_a_thread() {
  static_assert(sizeof(A) <= 512 * 1024, "__cpu: a thread's own array over 512 KB");
  static_assert(sizeof(A) <= STACK_BYTES / 4, "__cpu: a thread's own array over 32 KB");
  return true;
}

template <class A>
struct bounded {
  static_assert(fits_a_thread<A>());
  using T = std::remove_all_extents_t<A>;
  alignas(16) A data;
  ArrayInfo info;
  bounded(const char* name, const char* file, int line) {  // no value: NaN until written
    poison_local(data);
    info.describe<A>(name, true, file, line);
  }
  bounded(const char* name, const char* file, int line, const A& value) {
    std::memcpy(&data, &value, sizeof(A));
    info.describe<A>(name, true, file, line);
  }
  // A list with its inner braces left out (`float acc[8][8] = {0.f};`), which C++
  // allows only where it initializes the array itself: the values in order, then zeros.
  bounded(const char* name, const char* file, int line, std::initializer_list<T> values) {
    std::memset(&data, 0, sizeof(A));
    std::copy_n(values.begin(), std::min(values.size(), sizeof(A) / sizeof(T)), (T*)&data);
    info.describe<A>(name, true, file, line);
  }
  bounded(const bounded&) = delete;
  bview<T, A> view() { return bview<T, A>{(T*)&data, &info, 0, sizeof(A) / sizeof(T)}; }
};

// A function's parameter declared as an array of arrays (`float As[BM][BK]`), which C++
// reads as a pointer to rows: indexed as the array passed to it, checked against that
// array's whole extent when the runtime checks it (a shared array of floats, a thread's
// own), unchecked otherwise. A parameter of one dimension is a ptr.
template <class A, class T = std::remove_all_extents_t<A>>
struct rows : sview<T, A> {
  using Row = std::remove_extent_t<A>;
  template <class U, class B,
            class = std::enable_if_t<std::is_same_v<std::remove_cv_t<std::remove_extent_t<B>>,
                                                    std::remove_cv_t<Row>>>>
  rows(const sview<U, B>& v) : sview<T, A>{v.data, v.info, v.offset, v.count} {}
  template <class U, class B,
            class = std::enable_if_t<std::is_same_v<std::remove_cv_t<std::remove_extent_t<B>>,
                                                    std::remove_cv_t<Row>>>>
  rows(const bview<U, B>& v) : sview<T, A>{v.data, v.info, v.offset, v.count} {}
  rows(Row* raw) : sview<T, A>{(T*)raw, nullptr, 0, SIZE_MAX / 2} {}
};

#ifdef CPU_DIAGNOSE
// A thread's own array of floats declared without a value (diagnostic build).
template <class A>
struct local_array {
  static_assert(fits_a_thread<A>());
  using T = std::remove_all_extents_t<A>;
  alignas(16) A data;
  ArrayInfo info;
  local_array(const char* name, const char* file, int line) {
    poison_local(data);
    info.describe<A>(name, true, file, line);
  }
  local_array(const local_array&) = delete;
  sview<T, A> view() { return sview<T, A>{(T*)&data, &info, 0, sizeof(A) / sizeof(T)}; }
};

// A thread's own float declared without a value (diagnostic build).
template <class T>
struct local_scalar {
  T value = local_poison<T>();
  ArrayInfo info;
  local_scalar(const char* name, const char* file, int line) {
    info.describe<T[1]>(name, true, file, line), info.rank = 0;
  }
  sref<T> ref(Where w = {__builtin_FILE(), __builtin_LINE()}) { return sref<T>{&value, &value, &info, w}; }
  operator T() const { return (T)sref<T>{(T*)&value, &value, &info, {}}; }
  local_scalar& operator=(T v) { value = v; return *this; }
  local_scalar& operator+=(T v) { return *this = (T)*this + v; }
  local_scalar& operator-=(T v) { return *this = (T)*this - v; }
  local_scalar& operator*=(T v) { return *this = (T)*this * v; }
  local_scalar& operator/=(T v) { return *this = (T)*this / v; }
  ptr<T> operator&() { return ptr<T>(&value); }
};
#endif

#ifdef CPU_BUDGET
CPU_HOT inline void count_access() {
  if (__builtin_expect(++self()->accesses > budget, 0) && budget)
    fault("ran far longer than the kernel as written (an endless loop?)");
}
// A turn of a loop, which counts as an access (autograder/judge/localize.py puts one in
// every loop's condition: a loop may go round for ever without touching memory).
CPU_HOT inline bool turn() {
  count_access();
  return true;
}
#endif

#ifdef CPU_DIAGNOSE
// "thread (3, 0, 0)" of the block, for another thread's access.
inline std::string thread_named(int linear) {
  char text[48];
  std::snprintf(text, sizeof text, "thread (%u, %u, %u)", linear % block.x,
                linear / block.x % block.y, linear / (block.x * block.y));
  return text;
}

// The current thread did `mine` (read or wrote) to element i at `where`; another
// thread did `theirs` to it since the last barrier.
[[noreturn]] inline void race(const char* mine, const ArrayInfo& info, size_t i,
                              const Where& where, const char* theirs,
                              const ArrayInfo::Access& other) {
  const Where& w = other.where;
  fault(std::string(mine) + " " + info.element(i) + at_line(where) + ", which " +
        thread_named(other.thread) + " " + theirs + (w.file ? std::string(" at ") + w.file + ":" +
        std::to_string(w.line) : std::string()) +
        " with no __syncthreads() between them: a race (on a GPU either may come first)");
}

inline void shared_read(const ArrayInfo& info, size_t i, const Where& where, bool unwritten) {
  Thread* t = self();
  Diagnostics& w = diagnostics[t->worker->id];
  ArrayInfo::Shadow& s = info.shadow[i];
  const int me = (int)t->linear;
  if (s.write.epoch == w.epoch && s.write.thread != me) race("read", info, i, where, "wrote", s.write);
  if (s.read.epoch == w.epoch && s.read.thread != me) s.earlier_read = s.read;
  s.read = {me, where, w.epoch};
  if (unwritten && w.unwritten_read.empty())
    w.unwritten_read = who(t) + " read " + info.element(i) + " before any thread of the block "
                       "wrote it" + at_line(where) + ", and no thread writes it before the next "
                       "__syncthreads(): the tile is not fully loaded";
}

inline void shared_write(const ArrayInfo& info, size_t i, const Where& where) {
  Thread* t = self();
  Diagnostics& w = diagnostics[t->worker->id];
  ArrayInfo::Shadow& s = info.shadow[i];
  const int me = (int)t->linear;
  if (s.read.epoch == w.epoch && s.read.thread != me) race("wrote", info, i, where, "read", s.read);
  if (s.earlier_read.epoch == w.epoch && s.earlier_read.thread != me)
    race("wrote", info, i, where, "read", s.earlier_read);
  s.write = {me, where, w.epoch};
}

#endif

#ifdef CPU_VARIANTS
// A thread's own floats set to zero: the repair that gives a value to what was
// declared without one (autograder/judge/edits.py, "add initial value").
template <class T, class A>
inline void zero(const bview<T, A>& v) {
  for (size_t i = 0; i < v.count; ++i) v.data[i] = T(0);
}
template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
inline void zero(T& v) { v = T(0); }
#endif

// printf in a kernel: checked shared elements and pointers are passed as the
// float and the address they stand for (the runtime's own calls are std::printf).
template <class T>
const T& printable(const T& v) { return v; }
template <class T>
T printable(const sref<T>& r) { return (T)r; }
template <class T>
T* printable(const ptr<T>& q) { return q.p; }
#ifdef CPU_DIAGNOSE
template <class T>
T printable(const local_scalar<T>& v) { return (T)v; }
#endif
template <class... Args>
int print(const char* format, const Args&... args) {
  return std::printf(format, printable(args)...);
}

template <class T>
ptr<T> dynamic_shared() {
  constexpr size_t BYTES = 48 * 1024;
  alignas(16) static char memory[MAX_WORKERS][BYTES];
  char* mine = memory[worker_id()];
  fresh_shared(mine, BYTES);
  return ptr<T>((T*)mine, BYTES / sizeof(T), (T*)mine, BYTES / sizeof(T), "dynamic shared memory");
}

// A thread gives way to the next one at a barrier: the block's ...
inline void barrier() {
  Thread* t = self();
  t->barrier_id = 0;
  switch_to(t->context, t->worker->scheduler);
}

// ... or barrier `id` of `count` threads (PTX's bar.sync id, count), which the
// threads of a part of the block pass without the rest (run_blocks) ...
inline void named_barrier(unsigned id, unsigned count) {
  Thread* t = self();
  t->barrier_id = id, t->waits_for = count;
  switch_to(t->context, t->worker->scheduler);
}

// ... or its warp's (__syncwarp, whose mask is taken to be the whole warp): the
// warp's threads that have not exited go on once all of them wait there.
constexpr unsigned WARP_BARRIER = ~0u;
inline void warp_barrier() { named_barrier(WARP_BARRIER, 0); }

// Which threads go on in the next round. Where no thread waits at a named
// barrier or its warp's, all of them, as every round did before there were
// any. Else those at named barrier i once `waits_for` threads wait there,
// those at a warp's once every live thread of the warp does, and those at the
// block's barrier only once nobody waits at another: it holds every thread of
// the block, as on a GPU.
inline void released(const std::vector<Thread>& threads, std::vector<bool>& go) {
  constexpr unsigned IDS = 16, WARPS = 32;  // a block has 16 barriers, 1024 threads
  unsigned waiting[IDS] = {}, live[WARPS] = {}, at_warp[WARPS] = {};
  for (const Thread& t : threads) {
    if (t.done) continue;
    ++live[t.linear / 32 % WARPS];
    if (t.barrier_id == WARP_BARRIER) {
      ++at_warp[t.linear / 32 % WARPS];
    } else if (t.barrier_id) {
      ++waiting[t.barrier_id % IDS];
    }
  }
  const auto some = [](const unsigned* n, const unsigned* end) {
    return std::any_of(n, end, [](unsigned k) { return k; });
  };
  const bool held = some(waiting + 1, waiting + IDS) || some(at_warp, at_warp + WARPS);
  for (size_t i = 0; i < threads.size(); ++i) {
    const Thread& t = threads[i];
    const unsigned warp = t.linear / 32 % WARPS;
    go[i] = !t.done && (t.barrier_id == WARP_BARRIER ? at_warp[warp] == live[warp]
                        : t.barrier_id                ? waiting[t.barrier_id % IDS] >= t.waits_for
                                                      : !held);
  }
}

inline void thread_main() {
  for (;;) {  // one pass per block: the fiber is reused for the next block
    kernel();
    self()->done = true;
    barrier();
  }
}

inline std::atomic<long> block_serials{0};  // over all launches: see Worker::block_serial

// Fiber stacks, per worker, kept from one launch to the next: allocating and first
// touching 128 KiB for each thread of a block took longer than running a small case.
// One mapping a worker, of the exact size (aligned allocations of 128 KiB each took
// twice that, and a process may hold several libraries, each its own pool, under a
// memory limit); its pages are touched only as the threads use them.
struct StackPool {
  char* mapping = nullptr;
  size_t bytes = 0;
  char* first = nullptr;  // the first stack, aligned to STACK_BYTES
  unsigned count = 0;
};
inline StackPool stack_pool[MAX_WORKERS];

// Gives this library's stacks back, between launches: autograder/run/cpu.py asks the
// libraries launched longest ago, where all of a process's together keep too many.
extern "C" CPU_EXPORT void cpu_release_stacks() {
  for (StackPool& pool : stack_pool) {
    if (pool.mapping) munmap(pool.mapping, pool.bytes);
    pool = {};
  }
}

// The first of n stacks for worker, one after another; nullptr when out of memory.
inline char* stacks_for(unsigned worker, unsigned n) {
  StackPool& pool = stack_pool[worker];
  if (pool.count < n) {
    if (pool.mapping) munmap(pool.mapping, pool.bytes);
    pool = {};
    const size_t bytes = (size_t)(n + 1) * STACK_BYTES;
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) return nullptr;
    const uintptr_t aligned = ((uintptr_t)m + STACK_BYTES - 1) & ~(uintptr_t)(STACK_BYTES - 1);
    pool = {(char*)m, bytes, (char*)aligned, n};
  }
  return pool.first;
}

// Runs one worker's share of the blocks: block id, id + workers, ...
inline void run_blocks(unsigned id, unsigned workers, bool reverse) {
  Worker w;
  w.id = id;
  const unsigned n = block.x * block.y * block.z;
  std::vector<Thread> threads(n);
  char* stacks = stacks_for(id, n);
  if (!stacks) {  // out of memory: no thread of this worker runs
    std::lock_guard<std::mutex> hold(report_lock);
    error = "the CPU backend ran out of memory for the stacks of " + std::to_string(n) +
            " threads a block";
    stopped = true, error_block = -1;
    return;
  }
  for (unsigned i = 0; i < n; ++i) {
    Thread& t = threads[i];
    t.worker = &w;
    t.stack = stacks + (size_t)i * STACK_BYTES;
    *(Thread**)t.stack = &t;  // what self() finds
    // Stacks are aligned to their size, so their tops would all fall in the
    // same cache sets; a different number of cache lines cut off each one
    // spreads the hot top frames over the cache.
    const size_t skew = 64 * (i * 37 % 512);
    make_context(t.context, t.stack + 64, STACK_BYTES - 64 - skew, thread_main);
  }
  if (_setjmp(w.abort_launch)) return;
  long blocks = (long)grid.x * grid.y * grid.z;
#ifdef CPU_BUDGET
  if (first_blocks) blocks = std::min(blocks, first_blocks);
#endif
  for (long b = id; b < blocks; b += workers) {
    if (stopped) {  // a lower block may fail too: the message names the lowest
      std::lock_guard<std::mutex> hold(report_lock);
      if (b > error_block) break;
    }
    w.block_idx = {unsigned(b % grid.x), unsigned(b / grid.x % grid.y),
                   unsigned(b / ((long)grid.x * grid.y))};
    w.block_serial = ++block_serials;
#ifdef CPU_DIAGNOSE
    Diagnostics& d = diagnostics[id];
    d.unwritten_read.clear();
#endif
    for (unsigned i = 0; i < n; ++i) {
      threads[i].done = false;
      threads[i].barrier_id = 0;
      threads[i].accesses = 0;
      threads[i].linear = i;
      threads[i].idx = {i % block.x, i / block.x % block.y, i / (block.x * block.y)};
    }
    // Between two barriers the threads run one after another, all in the
    // same order; `reverse` flips it, so that a race changes the result
    // from one launch to the next as it would on a GPU.
    std::vector<bool> go(n);
    for (bool waiting = true; waiting;) {
      waiting = false;
#ifdef CPU_DIAGNOSE
      if (!d.unwritten_read.empty()) stop(w, d.unwritten_read);  // nobody wrote it all round
      ++d.epoch;
#endif
      released(threads, go);
      bool ran = false;
      for (unsigned k = 0; k < n; ++k) {
        const unsigned i = reverse ? n - 1 - k : k;
        Thread& t = threads[i];
        if (t.done) continue;
        if (go[i]) switch_to(w.scheduler, t.context), ran = true;
        waiting |= !t.done;
      }
      if (waiting && !ran) {  // named or warp barriers that too few threads reach
        const Thread& t = *std::find_if(threads.begin(), threads.end(),
                                        [](const Thread& t) { return !t.done && t.barrier_id; });
        stop(w, who(&t) +
                    (t.barrier_id == WARP_BARRIER
                         ? " waits at __syncwarp() for threads of its warp that wait at another "
                           "barrier: on a GPU the kernel hangs"
                         : " waits at barrier " + std::to_string(t.barrier_id) + " for " +
                               std::to_string(t.waits_for) +
                               " threads, which fewer reach: on a GPU the kernel hangs"));
      }
    }
#ifdef CPU_DIAGNOSE
    if (!d.unwritten_read.empty()) stop(w, d.unwritten_read);
#endif
#ifdef CPU_BUDGET
    long most = 0;
    for (const Thread& t : threads) most = std::max(most, t.accesses);
    for (long seen = most_accesses; most > seen;)
      if (most_accesses.compare_exchange_weak(seen, most)) break;
#endif
  }
}

// A division by zero (or any other operation the compiler made a trap of, being
// undefined), or an access to memory the process does not have, made by a kernel
// thread: the launch fails with the thread and what it did (on a GPU the first gives
// an undefined value, the second cudaErrorIllegalAddress). Anything else, the
// runtime's own code included, crashes the process as it would have.
inline bool on_a_thread_stack(const void* p) {
  for (const StackPool& pool : stack_pool)
    if (p >= pool.first && p < pool.first + (size_t)pool.count * STACK_BYTES) return true;
  return false;
}
inline void on_crash(int signal, siginfo_t*, void*) {
  char probe;
  if (!on_a_thread_stack(&probe)) {
    std::signal(signal, SIG_DFL);
    return;  // the instruction runs again, and the process dies of it
  }
  fault(signal == SIGFPE   ? "divided an integer by zero (on a GPU the result is undefined)"
        : signal == SIGILL ? "did something whose result C++ leaves undefined (most often a "
                             "division by a constant 0, or a shift by too many bits)"
                           : "made an access outside any memory it was given, through a raw "
                             "pointer (cudaErrorIllegalAddress on a GPU)");
}
inline void catch_crashes() {
  static bool installed = false;
  if (installed) return;
  struct sigaction action = {};
  action.sa_sigaction = on_crash;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;  // left by longjmp: the signal stays unblocked
  sigaction(SIGFPE, &action, nullptr);
  sigaction(SIGSEGV, &action, nullptr);
  sigaction(SIGBUS, &action, nullptr);
  sigaction(SIGILL, &action, nullptr);
  installed = true;
}

// The CPU time the last launch's busiest worker took: about what the launch takes on
// the clock on an idle machine, and no more on a busy one, where the clock also counts
// the time other work had the CPUs (a case's time is this: autograder/run/cpu.py).
inline std::atomic<long> busiest_ns{0};
extern "C" CPU_EXPORT double cpu_launch_seconds() { return busiest_ns / 1e9; }

inline void run_blocks_timed(unsigned id, unsigned workers, bool reverse) {
  timespec start, end;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  run_blocks(id, workers, reverse);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
  const long ns = (end.tv_sec - start.tv_sec) * 1000000000L + (end.tv_nsec - start.tv_nsec);
  for (long seen = busiest_ns; ns > seen && !busiest_ns.compare_exchange_weak(seen, ns);) {
  }
}

// Runs body as every thread of every block. Returns 0, or 1 with why the launch
// stopped in message_out; accesses outside A, B or C that all stayed inside the
// padding stop it too, after the launch, each matrix's first named.
inline int launch(dim3 grid_, dim3 block_, bool reverse, unsigned workers,
                  std::function<void()> body, char* message_out, int message_size) {
  catch_crashes();
  grid = grid_, block = block_, kernel = std::move(body);
  stopped = false, error.clear(), notes.clear();
#ifdef CPU_BUDGET
  most_accesses = 0;
#endif
  const long blocks = (long)grid.x * grid.y * grid.z;
  workers = (unsigned)std::max(1L, std::min<long>({(long)workers, (long)MAX_WORKERS, blocks}));
  busiest_ns = 0;
  std::vector<std::thread> helpers;
  for (unsigned w = 1; w < workers; ++w)
    helpers.emplace_back(run_blocks_timed, w, workers, reverse);
  run_blocks_timed(0, workers, reverse);
  for (std::thread& h : helpers) h.join();
  if (!stopped && !notes.empty()) {  // accesses outside A, B or C, all inside the padding
    std::sort(notes.begin(), notes.end(),
              [](const Note& a, const Note& b) { return a.matrix[0] < b.matrix[0]; });
    bool inputs = false, output = false;
    std::string inputs_named;
    for (const Note& n : notes) {
      error += (error.empty() ? "" : "; ") + n.text;
      if (n.matrix[0] == 'C') output = true;
      else inputs_named += (inputs ? " and " : "") + std::string(n.matrix), inputs = true;
    }
    error += std::string(": the kernel ") + (inputs ? "read outside " + inputs_named : "") +
             (inputs && output ? " and " : "") + (output ? "accessed memory outside C" : "") +
             ", which fails even where the value is never used (on a GPU such an access "
             "reads or corrupts other data, or crashes)";
    stopped = true;
  }
  std::snprintf(message_out, message_size, "%s", error.c_str());
  return stopped ? 1 : 0;
}

}  // namespace __cpu

#define threadIdx (__cpu::self()->idx)
#define blockIdx (__cpu::self()->worker->block_idx)
#define blockDim (__cpu::block)
#define gridDim (__cpu::grid)
#define __syncthreads() __cpu::barrier()
#define __barrier_sync_count(id, count) __cpu::named_barrier(id, count)
#define __syncwarp(...) __cpu::warp_barrier()
#define __ldg(p)                                                                            \
  __cpu::__ldg_impl(__cpu::cast<__cpu::ptr<const std::remove_cv_t<std::remove_reference_t<decltype(*(p))>>>>(p))
// NVRTC accepts assert() without an include; here a failed one stops the
// launch with the thread, the block and the learner's line.
#define assert(e) \
  ((e) ? (void)0 : __cpu::fault("failed assert(" #e "), at " __FILE__ ":" + std::to_string(__LINE__)))
#define printf(...) __cpu::print(__VA_ARGS__)

// Shared device helpers for every dbsparse template. NVRTC sees this through the embedded headers.
#pragma once

namespace dbs {

// Programmatic dependent launch (sm_90 and later). A kernel that a plan may launch with the
// programmatic-serialization attribute calls dbs_pdl_wait() before it touches memory an earlier
// kernel of the stream writes or reads (it returns once those grids have finished and their
// writes are visible; without the attribute it returns at once), then dbs_pdl_trigger() so that
// the next kernel's launch overlaps this one's run. Both are no-ops before sm_90. Why on by
// default for SpMSpV: docs/decisions/spmspv-pdl.md.
__device__ __forceinline__ void dbs_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void dbs_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// An enumerator, not a constexpr variable: NVRTC emits a namespace-scope constant as an internal
// symbol named with a per-compilation random id, which made every cubin including this header differ
// from a rebuild of itself (the kernel cache test compares them).
enum : unsigned { kFull = 0xffffffffu };

// A warp walking the entries of up to 32 lists at once, lane l holding list l's length n: the
// exclusive prefix of n over the lanes (and the total), then, for flattened entry e, the lane that
// owns it: the last lane whose first entry is <= e (empty lanes never are), by a binary search over
// the prefixes held in the lanes (5 shuffles). Consecutive lanes then read consecutive entries.
__device__ __forceinline__ int warp_exclusive_prefix(int n, int lane, int& total) {
  int pre = n;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int t = __shfl_up_sync(kFull, pre, o);
    if (lane >= o) pre += t;
  }
  total = __shfl_sync(kFull, pre, 31);
  return pre - n;
}
__device__ __forceinline__ int owner_lane(int pre, int e) {
  int o = 0;
#pragma unroll
  for (int step = 16; step; step >>= 1) {
    const int cand = __shfl_sync(kFull, pre, o + step);
    if (cand <= e) o += step;
  }
  return o;
}

// Read-only loads through the non-coherent path; x is gathered at random and never written here.
template <typename T>
__device__ __forceinline__ T load_ro(const T* p) {
  return __ldg(p);
}

// y = alpha*acc + beta*y, where beta == 0 means y is not read (it may hold NaN).
template <typename T>
__device__ __forceinline__ void axpby_store(T* y, T acc, T alpha, T beta) {
  *y = beta == T(0) ? alpha * acc : alpha * acc + beta * *y;
}

// Partial dot product of CSR entries j, j + STRIDE, ... (< end) with x. Four entries per step,
// all their index and value loads issued before any x gather: SpMV is latency-bound unless each
// thread keeps several loads in flight (docs/decisions/kernels-loads-in-flight.md).
// In f32, four accumulators (one per slot) also shorten each serial sum four times (a very long
// row summed by one thread with one accumulator loses accuracy); in f64 they cost 16
// registers (32 -> 48, occupancy 100% -> 62%) and 20-40% of the time, for precision not needed.
// O: the entry index, int or long long (a plan with 64-bit row offsets, past 2^31 entries).
template <typename T, int STRIDE, typename O>
__device__ __forceinline__ T strided_dot(O j, O end, const int* __restrict__ col_idx, const T* __restrict__ vals,
                                         const T* __restrict__ x) {
  constexpr int kAcc = sizeof(T) == 4 ? 4 : 1;
  T acc[4] = {T(0), T(0), T(0), T(0)};
  for (; j < end; j += 4 * STRIDE) {
    int c[4];
    T v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const O k = j + (O)(u * STRIDE);
      c[u] = k < end ? col_idx[k] : -1;
      v[u] = k < end ? vals[k] : T(0);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (c[u] >= 0) acc[u % kAcc] += v[u] * load_ro(x + c[u]);
  }
  return kAcc == 4 ? (acc[0] + acc[1]) + (acc[2] + acc[3]) : acc[0];
}

// All blocks co-resident (cooperative launch): wait until every block has arrived. One atomic a
// block on a 64-bit count that only grows: barrier k of a launch is over once the count reaches
// k * gridDim.x past where the launch began, so an arrival knows its target from the value its own
// atomic returns and no generation word has to be read first or bumped last (two dependent L2 round
// trips fewer than a sense-reversing barrier: a BFS level on a 2048^2 grid is mostly such trips).
// Every launch on one count must use the same grid and run its barriers to the end (a 64-bit count
// does not wrap). The release on the arrival and the acquire on the poll order the block's writes
// before it and the others' writes after it; the __syncthreads() on each side extend that to the
// whole block (the memory model's causality order runs through bar.sync).
__device__ __forceinline__ void grid_barrier(unsigned long long* count) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long old, now;
    asm volatile("atom.add.release.gpu.u64 %0, [%1], 1;" : "=l"(old) : "l"(count) : "memory");
    const unsigned long long target = old - old % gridDim.x + gridDim.x;
    do {
      asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(now) : "l"(count) : "memory");
    } while (now < target);
  }
  __syncthreads();
}

}  // namespace dbs

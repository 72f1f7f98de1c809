// Triangle counting as the masked product C<L> = L·L summed (include/dbsparse/triangles.hpp): L is the
// strictly lower triangle of a graph's CSR A (rows sorted), so L(i, :) is the prefix of row i below
// column i and no L is built. For each entry (i, k) of L, C(i, j) over the mask j in L(i, :) counts
// the j in L(k, :) ∩ L(i, :); since j < k, only the prefix of row i before k can match. The products
// are those of L·L, but each is a lookup (a binary search in row i's prefix), nothing is inserted
// and nothing is written: what a general SpGEMM followed by a mask spends on C is never spent.
//
// Work is dealt by entries of A, 32 consecutive ones a warp: each lane finds its entry's row by a
// binary search narrowed to the warp's rows, checks that the row is sorted there (a masked product
// on unsorted rows would count wrongly, silently), and takes the entry when it lies in L. Rows k
// with at most kShort entries are walked by their lane alone; longer ones by the whole warp, one
// such entry after another, so a hub's row does not serialise on one lane.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/abi_types.h"

namespace dbs {

constexpr int kTriShort = 32;

// The last r in [lo, hi] with ptr[r] <= p (ptr non-decreasing, ptr[lo] <= p).
__device__ __forceinline__ int tri_row_of(const int32_t* __restrict__ ptr, int lo, int hi, long long p) {
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if ((long long)ptr[mid] <= p)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// Whether col occurs in col_idx[lo, hi) (sorted).
__device__ __forceinline__ bool tri_contains(const int32_t* __restrict__ col_idx, int lo, int hi, int col) {
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    const int c = __ldg(col_idx + mid);
    if (c == col) return true;
    if (c < col)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

// *total += the triangles; *bad_row = the smallest row seen unsorted, repeated or with a column
// outside [0, n) (INT_MAX on entry). Grid-stride over tiles of 32 entries.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    tri_count(const int32_t* __restrict__ row_ptr, const int32_t* __restrict__ col_idx, int n, long long nnz,
              unsigned long long* total, int* bad_row) {
  const unsigned lane = threadIdx.x & 31u;
  const long long warps = (long long)gridDim.x * (BLOCK / 32);
  unsigned long long count = 0;
  for (long long w = (long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32; w * 32 < nnz; w += warps) {
    const long long base = w * 32, last = min(base + 31, nnz - 1);
    // The warp's rows: [r0, r1], found once by two lanes.
    int r = 0;
    if (lane == 0) r = tri_row_of(row_ptr, 0, n - 1, base);
    if (lane == 1) r = tri_row_of(row_ptr, 0, n - 1, last);
    const int r0 = __shfl_sync(0xffffffffu, r, 0), r1 = __shfl_sync(0xffffffffu, r, 1);
    const long long p = base + lane;
    const bool valid = p < nnz;
    int i = 0, k = 0, rs = 0;
    bool lower = false;
    if (valid) {
      i = tri_row_of(row_ptr, r0, r1, p);
      rs = row_ptr[i];
      k = col_idx[p];
      const bool ordered = p == rs || col_idx[p - 1] < k;
      if (k < 0 || k >= n || !ordered)
        atomicMin(bad_row, i);
      else
        lower = k < i;
    }
    int ks = 0, ke = 0;
    if (lower) {
      ks = row_ptr[k];
      ke = row_ptr[k + 1];
    }
    const bool longrow = lower && ke - ks > kTriShort;
    if (lower && !longrow)
      for (int q = ks; q < ke; ++q) {
        const int j = __ldg(col_idx + q);
        if (j >= k) break;  // L(k, :) ends (rows sorted)
        count += tri_contains(col_idx, rs, (int)p, j);
      }
    // Long rows k: the warp walks each in turn, 32 entries at a time.
    for (unsigned todo = __ballot_sync(0xffffffffu, longrow); todo; todo &= todo - 1) {
      const int src = __ffs(todo) - 1;
      const int kk = __shfl_sync(0xffffffffu, k, src), s = __shfl_sync(0xffffffffu, ks, src),
                e = __shfl_sync(0xffffffffu, ke, src), lo = __shfl_sync(0xffffffffu, rs, src);
      const int hi = (int)(base + src);
      for (int q0 = s; q0 < e; q0 += 32) {
        const int q = q0 + (int)lane;
        const int j = q < e ? __ldg(col_idx + q) : kk;
        if (j < kk) count += tri_contains(col_idx, lo, hi, j);
        if (__any_sync(0xffffffffu, j >= kk)) break;  // past L(kk, :) on some lane: the rest are too
      }
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) count += __shfl_xor_sync(0xffffffffu, count, o);
  if (lane == 0 && count) atomicAdd(total, count);
}

// The mask of the SpGEMM-then-mask pipeline this is compared with (the baseline's second step, on
// another library's C = L·L): *total += sum of C(i, j) over j in L(i, :), a warp per row of C
// (C's rows need not be sorted; L's must be). Sums in double: C's values count paths exactly.
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    tri_mask_sum(const int32_t* __restrict__ c_ptr, const int32_t* __restrict__ c_col, const T* __restrict__ c_val,
                 const int32_t* __restrict__ l_ptr, const int32_t* __restrict__ l_col, int n, double* total) {
  double sum = 0;
  const int lane = threadIdx.x & 31;
  for (int i = (int)((blockIdx.x * BLOCK + threadIdx.x) >> 5); i < n; i += (int)(gridDim.x * (BLOCK / 32))) {
    const int ls = l_ptr[i], le = l_ptr[i + 1];
    if (ls == le) continue;
    for (int p = c_ptr[i] + lane; p < c_ptr[i + 1]; p += 32)
      if (tri_contains(l_col, ls, le, c_col[p])) sum += (double)c_val[p];
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0 && sum != 0) atomicAdd(total, sum);
}

}  // namespace dbs

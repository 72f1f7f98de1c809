// Hash SpGEMM's kernels (include/dbsparse/spgemm.hpp lists the phases; runtime/spgemm_hash_cpu.cpp
// is their executable spec): C = A·B row by row, each row of C built in an open-addressing hash
// table (abi/spgemm.h: first slot (uint32(key) * 107) & (slots - 1), linear probing, empty = -1,
// claimed by atomicCAS). Tables of groups 0-2 live in dynamic shared memory (the plan sets the
// opt-in limit); group 3 and the rows that overflow their shared table use a region of one global
// array of slots (abi::SpgemmTable per row of the global list, placed by spgemm_scatter_rows in
// templates/spgemm_analysis.cuh; sizes are powers of two).
//
// Thread mapping (TPR threads per row): TPR <= 32, partial warp per row (group 0): a row's lanes
// take its A nonzeros round-robin and walk each one's B row alone. TPR > 32, block per row: warps
// take A's nonzeros, the lanes of a warp the nonzeros of B's row.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/abi_types.h"
#include "dbsparse/abi/spgemm.h"

namespace dbs {

__device__ __forceinline__ unsigned spgemm_first(int key, unsigned mask) {
  return ((unsigned)key * dbsparse::abi::kSpgemmHashMultiplier) & mask;
}

// The slot that holds `key` after the call, or -1 when every slot holds another key (the row has
// more distinct keys than slots). *claimed: this call took an empty slot. A lost CAS to the same
// key uses that slot; to another key probes on, so the keys a row ends with do not depend on order.
__device__ __forceinline__ long long spgemm_insert(int* keys, unsigned mask, int key, bool* claimed) {
  unsigned s = spgemm_first(key, mask);
  *claimed = false;
  for (unsigned step = 0;; ++step) {
    const int k = ((volatile int*)keys)[s];
    if (k == key) return s;
    if (k == dbsparse::abi::kSpgemmEmptyKey) {
      const int old = atomicCAS(keys + s, dbsparse::abi::kSpgemmEmptyKey, key);
      if (old == dbsparse::abi::kSpgemmEmptyKey) {
        *claimed = true;
        return s;
      }
      if (old == key) return s;
    }
    if (step == mask) return -1;
    s = (s + 1u) & mask;
  }
}

// f(col, a value, b value) for the products of row i, split over the row's threads (t of TPR).
template <int TPR, typename V, typename F>
__device__ __forceinline__ void spgemm_products(int i, int t, const int32_t* __restrict__ a_ptr,
                                                const int32_t* __restrict__ a_col, const V* __restrict__ a_val,
                                                const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col,
                                                const V* __restrict__ b_val, int* stop, F f) {
  const int outer = TPR <= 32 ? t : t >> 5, outer_step = TPR <= 32 ? TPR : TPR >> 5;
  const int inner = TPR <= 32 ? 0 : (t & 31), inner_step = TPR <= 32 ? 1 : 32;
  for (int p = a_ptr[i] + outer; p < a_ptr[i + 1]; p += outer_step) {
    // The row's full flag, set by any of its threads: read and written atomically (a plain read
    // was a benign race, but one racecheck reports).
    if (stop && atomicOr(stop, 0)) return;
    const int k = a_col[p];
    const V av = a_val ? a_val[p] : V(0);
    for (int q = b_ptr[k] + inner; q < b_ptr[k + 1]; q += inner_step) f(b_col[q], av, b_val ? b_val[q] : V(0));
  }
}

// Bitonic sort of n (a power of two) (key, value) pairs by key as unsigned, so the empty key (-1)
// goes last and a row's n distinct keys end up sorted at the front. t of NT threads; every thread
// of the block calls it the same number of times (block-wide barriers).
template <typename V>
__device__ void spgemm_bitonic(int* keys, V* vals, unsigned n, unsigned t, unsigned nt) {
  for (unsigned k = 2; k <= n; k <<= 1)
    for (unsigned j = k >> 1; j > 0; j >>= 1) {
      for (unsigned i = t; i < n; i += nt) {
        const unsigned l = i ^ j;
        if (l > i) {
          const unsigned x = (unsigned)keys[i], y = (unsigned)keys[l];
          if ((x > y) == ((i & k) == 0)) {
            keys[i] = (int)y;
            keys[l] = (int)x;
            if (vals) {
              const V v = vals[i];
              vals[i] = vals[l];
              vals[l] = v;
            }
          }
        }
      }
      __syncthreads();
    }
}

// One row's table (keys and values, `slots` of them, `len` distinct keys) sorted into C's row at
// `begin` by the row's whole block: the occupied slots are first copied, unsorted, into C's row,
// read back to the table's front, and only the next power of two >= len is sorted. Why: sorting
// every slot (8192 in group 2, 1024 in group 1, most of them empty) made the numeric phase 2-8x
// cuSPARSE's whole product on the H200 (2026-11-30). counter: zero on entry.
template <typename V>
__device__ void spgemm_sort_row(int* table, V* tv, unsigned slots, int len, int begin, int32_t* c_col, V* c_val,
                                unsigned t, unsigned nt, unsigned* counter) {
  for (unsigned s = t; s < slots; s += nt) {
    const int k = table[s];
    if (k != dbsparse::abi::kSpgemmEmptyKey) {
      const unsigned j = atomicAdd(counter, 1u);
      c_col[begin + j] = k;
      c_val[begin + j] = tv[s];
    }
  }
  __syncthreads();  // also orders the global writes above before the reads below (same block)
  unsigned p2 = 1;
  while (p2 < (unsigned)len) p2 <<= 1;
  for (unsigned s = t; s < p2; s += nt) {
    if (s < (unsigned)len) {
      table[s] = c_col[begin + s];
      tv[s] = c_val[begin + s];
    } else {
      table[s] = dbsparse::abi::kSpgemmEmptyKey;
    }
  }
  __syncthreads();
  spgemm_bitonic<V>(table, tv, p2, t, nt);
  for (int j = (int)t; j < len; j += (int)nt) {
    c_col[begin + j] = table[j];
    c_val[begin + j] = tv[j];
  }
}

// Symbolic phase, shared tables: rows[0..n) of one group, RPB = BLOCK / TPR rows per block, T
// slots each. row_len[i] = the distinct columns; a row that does not fit gets overflow[i] = 1 and
// is counted again by spgemm_symbolic_global (when the plan falls back; else it is an error).
template <typename V, int T, int TPR, int BLOCK>
__global__ void __launch_bounds__(BLOCK) spgemm_symbolic_shared(const int32_t* __restrict__ rows, int n,
                                                                const int32_t* __restrict__ a_ptr,
                                                                const int32_t* __restrict__ a_col,
                                                                const int32_t* __restrict__ b_ptr,
                                                                const int32_t* __restrict__ b_col, int32_t* row_len,
                                                                int32_t* overflow) {
  constexpr int RPB = BLOCK / TPR;
  extern __shared__ double spgemm_smem[];  // 8-byte aligned: values (f64) first
  int* keys = (int*)spgemm_smem;
  __shared__ int count[RPB], full[RPB];
  const int r = threadIdx.x / TPR, t = threadIdx.x % TPR;
  for (int s = threadIdx.x; s < RPB * T; s += BLOCK) keys[s] = dbsparse::abi::kSpgemmEmptyKey;
  if (threadIdx.x < RPB) count[threadIdx.x] = full[threadIdx.x] = 0;
  __syncthreads();
  const int pos = blockIdx.x * RPB + r;
  if (pos < n) {
    const int i = rows[pos];
    int* table = keys + r * T;
    int mine = 0;
    spgemm_products<TPR, V>(i, t, a_ptr, a_col, (const V*)0, b_ptr, b_col, (const V*)0, full + r,
                            [&](int col, V, V) {
                              bool claimed;
                              if (spgemm_insert(table, T - 1, col, &claimed) < 0) atomicExch(full + r, 1);
                              mine += claimed;
                            });
    atomicAdd(count + r, mine);
  }
  __syncthreads();
  if (pos < n && t == 0) {
    const int i = rows[pos];
    if (full[r]) {
      overflow[i] = 1;
      row_len[i] = 0;
    } else {
      row_len[i] = count[r];
    }
  }
}

// Numeric phase, shared tables: the same rows and tables, A(i,k)·B(k,j) added into the key's slot,
// then the table sorted by key (empties last) and its first row_len entries written at C's row_ptr.
// Rows flagged in overflow are left to spgemm_numeric_global.
template <typename V, int T, int TPR, int BLOCK>
__global__ void __launch_bounds__(BLOCK) spgemm_numeric_shared(
    const int32_t* __restrict__ rows, int n, const int32_t* __restrict__ a_ptr, const int32_t* __restrict__ a_col,
    const V* __restrict__ a_val, const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col,
    const V* __restrict__ b_val, const int32_t* __restrict__ overflow, const int32_t* __restrict__ c_ptr,
    int32_t* __restrict__ c_col, V* __restrict__ c_val) {
  constexpr int RPB = BLOCK / TPR;
  extern __shared__ double spgemm_smem[];  // 8-byte aligned: values (f64) first
  V* vals = (V*)spgemm_smem;
  int* keys = (int*)(vals + RPB * T);
  __shared__ unsigned placed;
  const int r = threadIdx.x / TPR, t = threadIdx.x % TPR;
  for (int s = threadIdx.x; s < RPB * T; s += BLOCK) {
    keys[s] = dbsparse::abi::kSpgemmEmptyKey;
    vals[s] = V(0);
  }
  if (threadIdx.x == 0) placed = 0;
  __syncthreads();
  const int pos = blockIdx.x * RPB + r;
  const int i = pos < n ? rows[pos] : -1;
  const bool active = i >= 0 && !overflow[i];
  int* table = keys + r * T;
  V* tv = vals + r * T;
  if (active)
    spgemm_products<TPR, V>(i, t, a_ptr, a_col, a_val, b_ptr, b_col, b_val, (int*)0,
                            [&](int col, V av, V bv) {
                              bool claimed;
                              const long long s = spgemm_insert(table, T - 1, col, &claimed);
                              if (s >= 0) atomicAdd(tv + s, av * bv);
                            });
  __syncthreads();
  if constexpr (RPB == 1) {  // one row a block: `active` is uniform over the block
    if (active) spgemm_sort_row<V>(table, tv, T, c_ptr[i + 1] - c_ptr[i], c_ptr[i], c_col, c_val, t, TPR, &placed);
    return;
  }
  // Each row's TPR threads sort its table; barriers are block-wide, so every thread takes part.
  spgemm_bitonic<V>(table, tv, T, t, TPR);
  if (active) {
    const int begin = c_ptr[i], len = c_ptr[i + 1] - begin;
    for (int j = t; j < len; j += TPR) {
      c_col[begin + j] = table[j];
      c_val[begin + j] = tv[j];
    }
  }
}

// Symbolic phase in global tables, a block per row: rows[0..n), the first n_always of them (group
// 3) always, the others (rows that may overflow their shared table) only where overflow[i] is set.
// Row rows[p]'s table: tables[p].slots keys from keys[tables[p].offset].
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK) spgemm_symbolic_global(const int32_t* __restrict__ rows, int n, int n_always,
                                                                const dbsparse::abi::SpgemmTable* __restrict__ tables,
                                                                const int32_t* __restrict__ a_ptr,
                                                                const int32_t* __restrict__ a_col,
                                                                const int32_t* __restrict__ b_ptr,
                                                                const int32_t* __restrict__ b_col, int* keys,
                                                                int32_t* row_len, const int32_t* overflow) {
  __shared__ int count;
  const int p = blockIdx.x;
  if (p >= n) return;
  const int i = rows[p];
  if (p >= n_always && !overflow[i]) return;  // uniform over the block
  const long long off = tables[p].offset;
  const unsigned slots = (unsigned)tables[p].slots;
  int* table = keys + off;
  for (unsigned s = threadIdx.x; s < slots; s += BLOCK) table[s] = dbsparse::abi::kSpgemmEmptyKey;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  int mine = 0;
  spgemm_products<BLOCK, V>(i, threadIdx.x, a_ptr, a_col, (const V*)0, b_ptr, b_col, (const V*)0,
                            (int*)0, [&](int col, V, V) {
                              bool claimed;
                              spgemm_insert(table, slots - 1u, col, &claimed);  // never full: slots >= 2 * distinct
                              mine += claimed;
                            });
  atomicAdd(&count, mine);
  __syncthreads();
  if (threadIdx.x == 0) row_len[i] = count;
}

// Numeric phase in global tables: as spgemm_numeric_shared, the table (keys and values) sorted in
// place in global memory by the row's block.
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK) spgemm_numeric_global(
    const int32_t* __restrict__ rows, int n, int n_always, const dbsparse::abi::SpgemmTable* __restrict__ tables,
    const int32_t* __restrict__ a_ptr, const int32_t* __restrict__ a_col, const V* __restrict__ a_val,
    const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col, const V* __restrict__ b_val, int* keys,
    V* vals, const int32_t* __restrict__ overflow, const int32_t* __restrict__ c_ptr, int32_t* __restrict__ c_col,
    V* __restrict__ c_val) {
  const int p = blockIdx.x;
  if (p >= n) return;
  const int i = rows[p];
  if (p >= n_always && !overflow[i]) return;
  const long long off = tables[p].offset;
  const unsigned slots = (unsigned)tables[p].slots;
  int* table = keys + off;
  V* tv = vals + off;
  __shared__ unsigned placed;
  for (unsigned s = threadIdx.x; s < slots; s += BLOCK) {
    table[s] = dbsparse::abi::kSpgemmEmptyKey;
    tv[s] = V(0);
  }
  if (threadIdx.x == 0) placed = 0;
  __syncthreads();
  spgemm_products<BLOCK, V>(i, threadIdx.x, a_ptr, a_col, a_val, b_ptr, b_col, b_val, (int*)0,
                            [&](int col, V av, V bv) {
                              bool claimed;
                              const long long s = spgemm_insert(table, slots - 1u, col, &claimed);
                              if (s >= 0) atomicAdd(tv + s, av * bv);
                            });
  __syncthreads();
  spgemm_sort_row<V>(table, tv, slots, c_ptr[i + 1] - c_ptr[i], c_ptr[i], c_col, c_val, threadIdx.x, BLOCK, &placed);
}

}  // namespace dbs

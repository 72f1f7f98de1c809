// Hash SpGEMM's kernels (include/dbsparse/spgemm.hpp lists the phases; runtime/spgemm/spgemm_hash_cpu.cpp
// is their executable spec): C = A·B row by row, each row of C built in an open-addressing hash
// table (abi/spgemm.h: first slot (uint32(key) * 107) & (slots - 1), linear probing, empty = -1,
// claimed by atomicCAS). Tables of groups 0-2 live in dynamic shared memory (the plan sets the
// opt-in limit); group 3 and the rows that overflow their shared table use a region of one global
// array of slots (abi::SpgemmTable per row of the global list, placed by spgemm_scatter_rows in
// templates/spgemm/spgemm_analysis.cuh; sizes are powers of two).
//
// Thread mapping (TPR threads per row): TPR <= 32, part of a warp per row (group 0; groups 1-2
// with lanes1 / lanes2), with warp barriers only; TPR == BLOCK, a block per row. Either way a row's
// products are numbered flat over chunks of A entries and dealt out evenly (spgemm_products_*).
#pragma once
#include "dbs_common.cuh"
#include "spgemm_scan.cuh"
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

// A row's lanes when it has TPR <= 32 threads: lanes [base, base + TPR) of one warp.
template <int TPR>
struct SpgemmLanes {
  unsigned mask;
  int t, base;
  __device__ __forceinline__ SpgemmLanes() {
    const int lane = threadIdx.x & 31;
    base = lane & ~(TPR - 1);
    t = lane - base;
    mask = (TPR == 32 ? 0xffffffffu : ((1u << (TPR & 31)) - 1u)) << base;
  }
};

// A entry p: where its B row starts (*bs), how long it is (*bl), its value (*av, when a_val).
template <typename V>
__device__ __forceinline__ void spgemm_a_entry(int p, const int32_t* __restrict__ a_col, const V* __restrict__ a_val,
                                               const int32_t* __restrict__ b_ptr, int* bs, int* bl, V* av) {
  const int k = a_col[p];
  *bs = b_ptr[k];
  *bl = b_ptr[k + 1] - *bs;
  if (a_val) *av = a_val[p];
}

// f(col, a value, b value) for every product of row i, over the row's TPR (<= 32) lanes: chunks of
// TPR A entries whose products are numbered flat and dealt to the lanes in turn, so that a short B
// row idles no lane and consecutive lanes read consecutive B entries (a lane per A entry left most
// lanes idle on 3-entry road-network rows and serialised a power-law row on its hub). stop: the
// row's full flag (symbolic phase), checked before each product by a plain volatile load: it is
// only an early exit (a product after the table filled finds it full and sets the flag again),
// and an atomicOr per product serialised the warp's 32 lanes on one shared word.
template <int TPR, typename V, typename F>
__device__ __forceinline__ void spgemm_products_lanes(const SpgemmLanes<TPR>& L, int i,
                                                      const int32_t* __restrict__ a_ptr,
                                                      const int32_t* __restrict__ a_col, const V* __restrict__ a_val,
                                                      const int32_t* __restrict__ b_ptr,
                                                      const int32_t* __restrict__ b_col, const V* __restrict__ b_val,
                                                      int* stop, F f) {
  const int end = a_ptr[i + 1];
  for (int p0 = a_ptr[i]; p0 < end; p0 += TPR) {
    const int p = p0 + L.t;
    int bs = 0, bl = 0;
    V av = V(0);
    if (p < end) spgemm_a_entry(p, a_col, a_val, b_ptr, &bs, &bl, &av);
    int incl = bl;
#pragma unroll
    for (int o = 1; o < TPR; o <<= 1) {
      const int v = __shfl_up_sync(L.mask, incl, o, TPR);
      if (L.t >= o) incl += v;
    }
    const int total = __shfl_sync(L.mask, incl, TPR - 1, TPR);
    const int start = bs + bl - incl;  // product j of this entry reads B at start + j
    for (int j0 = 0; j0 < total; j0 += TPR) {
      const int j = j0 + L.t;
      int e = 0;  // the entry of product j: the lanes whose inclusive count is <= j
#pragma unroll
      for (int step = TPR / 2; step > 0; step >>= 1)
        if (__shfl_sync(L.mask, incl, e + step - 1, TPR) <= j) e += step;
      const int q = __shfl_sync(L.mask, start, e, TPR) + j;
      const V a = __shfl_sync(L.mask, av, e, TPR);
      if (j < total && !(stop && *(volatile int*)stop)) f(b_col[q], a, b_val ? b_val[q] : V(0));
    }
  }
}

// The same over a whole block (BLOCK > 32 threads), for the products numbered [from, to) of the
// row whose A entries are [begin, end): chunks of BLOCK A entries numbered flat by a block scan;
// warp w takes the w-th contiguous share of the chunk's products in range, its lanes every 32nd,
// walking the entries forward (a warp per A entry left the block waiting on the warp that walked a
// hub's B row). Every thread of the block calls it (barriers).
template <int BLOCK, typename V, typename F>
__device__ __forceinline__ void spgemm_products_block(int begin, int end, long long from, long long to,
                                                      const int32_t* __restrict__ a_col, const V* __restrict__ a_val,
                                                      const int32_t* __restrict__ b_ptr,
                                                      const int32_t* __restrict__ b_col, const V* __restrict__ b_val,
                                                      int* stop, F f) {
  constexpr int W = BLOCK / 32;
  __shared__ int s_incl[BLOCK], s_start[BLOCK];
  __shared__ V s_av[BLOCK];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  long long base = 0;  // products of the chunks before this one
  for (int p0 = begin; p0 < end && base < to; p0 += BLOCK) {
    const int p = p0 + t;
    int bs = 0, bl = 0;
    V av = V(0);
    if (p < end) spgemm_a_entry(p, a_col, a_val, b_ptr, &bs, &bl, &av);
    long long chunk;
    const int incl = (int)spgemm_block_scan<BLOCK>(bl, &chunk) + bl;
    const int total = (int)chunk;  // <= nnz(B): a row's A entries name distinct B rows
    s_incl[t] = incl;
    s_start[t] = bs + bl - incl;
    s_av[t] = av;
    __syncthreads();
    const int first = (int)max(0ll, from - base), last = (int)min((long long)total, to - base);
    base += total;
    const int per = ((max(last - first, 0) + W - 1) / W + 31) & ~31;
    const int hi = min(first + warp * per + per, last);
    int j = first + warp * per + lane;
    if (j < hi) {
      int lo = 0, up = BLOCK - 1;  // the first entry whose inclusive count passes j (s_incl[BLOCK-1] = total > j)
      while (lo < up) {
        const int mid = (lo + up) >> 1;
        if (s_incl[mid] <= j)
          lo = mid + 1;
        else
          up = mid;
      }
      for (int e = lo; j < hi; j += 32) {
        while (s_incl[e] <= j) ++e;
        if (stop && *(volatile int*)stop) break;
        const int q = s_start[e] + j;
        f(b_col[q], s_av[e], b_val ? b_val[q] : V(0));
      }
    }
    __syncthreads();  // the next chunk rewrites the arrays
  }
}

// Bitonic sort of n (a power of two) (key, value) pairs by key as unsigned, so the empty key (-1)
// goes last and a row's n distinct keys end up sorted at the front. t of NT threads; every thread
// of the block (WARP: of the warp) calls it the same number of times (barriers).
template <typename V, bool WARP = false>
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
      if (WARP)
        __syncwarp();
      else
        __syncthreads();
    }
}

// One row's table (keys and values, `slots` of them, `len` distinct keys; len < 0: not known yet,
// counted here) sorted into C's row at `begin` by the row's whole block; returns len: the occupied slots are first copied, unsorted, into C's row,
// read back to the table's front, and only the next power of two >= len is sorted. Why: sorting
// every slot (8192 in group 2, 1024 in group 1, most of them empty) dominated the numeric phase
// (docs/decisions/spgemm-kernel-design.md). counter: zero on entry.
template <typename V>
__device__ int spgemm_sort_row(int* table, V* tv, unsigned slots, int len, int begin, int32_t* c_col, V* c_val,
                               unsigned t, unsigned nt, unsigned* counter) {
  // One atomic a warp (nt is a multiple of 32, so every lane runs the loop equally often): an
  // atomic per key on one shared counter serialised the compaction of 8192-slot tables.
  const unsigned lane = t & 31u;
  for (unsigned s0 = 0; s0 < slots; s0 += nt) {
    const unsigned s = s0 + t;
    const int k = s < slots ? table[s] : dbsparse::abi::kSpgemmEmptyKey;
    const bool occupied = k != dbsparse::abi::kSpgemmEmptyKey;
    const unsigned bits = __ballot_sync(kFull, occupied);
    unsigned j = 0;
    if (lane == 0 && bits) j = atomicAdd(counter, (unsigned)__popc(bits));
    j = __shfl_sync(kFull, j, 0) + __popc(bits & ((1u << lane) - 1u));
    if (occupied) {
      c_col[begin + j] = k;
      c_val[begin + j] = tv[s];
    }
  }
  __syncthreads();                   // also orders the global writes above before the reads below (same block)
  if (len < 0) len = (int)*counter;  // a first pass without a symbolic phase: the count is the length
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
  return len;
}

// The largest E of spgemm_sort_row_lanes for a table of T slots: the keys a fitted table (at most
// half full) holds per lane, at most 8 (past 8 keys a lane the bitonic sort is cheaper).
__host__ __device__ constexpr int spgemm_rank_keys(int T, int TPR) {
  return (T / 2 + TPR - 1) / TPR < 8 ? (T / 2 + TPR - 1) / TPR : 8;
}

// The rank sort of spgemm_sort_row_lanes for rows of at most E * TPR keys (n of this row, most of
// the warp's rows), the keys at the table's front: each lane keeps E keys in registers and counts
// the row's keys below each, four keys a shared load where VEC4 (the table 16-byte aligned; it has
// at least twice most's slots), then writes each entry straight to its place in C.
template <typename V, int TPR, int E, bool VEC4>
__device__ __forceinline__ void spgemm_rank_write(const SpgemmLanes<TPR>& L, const int* table, const V* tv, int n,
                                                  int most, bool write, int begin, int32_t* __restrict__ c_col,
                                                  V* __restrict__ c_val) {
  int key[E], rank[E];
  V val[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int at = L.t + e * TPR;
    key[e] = at < n ? table[at] : 0x7fffffff;
    val[e] = at < n ? tv[at] : V(0);
    rank[e] = 0;
  }
  if constexpr (VEC4) {
    for (int q = 0; q < most; q += 4) {
      const int4 x4 = *reinterpret_cast<const int4*>(table + q);
      // Past n: stale slots (the 0x7fffffff of a lane without a key counts nothing either).
      const int x[4] = {q < n ? x4.x : 0x7fffffff, q + 1 < n ? x4.y : 0x7fffffff, q + 2 < n ? x4.z : 0x7fffffff,
                        q + 3 < n ? x4.w : 0x7fffffff};
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int e = 0; e < E; ++e) rank[e] += x[u] < key[e];
    }
  } else {
    for (int q = 0; q < most; ++q) {
      const int x = q < n ? table[q] : 0x7fffffff;
#pragma unroll
      for (int e = 0; e < E; ++e) rank[e] += x < key[e];
    }
  }
  if (write)
#pragma unroll
    for (int e = 0; e < E; ++e)
      if (L.t + e * TPR < n) {
        c_col[begin + rank[e]] = key[e];
        c_val[begin + rank[e]] = val[e];
      }
}

// Each row's table of a warp sorted into C's row at `begin` (`write`: the row is active) by the
// row's TPR (<= 32) lanes: the occupied slots compacted to the table's front in slot order, TPR at
// a time (a key moves only down, onto a slot already read), then a bitonic sort of the next power
// of two >= the warp's largest count. Every lane of the warp calls it and every loop runs the same
// number of times on all of them, so the warp stays converged: with per-row trip counts the rows
// of a warp ran one after another (docs/decisions/spgemm-kernel-design.md). Returns the row's
// distinct keys.
//
// When every row of the warp has at most E * TPR keys (E from spgemm_rank_keys, at most 8), a rank
// sort (spgemm_rank_write) replaces the bitonic one: n loads and n * E' compares a lane for n keys,
// against the bitonic sort's log2(p2)^2 / 2 passes of p2 / TPR compare-exchanges through shared
// memory with a warp barrier each (p2 = 128: 28 passes; its ~1,300 instructions a lane made the
// sort most of group 0's and group 1's numeric time on power-law rows:
// docs/decisions/spgemm-kernel-design.md). Past 8 keys a lane (n * E' ~ 16n compares against ~8.6K instructions for a bitonic
// sort of 512) the bitonic sort is the cheaper.
template <typename V, int TPR, int E, bool VEC4>
__device__ int spgemm_sort_row_lanes(const SpgemmLanes<TPR>& L, int* table, V* tv, int slots, bool write, int begin,
                                     int32_t* __restrict__ c_col, V* __restrict__ c_val) {
  int n = 0;
  for (int s0 = 0; s0 < slots; s0 += TPR) {
    const int s = s0 + L.t;
    int k = dbsparse::abi::kSpgemmEmptyKey;
    V v = V(0);
    if (s < slots) {
      k = table[s];
      v = tv[s];
    }
    const bool occupied = k != dbsparse::abi::kSpgemmEmptyKey;
    const unsigned bits = (__ballot_sync(kFull, occupied) & L.mask) >> L.base;
    const int at = n + __popc(bits & ((1u << L.t) - 1u));
    __syncwarp();
    if (occupied) {
      table[at] = k;
      tv[at] = v;
    }
    n += __popc(bits);
    __syncwarp();
  }
  int most = n;  // over the warp's rows: the loops below run alike on every lane
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) most = max(most, __shfl_xor_sync(kFull, most, o));
  // E' = the fewest keys a lane that hold the warp's largest row: a lane compares each of the row's
  // keys with E' of its own, so a fixed E of 16 made a 100-key row cost 1,600 compares a lane
  // (docs/decisions/spgemm-kernel-design.md).
  if (most <= TPR) {
    spgemm_rank_write<V, TPR, 1, VEC4>(L, table, tv, n, most, write, begin, c_col, c_val);
    return n;
  }
  if constexpr (E >= 2)
    if (most <= 2 * TPR) {
      spgemm_rank_write<V, TPR, 2, VEC4>(L, table, tv, n, most, write, begin, c_col, c_val);
      return n;
    }
  if constexpr (E >= 4)
    if (most <= 4 * TPR) {
      spgemm_rank_write<V, TPR, 4, VEC4>(L, table, tv, n, most, write, begin, c_col, c_val);
      return n;
    }
  if constexpr (E >= 8)
    if (most <= 8 * TPR) {
      spgemm_rank_write<V, TPR, 8, VEC4>(L, table, tv, n, most, write, begin, c_col, c_val);
      return n;
    }
  unsigned p2 = 1;
  while (p2 < (unsigned)most) p2 <<= 1;
  for (unsigned s = n + L.t; s < p2; s += TPR) table[s] = dbsparse::abi::kSpgemmEmptyKey;
  __syncwarp();
  spgemm_bitonic<V, true>(table, tv, p2, L.t, TPR);
  if (write)
    for (int j = L.t; j < n; j += TPR) {
      c_col[begin + j] = table[j];
      c_val[begin + j] = tv[j];
    }
  return n;
}

// A global row whose table has at least as many slots as B has columns keeps its keys densely,
// slot = column: no probing, and spgemm_global_sort writes C's row by a scan in column order, with
// no sort (a bitonic sort of a hub's table in global memory by one block was a large share of the
// product: docs/decisions/spgemm-kernel-design.md). Costs no memory: the hashed table is as large.
__device__ __forceinline__ bool spgemm_dense_row(long long slots, int b_cols) { return slots >= b_cols; }

// The slot of `col` in a table of `slots` (a power of two when hashed), dense (slot = column) or
// hashed; *claimed as spgemm_insert.
__device__ __forceinline__ long long spgemm_slot(int* table, unsigned slots, bool dense, int col, bool* claimed) {
  if (!dense) return spgemm_insert(table, slots - 1u, col, claimed);  // never full: slots >= 2 * distinct
  *claimed = ((volatile int*)table)[col] == dbsparse::abi::kSpgemmEmptyKey &&
             atomicCAS(table + col, dbsparse::abi::kSpgemmEmptyKey, col) == dbsparse::abi::kSpgemmEmptyKey;
  return col;
}

// A dense table's columns [lo, hi) written in order to C at c_col/c_val[base ..], by the whole
// block; every thread calls it. Returns how many. VEC4: lo a multiple of 4 and the table 16-byte
// aligned with slots up to the next multiple of 4 past hi (a shared table; a global row's column
// segments are neither). Four slots a thread a pass (one 16-byte load of keys where VEC4) and a
// block scan by warp shuffles: a slot a thread with every thread summing the W warps' counts from
// shared memory cost 32 shared loads a thread per 1024 slots, 512 for a 16384-slot row
// (docs/decisions/spgemm-kernel-design.md).
template <typename V, int BLOCK, bool VEC4>
__device__ int spgemm_dense_write(const int* table, const V* tv, int lo, int hi, int base, int32_t* __restrict__ c_col,
                                  V* __restrict__ c_val) {
  constexpr int W = BLOCK / 32;
  __shared__ int warp_sum[W], chunk_total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int written = 0;
  for (int c0 = lo; c0 < hi; c0 += 4 * BLOCK) {
    const int c = c0 + 4 * (int)threadIdx.x;
    int kk[4] = {-1, -1, -1, -1};
    if constexpr (VEC4) {
      if (c < hi) {
        const int4 k4 = *reinterpret_cast<const int4*>(table + c);
        kk[0] = k4.x, kk[1] = k4.y, kk[2] = k4.z, kk[3] = k4.w;
      }
    } else {
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (c + u < hi) kk[u] = table[c + u];
    }
    unsigned occ = 0;
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (c + u < hi && kk[u] != dbsparse::abi::kSpgemmEmptyKey) occ |= 1u << u;
    const int mine = __popc(occ);
    int incl = mine;  // inclusive scan over the warp
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int x = __shfl_up_sync(kFull, incl, o);
      if (lane >= o) incl += x;
    }
    if (lane == 31) warp_sum[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      const int w = lane < W ? warp_sum[lane] : 0;
      int wi = w;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int x = __shfl_up_sync(kFull, wi, o);
        if (lane >= o) wi += x;
      }
      if (lane < W) warp_sum[lane] = wi - w;  // exclusive
      if (lane == W - 1) chunk_total = wi;
    }
    __syncthreads();
    int at = base + written + warp_sum[warp] + incl - mine;
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (occ & (1u << u)) {
        c_col[at] = c + u;
        c_val[at] = tv[c + u];
        ++at;
      }
    written += chunk_total;
    __syncthreads();  // warp_sum and chunk_total are rewritten next
  }
  return written;
}

// Group 2's merge path (SpgemmKey::merge, SpgemmConfig::merge2): a row of at most M A entries
// whose products fill at most half its table's slots takes its B rows as M sorted lists (CSR
// columns are sorted and unique in a row) and puts each product at its rank in their stable merge:
// its place in its own list plus, in every other list, the entries below its column (in the lists
// before its own, also those equal to it). Equal columns then sit side by side in list order, and
// a scan over the run heads writes C's row. No table, no probing, no sort: where products barely
// merge (IP close to nnz(C)) the hash path's inserts and sort did a gather's work
// (docs/decisions/spgemm-low-accumulation.md). The lists' columns are staged in the table's upper
// half, so that the binary searches read shared memory: the table's lower half holds the ranked
// products, and group 2's large tables leave the L1 cache little room for B.
// Every thread of the block calls these (barriers); a row they do not take (more than M entries,
// more products than half the slots) returns -1 with nothing written.

// The entries of p[0, n) below c (upper: not above c, i.e. below c + 1: columns are below 2^31 - 1).
__device__ __forceinline__ int spgemm_rank_in(const int* p, int n, int c, bool upper) {
  if (upper) ++c;
  int lo = 0;
  while (n > 0) {
    const int half = n >> 1;
    if (p[lo + half] < c) {
      lo += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return lo;
}

// A merged row's B rows: where each starts in B, its length, its products' first number, its A value.
template <typename V, int M>
struct SpgemmMergeLists {
  int start[M], len[M], off[M + 1];
  V av[M];
  int k;
};

// The list of product q, from the list of a smaller q (products are numbered list after list).
template <typename V, int M>
__device__ __forceinline__ int spgemm_merge_list_of(const SpgemmMergeLists<V, M>& L, int q, int j) {
  while (j + 1 < L.k && L.off[j + 1] <= q) ++j;
  return j;
}

// Row i's lists into L and their columns, product after product, into cols[0, IP); returns IP, or
// -1 when the row is not merged (cols untouched).
template <typename V, int BLOCK, int M>
__device__ int spgemm_merge_lists(SpgemmMergeLists<V, M>& L, int i, const int32_t* __restrict__ a_ptr,
                                  const int32_t* __restrict__ a_col, const V* __restrict__ a_val,
                                  const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col, int slots,
                                  int* cols) {
  const int first = a_ptr[i], k = a_ptr[i + 1] - first;
  if (k > M) return -1;  // uniform over the block
  const int t = threadIdx.x;
  if (t < k) {
    const int col = a_col[first + t];
    L.start[t] = b_ptr[col];
    L.len[t] = b_ptr[col + 1] - L.start[t];
    L.av[t] = a_val ? a_val[first + t] : V(0);
  }
  __syncthreads();
  if (t == 0) {
    int o = 0;
    for (int j = 0; j < k; ++j) {
      L.off[j] = o;
      o += L.len[j];
    }
    L.off[k] = o;
    L.k = k;
  }
  __syncthreads();
  const int ip = L.off[k];
  if (2ll * ip > slots) return -1;
  for (int q = t, j = 0; q < ip; q += BLOCK) {
    j = spgemm_merge_list_of(L, q, j);
    cols[q] = b_col[L.start[j] + q - L.off[j]];
  }
  __syncthreads();
  return ip;
}

// Symbolic: row i's distinct columns (a product counts where no list before its own holds its
// column), or -1 when the row is not merged. cols: `slots` ints of shared memory.
template <typename V, int BLOCK, int M>
__device__ int spgemm_merge_count(int i, const int32_t* __restrict__ a_ptr, const int32_t* __restrict__ a_col,
                                  const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col, int slots,
                                  int* cols) {
  __shared__ SpgemmMergeLists<V, M> L;
  const int ip = spgemm_merge_lists<V, BLOCK, M>(L, i, a_ptr, a_col, (const V*)0, b_ptr, b_col, slots, cols);
  if (ip < 0) return -1;
  long long heads = 0;
  for (int q = threadIdx.x, j = 0; q < ip; q += BLOCK) {
    j = spgemm_merge_list_of(L, q, j);
    const int c = cols[q];
    bool head = q == L.off[j] || cols[q - 1] != c;  // as spgemm_merge_write's runs, should a row repeat a column
    for (int o = 0; o < j && head; ++o) {
      const int p = spgemm_rank_in(cols + L.off[o], L.len[o], c, false);
      head = !(p < L.len[o] && cols[L.off[o] + p] == c);
    }
    heads += head;
  }
  long long total;
  spgemm_block_scan<BLOCK>(heads, &total);
  return (int)total;
}

// Numeric: row i's products placed by rank in keys / vals[0, IP) (the lists' columns staged at
// keys + slots / 2), then C's row written at `begin` from the run heads, each run summed in list
// order; at most `len` entries (len < 0: the one-pass first run, which counts them). Returns the
// entries, or -1 when the row is not merged.
template <typename V, int BLOCK, int M>
__device__ int spgemm_merge_write(int i, const int32_t* __restrict__ a_ptr, const int32_t* __restrict__ a_col,
                                  const V* __restrict__ a_val, const int32_t* __restrict__ b_ptr,
                                  const int32_t* __restrict__ b_col, const V* __restrict__ b_val, int* keys, V* vals,
                                  int slots, int len, int begin, int32_t* __restrict__ c_col, V* __restrict__ c_val) {
  __shared__ SpgemmMergeLists<V, M> L;
  int* cols = keys + slots / 2;
  const int ip = spgemm_merge_lists<V, BLOCK, M>(L, i, a_ptr, a_col, a_val, b_ptr, b_col, slots, cols);
  if (ip < 0) return -1;
  for (int q = threadIdx.x, j = 0; q < ip; q += BLOCK) {
    j = spgemm_merge_list_of(L, q, j);
    const int tj = q - L.off[j], c = cols[q];
    int r = tj;
    for (int o = 0; o < L.k; ++o)
      if (o != j) r += spgemm_rank_in(cols + L.off[o], L.len[o], c, o < j);
    keys[r] = c;
    vals[r] = L.av[j] * (b_val ? b_val[L.start[j] + tj] : V(0));
  }
  __syncthreads();
  int written = 0;
  for (int q0 = 0; q0 < ip; q0 += BLOCK) {  // the same trip count on every thread (the scan's barriers)
    const int q = q0 + (int)threadIdx.x;
    const bool head = q < ip && (q == 0 || keys[q] != keys[q - 1]);
    long long n;
    const int at = written + (int)spgemm_block_scan<BLOCK>(head ? 1 : 0, &n);
    if (head && (len < 0 || at < len)) {
      const int c = keys[q];
      V sum = vals[q];
      for (int s = q + 1; s < ip && keys[s] == c; ++s) sum += vals[s];
      c_col[begin + at] = c;
      c_val[begin + at] = sum;
    }
    written += (int)n;
  }
  return written;
}

// Symbolic phase, shared tables: rows[0..n) of one group, RPB = BLOCK / TPR rows per block, T
// slots each (rows spgemm_table_stride apart: include/dbsparse/spgemm.hpp). row_len[i] = the distinct columns; a row that does
// not fit gets overflow[i] = 1 and is counted again by spgemm_symbolic_global (when the plan falls
// back; else it is an error). TPR <= 32: a row's lanes of one warp; else TPR == BLOCK.
template <typename V, int T, int TPR, int BLOCK, int M = 0>
__global__ void __launch_bounds__(BLOCK)
    spgemm_symbolic_shared(const int32_t* __restrict__ rows, int n, const int32_t* __restrict__ a_ptr,
                           const int32_t* __restrict__ a_col, const int32_t* __restrict__ b_ptr,
                           const int32_t* __restrict__ b_col, int32_t* row_len, int32_t* overflow, int b_cols) {
  constexpr int RPB = BLOCK / TPR, S = TPR < 32 ? T + TPR : T;  // spgemm_table_stride
  // A row per block with a table of B's columns: dense (slot = column, never full, no sort).
  const bool dense = TPR == BLOCK && spgemm_dense_row(T, b_cols);
  static_assert(TPR <= 32 || TPR == BLOCK, "a row's threads: part of one warp, or the whole block");
  static_assert(M == 0 || TPR == BLOCK, "the merge path takes a block a row");
  extern __shared__ __align__(16) double spgemm_smem[];  // values (f64) first; 16: the rank sort's int4 loads
  int* keys = (int*)spgemm_smem;
  if constexpr (M > 0) {  // RPB == 1: this block's row, uniform over it
    if (!dense && (int)blockIdx.x < n) {
      const int i = rows[blockIdx.x];
      const int len = spgemm_merge_count<V, BLOCK, M>(i, a_ptr, a_col, b_ptr, b_col, T, keys);
      if (len >= 0) {
        if (threadIdx.x == 0) row_len[i] = len;
        return;
      }
    }
  }
  __shared__ int count[RPB], full[RPB];
  const int r = threadIdx.x / TPR;
  for (int s = threadIdx.x; s < RPB * S; s += BLOCK) keys[s] = dbsparse::abi::kSpgemmEmptyKey;
  if (threadIdx.x < RPB) count[threadIdx.x] = full[threadIdx.x] = 0;
  __syncthreads();
  const int pos = blockIdx.x * RPB + r;
  if (pos < n) {  // uniform over the block when TPR == BLOCK
    const int i = rows[pos];
    int* table = keys + r * S;
    int mine = 0;
    auto insert = [&](int col, V, V) {
      bool claimed;
      if (spgemm_slot(table, T, dense, col, &claimed) < 0) atomicExch(full + r, 1);
      mine += claimed;
    };
    if constexpr (TPR <= 32)
      spgemm_products_lanes<TPR, V>(SpgemmLanes<TPR>(), i, a_ptr, a_col, (const V*)0, b_ptr, b_col, (const V*)0,
                                    full + r, insert);
    else
      spgemm_products_block<BLOCK, V>(a_ptr[i], a_ptr[i + 1], 0, 0x7fffffffffffffffll, a_col, (const V*)0, b_ptr, b_col,
                                      (const V*)0, full + r, insert);
    atomicAdd(count + r, mine);
  }
  __syncthreads();
  if (pos < n && threadIdx.x % TPR == 0) {
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
// then the table sorted by key into C's row at c_ptr. Rows flagged in overflow are left to
// spgemm_numeric_global. TPR <= 32: each row's lanes work alone (warp barriers only).
// FIRST: a fresh product without a symbolic phase, where no row can overflow (tables fitted to
// twice the group's longest row, no global rows): c_ptr holds each row's offset by IP (an upper
// bound of its length) into scratch c_col / c_val, and the row's length goes to row_len, from
// which the plan sizes C and compacts the rows into it (spgemm_compact_rows). It saves the
// symbolic phase's pass over every product for a copy of C (docs/decisions/spgemm-kernel-design.md).
template <typename V, int T, int TPR, int BLOCK, bool FIRST, int M>
__device__ __forceinline__ void spgemm_numeric_shared_body(
    const int32_t* __restrict__ rows, int n, const int32_t* __restrict__ a_ptr, const int32_t* __restrict__ a_col,
    const V* __restrict__ a_val, const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col,
    const V* __restrict__ b_val, const int32_t* __restrict__ overflow, const int32_t* __restrict__ c_ptr,
    int32_t* __restrict__ c_col, V* __restrict__ c_val, int b_cols, int32_t* __restrict__ row_len) {
  constexpr int RPB = BLOCK / TPR, S = TPR < 32 ? T + TPR : T;     // spgemm_table_stride
  const bool dense = TPR == BLOCK && spgemm_dense_row(T, b_cols);  // as in spgemm_symbolic_shared
  static_assert(TPR <= 32 || TPR == BLOCK, "a row's threads: part of one warp, or the whole block");
  extern __shared__ __align__(16) double spgemm_smem[];  // values (f64) first; 16: the rank sort's int4 loads
  V* vals = (V*)spgemm_smem;
  int* keys = (int*)(vals + RPB * S);
  const int r = threadIdx.x / TPR;
  const int pos = blockIdx.x * RPB + r;
  const int i = pos < n ? rows[pos] : -1;
  const bool active = i >= 0 && !overflow[i];  // uniform over the row's threads
  int* table = keys + r * S;
  V* tv = vals + r * S;
  auto add = [&](int col, V av, V bv) {
    bool claimed;
    const long long s = spgemm_slot(table, T, dense, col, &claimed);
    if (s >= 0) atomicAdd(tv + s, av * bv);
  };
  if constexpr (TPR <= 32) {
    // Idle rows go through the sort too (their tables empty), so that the warp stays converged.
    const SpgemmLanes<TPR> L;
    for (int s = L.t; s < T; s += TPR) {
      table[s] = dbsparse::abi::kSpgemmEmptyKey;
      tv[s] = V(0);
    }
    __syncwarp();
    if (active) spgemm_products_lanes<TPR, V>(L, i, a_ptr, a_col, a_val, b_ptr, b_col, b_val, (int*)0, add);
    __syncwarp();
    const int len = spgemm_sort_row_lanes<V, TPR, spgemm_rank_keys(T, TPR), S % 4 == 0>(
        L, table, tv, T, active, active ? c_ptr[i] : 0, c_col, c_val);
    if (FIRST && active && L.t == 0) row_len[i] = len;
  } else {
    if (!active) return;  // uniform over the block (a row per block)
    if constexpr (M > 0) {
      if (!dense) {
        const int len = spgemm_merge_write<V, BLOCK, M>(i, a_ptr, a_col, a_val, b_ptr, b_col, b_val, table, tv, T,
                                                        FIRST ? -1 : c_ptr[i + 1] - c_ptr[i], c_ptr[i], c_col, c_val);
        if (len >= 0) {
          if (FIRST && threadIdx.x == 0) row_len[i] = len;
          return;
        }
      }
    }
    __shared__ unsigned placed;
    for (int s = threadIdx.x; s < T; s += BLOCK) {
      table[s] = dbsparse::abi::kSpgemmEmptyKey;
      tv[s] = V(0);
    }
    if (threadIdx.x == 0) placed = 0;
    __syncthreads();
    spgemm_products_block<BLOCK, V>(a_ptr[i], a_ptr[i + 1], 0, 0x7fffffffffffffffll, a_col, a_val, b_ptr, b_col, b_val,
                                    (int*)0, add);
    __syncthreads();
    int len;
    if (dense)
      len = spgemm_dense_write<V, BLOCK, true>(table, tv, 0, b_cols, c_ptr[i], c_col, c_val);
    else
      len = spgemm_sort_row<V>(table, tv, T, FIRST ? -1 : c_ptr[i + 1] - c_ptr[i], c_ptr[i], c_col, c_val, threadIdx.x,
                               BLOCK, &placed);
    if (FIRST && threadIdx.x == 0) row_len[i] = len;
  }
}

template <typename V, int T, int TPR, int BLOCK, int M = 0>
__global__ void __launch_bounds__(BLOCK)
    spgemm_numeric_shared(const int32_t* __restrict__ rows, int n, const int32_t* __restrict__ a_ptr,
                          const int32_t* __restrict__ a_col, const V* __restrict__ a_val,
                          const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col,
                          const V* __restrict__ b_val, const int32_t* __restrict__ overflow,
                          const int32_t* __restrict__ c_ptr, int32_t* __restrict__ c_col, V* __restrict__ c_val,
                          int b_cols) {
  spgemm_numeric_shared_body<V, T, TPR, BLOCK, false, M>(rows, n, a_ptr, a_col, a_val, b_ptr, b_col, b_val, overflow,
                                                         c_ptr, c_col, c_val, b_cols, nullptr);
}

template <typename V, int T, int TPR, int BLOCK, int M = 0>
__global__ void __launch_bounds__(BLOCK)
    spgemm_numeric_shared_first(const int32_t* __restrict__ rows, int n, const int32_t* __restrict__ a_ptr,
                                const int32_t* __restrict__ a_col, const V* __restrict__ a_val,
                                const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col,
                                const V* __restrict__ b_val, const int32_t* __restrict__ overflow,
                                const int32_t* __restrict__ c_ptr, int32_t* __restrict__ c_col, V* __restrict__ c_val,
                                int b_cols, int32_t* __restrict__ row_len) {
  spgemm_numeric_shared_body<V, T, TPR, BLOCK, true, M>(rows, n, a_ptr, a_col, a_val, b_ptr, b_col, b_val, overflow,
                                                        c_ptr, c_col, c_val, b_cols, row_len);
}

// Global tables (group 3 and the rows that overflowed a shared one) run with gridDim.y blocks a
// row: each takes an even share of the row's products (SpgemmTable::ip), so that a power-law hub
// row no longer waits on one block (docs/decisions/spgemm-kernel-design.md).
// Rows rows[0..n): the first n_always (group 3) always, the others where overflow[i] is set (a
// uniform exit for the whole block). Row rows[p]'s table: tables[p].slots slots from
// tables[p].offset.
__device__ __forceinline__ bool spgemm_global_row_runs(const int32_t* __restrict__ rows, int n, int n_always,
                                                       const int32_t* __restrict__ overflow, int p, int* i) {
  if (p >= n) return false;
  *i = rows[p];
  return p < n_always || overflow[*i];
}

// The tables set empty (values zeroed when vals is not null), each by its row's gridDim.y blocks.
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK) spgemm_global_init(const int32_t* __restrict__ rows, int n, int n_always,
                                                            const dbsparse::abi::SpgemmTable* __restrict__ tables,
                                                            const int32_t* __restrict__ overflow, int* keys, V* vals) {
  int i;
  if (!spgemm_global_row_runs(rows, n, n_always, overflow, blockIdx.x, &i)) return;
  const long long off = tables[blockIdx.x].offset, slots = tables[blockIdx.x].slots;
  for (long long s = (long long)blockIdx.y * BLOCK + threadIdx.x; s < slots; s += (long long)gridDim.y * BLOCK) {
    keys[off + s] = dbsparse::abi::kSpgemmEmptyKey;
    if (vals) vals[off + s] = V(0);
  }
}

// Symbolic phase in global tables: each block's newly claimed keys added to row_len[i] (zero from
// the plan's memset, or from the shared kernel for a row that overflowed).
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_symbolic_global(const int32_t* __restrict__ rows, int n, int n_always,
                           const dbsparse::abi::SpgemmTable* __restrict__ tables, const int32_t* __restrict__ a_ptr,
                           const int32_t* __restrict__ a_col, const int32_t* __restrict__ b_ptr,
                           const int32_t* __restrict__ b_col, int* keys, int32_t* row_len, const int32_t* overflow,
                           int b_cols) {
  __shared__ int count;
  int i;
  const int p = blockIdx.x;
  if (!spgemm_global_row_runs(rows, n, n_always, overflow, p, &i)) return;
  int* table = keys + tables[p].offset;
  const unsigned slots = (unsigned)tables[p].slots;
  const bool dense = spgemm_dense_row(tables[p].slots, b_cols);
  const long long ip = tables[p].ip;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  int mine = 0;
  spgemm_products_block<BLOCK, V>(a_ptr[i], a_ptr[i + 1], ip * blockIdx.y / gridDim.y,
                                  ip * (blockIdx.y + 1) / gridDim.y, a_col, (const V*)0, b_ptr, b_col, (const V*)0,
                                  (int*)0, [&](int col, V, V) {
                                    bool claimed;
                                    spgemm_slot(table, slots, dense, col, &claimed);
                                    mine += claimed;
                                  });
  atomicAdd(&count, mine);
  __syncthreads();
  if (threadIdx.x == 0 && count) atomicAdd(row_len + i, count);
}

// Numeric phase in global tables: products added into the row's table by its gridDim.y blocks;
// spgemm_global_sort then writes C's row.
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_numeric_global(const int32_t* __restrict__ rows, int n, int n_always,
                          const dbsparse::abi::SpgemmTable* __restrict__ tables, const int32_t* __restrict__ a_ptr,
                          const int32_t* __restrict__ a_col, const V* __restrict__ a_val,
                          const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col,
                          const V* __restrict__ b_val, int* keys, V* vals, const int32_t* __restrict__ overflow,
                          int b_cols) {
  int i;
  const int p = blockIdx.x;
  if (!spgemm_global_row_runs(rows, n, n_always, overflow, p, &i)) return;
  int* table = keys + tables[p].offset;
  V* tv = vals + tables[p].offset;
  const unsigned slots = (unsigned)tables[p].slots;
  const bool dense = spgemm_dense_row(tables[p].slots, b_cols);
  const long long ip = tables[p].ip;
  spgemm_products_block<BLOCK, V>(a_ptr[i], a_ptr[i + 1], ip * blockIdx.y / gridDim.y,
                                  ip * (blockIdx.y + 1) / gridDim.y, a_col, a_val, b_ptr, b_col, b_val, (int*)0,
                                  [&](int col, V av, V bv) {
                                    bool claimed;
                                    const long long s = spgemm_slot(table, slots, dense, col, &claimed);
                                    if (s >= 0) atomicAdd(tv + s, av * bv);
                                  });
}

// Where column segment y of a dense row's gridDim.y segments starts (y = gridDim.y: the end).
__device__ __forceinline__ int spgemm_segment(int b_cols, unsigned y) {
  return (int)((long long)b_cols * y / gridDim.y);
}

// Hashed global rows are written to C by a partition on columns, then sorts in shared memory: the
// columns fall into segments of `width` columns (at most what a block sorts in shared memory), each
// row's slots are counted by segment (spgemm_global_count), the counts scanned into offsets in C's
// row (spgemm_global_scan), the keys scattered there unsorted (spgemm_global_scatter) and every
// segment sorted by a block of its own (spgemm_global_sort). Why: one block sorting a hub row, or
// a bitonic sort in global memory past 16384 pairs, made the numeric phase slower than cuSPARSE's
// whole product (docs/decisions/spgemm-kernel-design.md).
// seg_hist holds segs counts a row, then their offsets; seg_fill as many fill counters.

// A slice of this block's share of `slots` (gridDim.y shares).
__device__ __forceinline__ long long spgemm_share(long long slots, unsigned y) { return slots * y / gridDim.y; }

// Dense rows: the occupied slots of segment y of gridDim.y (columns split evenly) counted into
// seg_count[p * gridDim.y + y], for spgemm_global_sort's offsets. Hashed rows: block y's share of
// the slots counted by column segment into seg_hist (zero on entry).
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_global_count(const int32_t* __restrict__ rows, int n, int n_always,
                        const dbsparse::abi::SpgemmTable* __restrict__ tables, const int* __restrict__ keys,
                        const int32_t* __restrict__ overflow, int b_cols, int32_t* __restrict__ seg_count, int width,
                        int segs, int32_t* __restrict__ seg_hist) {
  __shared__ int total;
  int i;
  const int p = blockIdx.x;
  if (!spgemm_global_row_runs(rows, n, n_always, overflow, p, &i)) return;
  const int* table = keys + tables[p].offset;
  if (!spgemm_dense_row(tables[p].slots, b_cols)) {
    int32_t* hist = seg_hist + (long long)p * segs;
    const long long hi = spgemm_share(tables[p].slots, blockIdx.y + 1);
    for (long long s = spgemm_share(tables[p].slots, blockIdx.y) + threadIdx.x; s < hi; s += BLOCK) {
      const int k = table[s];
      if (k != dbsparse::abi::kSpgemmEmptyKey) atomicAdd(hist + k / width, 1);
    }
    return;
  }
  const int lo = spgemm_segment(b_cols, blockIdx.y), hi = spgemm_segment(b_cols, blockIdx.y + 1);
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  int mine = 0;
  for (int c = lo + threadIdx.x; c < hi; c += BLOCK) mine += table[c] != dbsparse::abi::kSpgemmEmptyKey;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mine += __shfl_xor_sync(kFull, mine, o);
  if ((threadIdx.x & 31) == 0 && mine) atomicAdd(&total, mine);
  __syncthreads();
  if (threadIdx.x == 0) seg_count[(long long)p * gridDim.y + blockIdx.y] = total;
}

// Hashed rows, a block each: the segment counts turned into offsets in C's row (exclusive scan, in
// place) and the fill counters zeroed.
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_global_scan(const int32_t* __restrict__ rows, int n, int n_always,
                       const dbsparse::abi::SpgemmTable* __restrict__ tables, const int32_t* __restrict__ overflow,
                       int b_cols, int segs, int32_t* __restrict__ seg_hist, int32_t* __restrict__ seg_fill,
                       int32_t* row_len) {
  int i;
  const int p = blockIdx.x;
  if (!spgemm_global_row_runs(rows, n, n_always, overflow, p, &i)) return;
  if (spgemm_dense_row(tables[p].slots, b_cols)) return;
  int32_t* hist = seg_hist + (long long)p * segs;
  int32_t* fill = seg_fill + (long long)p * segs;
  long long running = 0;
  for (int c0 = 0; c0 < segs; c0 += BLOCK) {
    const int c = c0 + threadIdx.x;
    long long chunk;
    const long long before = running + spgemm_block_scan<BLOCK>(c < segs ? hist[c] : 0, &chunk);
    if (c < segs) {
      hist[c] = (int32_t)before;  // within C's row: an int32
      fill[c] = 0;
    }
    running += chunk;
  }
  // The row's length: what the symbolic phase counted, or, in a one-pass first run (c_ptr then holds
  // offsets by IP), the only count there is.
  if (threadIdx.x == 0) row_len[i] = (int32_t)running;
}

// Hashed rows: block y's share of the slots scattered into C's row, each key into its segment's
// range (in no order within it).
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_global_scatter(const int32_t* __restrict__ rows, int n, int n_always,
                          const dbsparse::abi::SpgemmTable* __restrict__ tables, const int* __restrict__ keys,
                          const V* __restrict__ vals, const int32_t* __restrict__ overflow,
                          const int32_t* __restrict__ c_ptr, int32_t* __restrict__ c_col, V* __restrict__ c_val,
                          int b_cols, int width, int segs, const int32_t* __restrict__ seg_hist,
                          int32_t* __restrict__ seg_fill) {
  int i;
  const int p = blockIdx.x;
  if (!spgemm_global_row_runs(rows, n, n_always, overflow, p, &i)) return;
  if (spgemm_dense_row(tables[p].slots, b_cols)) return;
  const long long off = tables[p].offset;
  const int32_t* hist = seg_hist + (long long)p * segs;
  int32_t* fill = seg_fill + (long long)p * segs;
  const int begin = c_ptr[i];
  const long long hi = spgemm_share(tables[p].slots, blockIdx.y + 1);
  for (long long s = spgemm_share(tables[p].slots, blockIdx.y) + threadIdx.x; s < hi; s += BLOCK) {
    const int k = keys[off + s];
    if (k == dbsparse::abi::kSpgemmEmptyKey) continue;
    const int seg = k / width;
    const int at = begin + hist[seg] + atomicAdd(fill + seg, 1);
    c_col[at] = k;
    c_val[at] = vals[off + s];
  }
}

// Each global row's table into C's row. hashed_pass 0: a dense row by its gridDim.y blocks, each
// scanning its segment of columns in order from the offset the segments before it counted
// (seg_count). hashed_pass 1: a hashed row's segments (spgemm_global_scatter put them in C's row),
// each sorted in dynamic shared memory (room for `width` pairs) by block y, y + gridDim.y, ...
template <typename V, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_global_sort(const int32_t* __restrict__ rows, int n, int n_always,
                       const dbsparse::abi::SpgemmTable* __restrict__ tables, const int* __restrict__ keys,
                       const V* __restrict__ vals, const int32_t* __restrict__ overflow,
                       const int32_t* __restrict__ c_ptr, int32_t* __restrict__ c_col, V* __restrict__ c_val,
                       int b_cols, const int32_t* __restrict__ seg_count, int width, int segs,
                       const int32_t* __restrict__ seg_hist, int hashed_pass, int32_t* row_len) {
  extern __shared__ double spgemm_sort_smem[];  // 8-byte aligned: values (f64) first
  __shared__ int base;
  int i;
  const int p = blockIdx.x;
  if (!spgemm_global_row_runs(rows, n, n_always, overflow, p, &i)) return;
  // Two launches: the dense rows' segments without dynamic shared memory (asking 196 KB for the
  // hashed rows' sort left one block per SM for them: docs/decisions/spgemm-kernel-design.md), then
  // the hashed rows with it.
  if (spgemm_dense_row(tables[p].slots, b_cols) == (hashed_pass != 0)) return;
  if (!hashed_pass) {
    const long long off = tables[p].offset;
    if (threadIdx.x == 0) {
      int b = c_ptr[i];
      for (unsigned q = 0; q < blockIdx.y; ++q) b += seg_count[(long long)p * gridDim.y + q];
      base = b;
      // The row's length (as spgemm_global_scan's for hashed rows), from the last segment's block.
      if (blockIdx.y + 1 == gridDim.y) row_len[i] = b - c_ptr[i] + seg_count[(long long)p * gridDim.y + blockIdx.y];
    }
    __syncthreads();
    spgemm_dense_write<V, BLOCK, false>(keys + off, vals + off, spgemm_segment(b_cols, blockIdx.y),
                                        spgemm_segment(b_cols, blockIdx.y + 1), base, c_col, c_val);
    return;
  }
  V* sv = (V*)spgemm_sort_smem;
  int* sk = (int*)(sv + width);
  const int32_t* hist = seg_hist + (long long)p * segs;
  const int begin = c_ptr[i], len = row_len[i];  // c_ptr[i + 1] - begin but in a one-pass first run
  for (int seg = blockIdx.y; seg < segs; seg += gridDim.y) {
    const int lo = hist[seg], cnt = (seg + 1 < segs ? hist[seg + 1] : len) - lo;  // <= width: distinct columns
    if (cnt <= 1) continue;                                                       // the same on every thread
    unsigned p2 = 1;
    while (p2 < (unsigned)cnt) p2 <<= 1;
    for (unsigned s = threadIdx.x; s < p2; s += BLOCK) {
      if (s < (unsigned)cnt) {
        sk[s] = c_col[begin + lo + s];
        sv[s] = c_val[begin + lo + s];
      } else {
        sk[s] = dbsparse::abi::kSpgemmEmptyKey;
      }
    }
    __syncthreads();
    spgemm_bitonic<V>(sk, sv, p2, threadIdx.x, BLOCK);
    for (int j = threadIdx.x; j < cnt; j += BLOCK) {
      c_col[begin + lo + j] = sk[j];
      c_val[begin + lo + j] = sv[j];
    }
    __syncthreads();  // sk/sv are refilled for the next segment
  }
}

}  // namespace dbs

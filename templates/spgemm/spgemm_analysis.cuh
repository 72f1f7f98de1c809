// Hash SpGEMM's analysis on the GPU (phases 1, 2 and 4 of include/dbsparse/spgemm.hpp), so that a
// fresh product reads back two small structs instead of running O(nnz) loops on the host:
//  spgemm_analyse_rows   IP per row, its code (abi/spgemm.h: group, may overflow), and per group
//                        the rows and products, the max IP and the global tables' slots (SpgemmStats);
//                        also checks A's and B's columns and row_ptr ends (a bad input is a
//                        UsageError on the host, not a wild write here).
//  spgemm_scatter_rows   each row's id into its group's list and, for group 3 and the rows that
//                        may overflow, into the global list with its table's place (SpgemmTable).
//  spgemm_tile_sums, spgemm_scan_tiles, spgemm_row_ptr
//                        C's row_ptr from the symbolic phase's row lengths, nnz(C) in int64
//                        (and, for a one-pass first run, the rows' offsets by IP).
//  spgemm_compact_rows   a one-pass first run's rows moved from their IP offsets into C, a warp per
//                        256 of C's entries.
// The module (codegen/keys/spgemm_key.cpp) also compiles graph contraction's factors
// (templates/apps/contract_factors.cuh), whose counts the scan above turns into row pointers; this
// header does not include them: the apps depend on SpGEMM, not the other way.
// Counters are warp- or block-aggregated: one atomic per warp (scatter) or per block (counts).
// Rows land in a list in whatever order the atomics give; a row's values do not depend on where it
// is in its list (one thread group computes the whole row), so C does not either.
#pragma once
#include "dbs_common.cuh"
#include "spgemm_scan.cuh"
#include "dbsparse/abi/abi_types.h"
#include "dbsparse/abi/spgemm.h"

namespace dbs {

// IP of row i (-1: none) for the calling thread; every lane of the warp calls it. A row of more
// than 32 entries is summed by the whole warp: a thread per row left a power-law hub's 2000-entry
// row to one thread (docs/decisions/spgemm-kernel-design.md). *bad: a column of A outside [0, a_cols) (then that entry counts nothing).
__device__ __forceinline__ long long spgemm_row_ip(int i, const int32_t* __restrict__ a_ptr,
                                                   const int32_t* __restrict__ a_col, int a_cols,
                                                   const int32_t* __restrict__ b_ptr, bool* bad) {
  const int lane = threadIdx.x & 31;
  int begin = 0, end = 0;
  if (i >= 0) {
    begin = a_ptr[i];
    end = a_ptr[i + 1];
  }
  const bool wide = end - begin > 32;
  long long ip = 0;
  bool b = false;
  if (!wide)
    for (int p = begin; p < end; ++p) {
      const int k = a_col[p];
      if ((unsigned)k >= (unsigned)a_cols) {
        b = true;
        continue;
      }
      ip += b_ptr[k + 1] - b_ptr[k];
    }
  for (unsigned m = __ballot_sync(kFull, wide); m; m &= m - 1) {
    const int src = __ffs(m) - 1;
    const int rb = __shfl_sync(kFull, begin, src), re = __shfl_sync(kFull, end, src);
    long long s = 0;
    bool wb = false;
    for (int p = rb + lane; p < re; p += 32) {
      const int k = a_col[p];
      if ((unsigned)k >= (unsigned)a_cols) {
        wb = true;
        continue;
      }
      s += b_ptr[k + 1] - b_ptr[k];
    }
    s = spgemm_warp_sum(s);
    wb = __any_sync(kFull, wb);
    if (lane == src) {
      ip = s;
      b = wb;
    }
  }
  *bad = b;
  return ip;
}

// One thread per row of A (the grid covers the rows; its threads also stride over B's columns).
// Block sums in shared memory, then one atomic per block and counter.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_analyse_rows(const int32_t* __restrict__ a_ptr, const int32_t* __restrict__ a_col, int rows, int a_cols,
                        long long a_nnz, const int32_t* __restrict__ b_ptr, const int32_t* __restrict__ b_col,
                        long long b_nnz, dbsparse::abi::SpgemmGroupRule rule, int8_t* __restrict__ code,
                        int32_t* __restrict__ ip_row, dbsparse::abi::SpgemmStats* stats) {
  using namespace dbsparse::abi;
  constexpr int W = BLOCK / 32;
  // Per warp: products of groups 0-3, the global tables' slots, the max IP.
  __shared__ long long part[6][W];
  __shared__ int counts[6][W];  // rows of groups 0-3, idle rows, rows that may overflow
  __shared__ int gmax[3][W];    // the largest IP of groups 0-2 (< b2, an int)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  int c = kSpgemmIdleRow;
  bool bad = false;
  const long long ip = spgemm_row_ip(i < rows ? i : -1, a_ptr, a_col, a_cols, b_ptr, &bad);
  if (i < rows) {
    if (bad) atomicMin(&stats->first_bad_a, (unsigned)i);
    c = spgemm_row_code(ip, rule);
    code[i] = (int8_t)c;
    ip_row[i] = ip < 0x7fffffffll ? (int32_t)ip : 0x7fffffff;  // the one-pass first run's offsets (<= 2^31-1 then)
  }
  const long long stride = (long long)gridDim.x * BLOCK;
  for (long long q = i; q < b_nnz; q += stride)
    if ((unsigned)b_col[q] >= (unsigned)rule.b_cols)
      atomicMin((unsigned long long*)&stats->first_bad_b, (unsigned long long)q);
  if (i == 0) {
    if (a_ptr[0] != 0 || a_ptr[rows] != a_nnz) atomicOr(&stats->bad_ptr, 1);
    if (b_ptr[0] != 0 || b_ptr[a_cols] != b_nnz) atomicOr(&stats->bad_ptr, 2);
  }
  const int g = c < 0 ? -1 : c & 3;
  const bool in_global = g == kSpgemmGlobalGroup || (c >= 0 && (c & kSpgemmMayOverflow));
  const long long slots = in_global ? spgemm_table_slots(ip, rule.b_cols, rule.global_scale) : 0;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const long long s = spgemm_warp_sum(g == q ? ip : 0);
    const int n = __popc(__ballot_sync(kFull, g == q));
    if (lane == 0) {
      part[q][warp] = s;
      counts[q][warp] = n;
    }
    if (q < 3) {
      const long long m = spgemm_warp_max(g == q ? ip : 0);
      if (lane == 0) gmax[q][warp] = (int)m;
    }
  }
  const long long sl = spgemm_warp_sum(slots), mx = spgemm_warp_max(ip);
  const int idle = __popc(__ballot_sync(kFull, i < rows && c < 0));
  const int may = __popc(__ballot_sync(kFull, c >= 0 && (c & kSpgemmMayOverflow)));
  if (lane == 0) {
    part[4][warp] = sl;
    part[5][warp] = mx;
    counts[4][warp] = idle;
    counts[5][warp] = may;
  }
  __syncthreads();
  if (threadIdx.x >= 6 && threadIdx.x < 9) {  // beside the sums below (every block has 32 threads)
    const int q = threadIdx.x - 6;
    int m = 0;
    for (int w = 0; w < W; ++w) m = gmax[q][w] > m ? gmax[q][w] : m;
    if (m) atomicMax(&stats->group_max_ip[q], m);
  }
  if (threadIdx.x < 6) {
    const int q = threadIdx.x;
    long long s = 0;
    int n = 0;
    for (int w = 0; w < W; ++w) {
      s = q == 5 ? (part[q][w] > s ? part[q][w] : s) : s + part[q][w];
      n += counts[q][w];
    }
    if (q < 4) {
      if (s) atomicAdd((unsigned long long*)&stats->ip[q], (unsigned long long)s);
      if (n) atomicAdd(&stats->rows[q], n);
    } else if (q == 4) {
      if (s) atomicAdd((unsigned long long*)&stats->global_slots, (unsigned long long)s);
      if (n) atomicAdd(&stats->idle, n);
    } else {
      if (s) atomicMax((unsigned long long*)&stats->max_ip, (unsigned long long)s);
      if (n) atomicAdd(&stats->may_overflow, n);
    }
  }
}

// One thread per row: its id to list + list_off[g] + (a place taken from cursor[g]), one atomic
// per warp and list. Global rows (group 3 at [0, n_group3), rows that may overflow after them)
// also take their table's slots from table_cursor, one atomic per warp. IP is recomputed for those
// rows only, from A and B's row pointers (cheaper than keeping an int64 per row).
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_scatter_rows(const int8_t* __restrict__ code, int rows, const int32_t* __restrict__ a_ptr,
                        const int32_t* __restrict__ a_col, const int32_t* __restrict__ b_ptr,
                        dbsparse::abi::SpgemmGroupRule rule, int list_off1, int list_off2, int n_group3,
                        int32_t* __restrict__ list, int32_t* __restrict__ global_list,
                        dbsparse::abi::SpgemmTable* __restrict__ tables, dbsparse::abi::SpgemmStats* stats) {
  using namespace dbsparse::abi;
  const int lane = threadIdx.x & 31;
  const unsigned below = (1u << lane) - 1u;
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  const int c = i < rows ? code[i] : kSpgemmIdleRow;
  const int g = c < 0 ? -1 : c & 3;
  const int off[3] = {0, list_off1, list_off2};
  // A warp's rows of one list: the lowest such lane takes the places, the others count from it.
  auto place = [&](bool mine, int* cursor) {
    const unsigned m = __ballot_sync(kFull, mine);
    if (!m) return -1;
    const int leader = __ffs(m) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(cursor, __popc(m));
    base = __shfl_sync(kFull, base, leader);
    return mine ? base + __popc(m & below) : -1;
  };
#pragma unroll
  for (int q = 0; q < 3; ++q) {
    const int at = place(g == q, &stats->cursor[q]);
    if (at >= 0) list[off[q] + at] = i;
  }
  int at = place(g == kSpgemmGlobalGroup, &stats->cursor[kSpgemmGlobalGroup]);
  const int at_may = place(c >= 0 && (c & kSpgemmMayOverflow), &stats->cursor[kSpgemmGroups]);
  if (at_may >= 0) at = n_group3 + at_may;
  const bool global = at >= 0;
  if (!__any_sync(kFull, global)) return;
  bool bad = false;  // none: the host checked A's columns before launching this (check_inputs)
  const long long ip = spgemm_row_ip(global ? i : -1, a_ptr, a_col, 0x7fffffff, b_ptr, &bad);
  const long long slots = global ? spgemm_table_slots(ip, rule.b_cols, rule.global_scale) : 0;
  const long long incl = spgemm_warp_scan(slots, lane);
  unsigned long long base = 0;
  if (lane == 31) base = atomicAdd((unsigned long long*)&stats->table_cursor, (unsigned long long)incl);
  base = __shfl_sync(kFull, base, 31);
  if (global) {
    global_list[at] = i;
    tables[at].offset = (long long)base + incl - slots;
    tables[at].slots = slots;
    tables[at].ip = ip;
  }
}

// C's row_ptr from row lengths, in three passes over tiles of BLOCK * kSpgemmScanItems rows: the
// tiles' sums, their exclusive prefix (one block), each tile's rows. nnz(C) in int64 into
// stats->nnz, so the host finds a C over 2^31-1 before allocating it. Also counts the rows flagged
// as overflowed.
enum : int { kSpgemmScanItems = 4 };

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_tile_sums(const int32_t* __restrict__ row_len, const int32_t* __restrict__ overflow, int rows,
                     long long* __restrict__ tile_sum, dbsparse::abi::SpgemmStats* stats) {
  const long long first = (long long)blockIdx.x * BLOCK * kSpgemmScanItems;
  long long s = 0;
  int ovf = 0;
#pragma unroll
  for (int u = 0; u < kSpgemmScanItems; ++u) {
    const long long r = first + (long long)u * BLOCK + threadIdx.x;  // coalesced
    if (r < rows) {
      s += row_len[r];
      if (overflow) ovf += overflow[r] != 0;
    }
  }
  __shared__ int ovf_total;
  if (threadIdx.x == 0) ovf_total = 0;
  __syncthreads();
  const int n = (int)spgemm_warp_sum(ovf);
  if ((threadIdx.x & 31) == 0 && n) atomicAdd(&ovf_total, n);
  long long total;
  spgemm_block_scan<BLOCK>(s, &total);  // its barriers also order the shared atomics above
  if (threadIdx.x == 0) {
    tile_sum[blockIdx.x] = total;
    if (ovf_total) atomicAdd(&stats->overflowed, ovf_total);
  }
}

// One block: tile_sum becomes its exclusive prefix; stats->nnz the total.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_scan_tiles(long long* tile_sum, int tiles, dbsparse::abi::SpgemmStats* stats) {
  long long carry = 0;
  for (int base = 0; base < tiles; base += BLOCK) {
    const int t = base + threadIdx.x;
    const long long v = t < tiles ? tile_sum[t] : 0;
    long long total;
    const long long ex = spgemm_block_scan<BLOCK>(v, &total);
    if (t < tiles) tile_sum[t] = carry + ex;
    carry += total;
  }
  if (threadIdx.x == 0) stats->nnz = carry;
}

// c_ptr[r + 1] = the tile's offset + the prefix of row r's length within it; c_ptr[0] = 0. A
// thread takes kSpgemmScanItems consecutive rows. Past 2^31-1 the values wrap, but then the host
// throws before C is allocated or c_ptr read.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_row_ptr(const int32_t* __restrict__ row_len, int rows, const long long* __restrict__ tile_sum,
                   int32_t* __restrict__ c_ptr) {
  const long long first = ((long long)blockIdx.x * BLOCK + threadIdx.x) * kSpgemmScanItems;
  int len[kSpgemmScanItems];
  long long s = 0;
#pragma unroll
  for (int u = 0; u < kSpgemmScanItems; ++u) {
    len[u] = first + u < rows ? row_len[first + u] : 0;
    s += len[u];
  }
  long long total;
  long long at = tile_sum[blockIdx.x] + spgemm_block_scan<BLOCK>(s, &total);
#pragma unroll
  for (int u = 0; u < kSpgemmScanItems; ++u)
    if (first + u < rows) {
      at += len[u];
      c_ptr[first + u + 1] = (int32_t)at;
    }
  if (blockIdx.x == 0 && threadIdx.x == 0) c_ptr[0] = 0;
}

// A one-pass first run's rows (spgemm_numeric_shared_first) moved from their offsets by IP in the
// scratch arrays to C's (c_ptr from their lengths), balanced over C's entries: a warp per
// kSpgemmCompactPerWarp entries, so a hub row is spread over as many warps as its length asks. A
// group of 8 lanes a row left a power-law hub's 25K entries to one group, a long tail
// (docs/decisions/spgemm-kernel-design.md). An entry's row is the last r with c_ptr[r] <= e (empty rows share
// their offset with the next row, so the last is the one that holds e): two lanes search all of
// c_ptr for the warp's first and last rows, then each lane searches that span, starting from its
// previous entry's row (the entries of a lane ascend). Values move as raw words of val_bytes (4 or
// 8), so one module serves f32 and f64.
constexpr int kSpgemmCompactPerWarp = 256;

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    spgemm_compact_rows(int rows, int nnz, const int32_t* __restrict__ from_ptr, const int32_t* __restrict__ c_ptr,
                        const int32_t* __restrict__ from_col, const void* __restrict__ from_val,
                        int32_t* __restrict__ c_col, void* __restrict__ c_val, int val_bytes) {
  const int lane = threadIdx.x & 31;
  const long long base = (((long long)blockIdx.x * BLOCK + threadIdx.x) >> 5) * kSpgemmCompactPerWarp;
  if (base >= nnz) return;
  const int last = (int)min((long long)nnz, base + kSpgemmCompactPerWarp) - 1;
  int lo = 0;
  if (lane < 2) {
    const int e = lane == 0 ? (int)base : last;
    int hi = rows - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (c_ptr[mid] <= e)
        lo = mid;
      else
        hi = mid - 1;
    }
  }
  int r = __shfl_sync(0xffffffffu, lo, 0);
  const int r_last = __shfl_sync(0xffffffffu, lo, 1);
  for (int e = (int)base + lane; e <= last; e += 32) {
    int hi = r_last;
    while (r < hi) {
      const int mid = (r + hi + 1) >> 1;
      if (c_ptr[mid] <= e)
        r = mid;
      else
        hi = mid - 1;
    }
    const int j = from_ptr[r] + (e - c_ptr[r]);
    c_col[e] = from_col[j];
    if (val_bytes == 8)
      ((unsigned long long*)c_val)[e] = ((const unsigned long long*)from_val)[j];
    else
      ((unsigned*)c_val)[e] = ((const unsigned*)from_val)[j];
  }
}
}  // namespace dbs

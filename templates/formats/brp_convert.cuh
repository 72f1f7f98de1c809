// CSR -> BRP on the GPU (include/dbsparse/brp_device.hpp), arrays bitwise equal to csr_to_brp's.
// A thread per nonzero finds its place in its window's (column, row) order (brp_place; the ABI
// header says why by searches and not by a per-window sort); the scans over nonzeros
// (brp_scan.cuh) number the slots, groups, residual entries and residual rows; the fill kernels
// write each entry once. Plain C++ apart from the launch bounds and the thread indices: a cpu test
// runs these kernels on the host (one thread, grid-stride loops), so it uses no warp intrinsics.
#pragma once
#include "dbsparse/abi/brp_convert.h"
#include "dbsparse/abi/spmm.h"

namespace dbs {

using dbsparse::abi::BrpConvertArgs;
using dbsparse::abi::kBrpConvertBlock;
using dbsparse::abi::kSpmmBlockSlots;
using dbsparse::abi::kSpmmWindowRows;

// The row holding CSR entry p < nnz: the last row starting at or before p (so never an empty one).
__device__ __forceinline__ int brp_row_of(const int* row_ptr, int rows, int p) {
  int lo = 0, hi = rows;  // row_ptr[lo] <= p < row_ptr[hi]
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (row_ptr[mid] <= p)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// The first position in [b, e) whose column is >= c.
__device__ __forceinline__ int brp_lower_bound(const int* col, int b, int e, int c) {
  while (b < e) {
    const int mid = b + (e - b) / 2;
    if (col[mid] < c)
      b = mid + 1;
    else
      e = mid;
  }
  return b;
}

// Where entry p stands in its window: head = the window's entries with a smaller column (its
// condensed column's first sorted position, from the window's start), k = the rows above it that
// hold its column, count = the rows that do. CSR rows hold each column once, so these are exact.
struct BrpPlace {
  int row, w, ws, we;  // row, window, the window's CSR range [ws, we)
  int col, head, k, count;
};

__device__ __forceinline__ BrpPlace brp_place(const BrpConvertArgs& a, int p) {
  BrpPlace x;
  x.row = brp_row_of(a.row_ptr, a.rows, p);
  x.w = x.row / kSpmmWindowRows;
  const int r0 = x.w * kSpmmWindowRows, r1 = r0 + min(a.rows - r0, (int)kSpmmWindowRows);  // no int overflow
  x.ws = a.row_ptr[r0];
  x.we = a.row_ptr[r1];
  x.col = a.col_idx[p];
  x.head = 0;
  x.k = 0;
  x.count = 0;
  int b = x.ws;
  for (int r = r0; r < r1; ++r) {
    const int e = a.row_ptr[r + 1];
    int before;
    bool holds;
    if (r == x.row) {
      before = p - b;
      holds = true;
    } else if (b == e || a.col_idx[e - 1] < x.col) {  // the whole row is before it
      before = e - b;
      holds = false;
    } else {
      const int at = brp_lower_bound(a.col_idx, b, e, x.col);
      before = at - b;
      holds = a.col_idx[at] == x.col;
    }
    x.head += before;
    x.count += holds;
    if (r < x.row) x.k += holds;
    b = e;
  }
  return x;
}

// True when entry x fills a slot of a full group (else it is residual); slot = its slot in the
// window, counted over the window's condensed columns in order. csr_to_brp's rules: a column's
// last count % f entries and the slots after the window's last full group of 8g are residual.
template <int F, int G>
__device__ __forceinline__ bool brp_in_group(const BrpConvertArgs& a, const BrpPlace& x, int& slot) {
  constexpr int kSlots = kSpmmBlockSlots * G;
  const int s0 = a.slot_scan[x.ws];
  slot = a.slot_scan[x.ws + x.head] - s0 + x.k / F;
  const int window_slots = a.slot_scan[x.we] - s0;
  return x.k < x.count / F * F && slot < window_slots / kSlots * kSlots;
}

// A grid-stride loop over i in [0, n).
#define DBS_BRP_GRID_LOOP(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

// slot_scan (zeroed) at each condensed column's head: the column's full slots.
template <int F, int G>
__global__ void __launch_bounds__(kBrpConvertBlock) brp_conv_slots(const BrpConvertArgs a) {
  DBS_BRP_GRID_LOOP(i, a.nnz) {
    const int p = (int)i;
    const BrpPlace x = brp_place(a, p);
    if (x.k == 0) a.slot_scan[x.ws + x.head] = x.count / F;
  }
}

// A thread per window (no scratch per window): group_scan (zeroed) at the window's first sorted
// position, its full groups. slot_scan is scanned.
template <int F, int G>
__global__ void __launch_bounds__(kBrpConvertBlock) brp_conv_groups(const BrpConvertArgs a) {
  const int windows = (a.rows - 1) / kSpmmWindowRows + 1;  // rows > 0 here
  DBS_BRP_GRID_LOOP(i, windows) {
    const int r0 = (int)i * kSpmmWindowRows, r1 = r0 + min(a.rows - r0, (int)kSpmmWindowRows);
    const int ws = a.row_ptr[r0], we = a.row_ptr[r1];
    if (ws < we) a.group_scan[ws] = (a.slot_scan[we] - a.slot_scan[ws]) / (kSpmmBlockSlots * G);
  }
}

// res_scan[p] = 1 for the residual entries (and 0 past the end, for the scan's total).
template <int F, int G>
__global__ void __launch_bounds__(kBrpConvertBlock) brp_conv_classify(const BrpConvertArgs a) {
  DBS_BRP_GRID_LOOP(i, a.nnz) {
    const int p = (int)i;
    const BrpPlace x = brp_place(a, p);
    int slot;
    a.res_scan[p] = brp_in_group<F, G>(a, x, slot) ? 0 : 1;
    if (p == 0) a.res_scan[a.nnz] = 0;
  }
}

// Every entry to its place: a group's (local id, value, and the slot's column from its first entry,
// the group's window from its first) or the residual's (column and value, in CSR order, which is
// csr_to_brp's: rows ascending, columns ascending in a row). local_id and group_vals hold the
// padding already (kSpmmPadLocalId, 0). All scans are done.
template <typename T, int F, int G>
__global__ void __launch_bounds__(kBrpConvertBlock) brp_conv_fill(const BrpConvertArgs a) {
  constexpr int kSlots = kSpmmBlockSlots * G;
  const T* vals = static_cast<const T*>(a.vals);
  DBS_BRP_GRID_LOOP(i, a.nnz) {
    const int p = (int)i;
    const int at = a.res_scan[p];
    if (a.res_scan[p + 1] != at) {
      a.res_col[at] = a.col_idx[p];
      static_cast<T*>(a.res_vals)[at] = vals[p];
      continue;
    }
    const BrpPlace x = brp_place(a, p);
    int slot;
    brp_in_group<F, G>(a, x, slot);
    // check_brp_counts kept groups * stride within int32 before this launch.
    const int q = a.group_scan[x.ws] + slot / kSlots;
    const int s = slot % kSlots;
    const int e = s * F + x.k % F;
    a.local_id[q * a.local_stride + e] =
        (uint8_t)((x.row - x.w * kSpmmWindowRows) * kSpmmBlockSlots + s % kSpmmBlockSlots);
    static_cast<T*>(a.group_vals)[q * a.value_stride + e] = vals[p];
    if (x.k % F == 0) {
      a.old_col[q * kSlots + s] = x.col;
      if (s == 0) a.group_window[q] = x.w;
    }
  }
}

// row_scan[p] = 1 at each residual row's first residual entry. res_scan is scanned.
template <int B>
__global__ void __launch_bounds__(B) brp_conv_row_heads(const BrpConvertArgs a) {
  DBS_BRP_GRID_LOOP(i, a.nnz) {
    const int p = (int)i;
    const int at = a.res_scan[p];
    int first = 0;
    if (a.res_scan[p + 1] != at) first = at == a.res_scan[a.row_ptr[brp_row_of(a.row_ptr, a.rows, p)]];
    a.row_scan[p] = first;
    if (p == 0) a.row_scan[a.nnz] = 0;
  }
}

// res_rows_id and res_row_offset (res_rows + 1 entries). row_scan is scanned.
template <int B>
__global__ void __launch_bounds__(B) brp_conv_fill_rows(const BrpConvertArgs a) {
  DBS_BRP_GRID_LOOP(i, a.nnz) {
    const int p = (int)i;
    const int at = a.row_scan[p];
    if (a.row_scan[p + 1] != at) {
      a.res_rows_id[at] = brp_row_of(a.row_ptr, a.rows, p);
      a.res_row_offset[at] = a.res_scan[p];
    }
    if (p == 0) a.res_row_offset[a.res_rows] = a.res_scan[a.nnz];
  }
}

#undef DBS_BRP_GRID_LOOP

}  // namespace dbs

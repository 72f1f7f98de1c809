// The GPU conversion CSR -> BRP's host/kernel contract (docs/DESIGN.md §10): compiled by the host
// (runtime/formats/brp_device.cpp) and by NVRTC with templates/formats/brp_convert.cuh.
//
// The conversion keeps no per-window or per-row scratch, only arrays over the nonzeros, so that its
// peak extra memory is a multiple of nnz whatever the shape (a hypersparse matrix with millions of
// empty windows would otherwise pay for them). Each CSR entry p finds its place in its window's
// (column, row) order by binary searches over the window's <= 16 sorted rows: `head`, the number of
// the window's entries with a smaller column (where its condensed column starts), `k`, its rank in
// the column (the rows above it that hold the column) and `count`, the column's entries. The scans
// over nonzeros then give every slot, group and residual place.
#pragma once
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

constexpr int kBrpConvertBlock = 256;                           // threads per block of every conversion kernel
constexpr int kBrpScanItems = 4;                                // items per thread of the scans
constexpr int kBrpScanTile = kBrpConvertBlock * kBrpScanItems;  // items per block of the scans

// Every conversion kernel's only argument, by value. Sorted positions are window start + the rank
// in the window's (column, row) order; they span the same range as the window's CSR entries.
struct BrpConvertArgs {
  // The input CSR (rows + 1, nnz, nnz); vals is T (the key's value type).
  const int32_t* row_ptr;
  const int32_t* col_idx;
  const void* vals;
  // Scratch, nnz + 1 each, exclusive scans once scanned (the last entry is the total):
  int32_t* slot_scan;   // by sorted position: a condensed column's head holds its count / f
  int32_t* group_scan;  // by sorted position: a window's first holds its groups
  int32_t* res_scan;    // by CSR position: 1 where the entry goes to the residual
  int32_t* row_scan;    // by CSR position: 1 at a residual row's first residual entry (reuses slot_scan)
  // The output (brp.hpp), sized from the totals.
  int32_t* group_window;
  int32_t* old_col;
  uint8_t* local_id;
  void* group_vals;
  int32_t* res_rows_id;
  int32_t* res_row_offset;
  int32_t* res_col;
  void* res_vals;
  int32_t rows, nnz;
  int32_t local_stride, value_stride;
  int32_t res_rows;  // residual rows (known before the last pass)
  int32_t pad;
};
static_assert(sizeof(BrpConvertArgs) == 144, "BrpConvertArgs layout");
static_assert(DBS_ABI_OFFSETOF(BrpConvertArgs, rows) == 120 && DBS_ABI_OFFSETOF(BrpConvertArgs, res_rows) == 136,
              "BrpConvertArgs layout");

}  // namespace dbsparse::abi

#pragma once
// SpMM's staged windows (SpmmConfig::csr_stage_reuse, abi::SpmmStageArgs): runs of consecutive
// short rows, in the order the plan's warps take them, whose entries reuse their distinct columns
// at least min_reuse times on average, and whose distinct columns' rows of B fit a block's shared
// memory. Pure host code, O(rows + nnz): shared by runtime/spmm/spmm_spec.cpp and
// tests/cpu/ops/test_spmm_stage.cpp.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

struct SpmmStageWindows {
  // abi::SpmmStageArgs's arrays: win_row and win_col have one entry past the last window.
  std::vector<int32_t> win_row{0}, win_col{0}, cols, rows, ptr{0};
  std::vector<uint16_t> slot;
  std::vector<float> vals;
  // The rows left to csr_spmm_rows, in the order given but for a long row, which goes ahead of the
  // open window's rows (which join this list when the window closes unstaged).
  std::vector<int32_t> plain;
  int32_t windows() const { return static_cast<int32_t>(win_row.size()) - 1; }
  int64_t staged_entries() const { return static_cast<int64_t>(slot.size()); }
};

// order: the rows in the warps' order (empty: A's). A row joins the open window while the window
// has fewer than max_rows rows, the row has at most max_len entries, and the window's distinct
// columns stay within max_cols; else the window closes, staged when its entries over its distinct
// columns reach min_reuse and it has two rows or more, its rows left plain otherwise.
inline SpmmStageWindows spmm_stage_windows(const CsrMatrix<float>& a, const std::vector<int32_t>& order,
                                           double min_reuse, int32_t max_rows, int32_t max_len, int32_t max_cols) {
  SpmmStageWindows out;
  std::vector<int32_t> seen(static_cast<size_t>(a.cols), -1);  // the window that last counted a column
  std::vector<int32_t> open_rows, open_cols;
  int64_t open_entries = 0;
  int32_t window = 0;  // the open window's id (stamps in seen)
  auto close = [&] {
    const bool staged = open_rows.size() >= 2 && !open_cols.empty() &&
                        static_cast<double>(open_entries) >= min_reuse * static_cast<double>(open_cols.size());
    if (staged) {
      // A column's slot: its index among the window's columns, found through seen's stamp order.
      std::vector<int32_t> slot_of;  // parallel to open_cols
      for (size_t k = 0; k < open_cols.size(); ++k)
        seen[static_cast<size_t>(open_cols[k])] = -2 - static_cast<int32_t>(k);
      for (const int32_t r : open_rows) {
        out.rows.push_back(r);
        for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q) {
          out.slot.push_back(static_cast<uint16_t>(-2 - seen[static_cast<size_t>(a.col_idx[q])]));
          out.vals.push_back(a.values[q]);
        }
        out.ptr.push_back(static_cast<int32_t>(out.slot.size()));
      }
      out.cols.insert(out.cols.end(), open_cols.begin(), open_cols.end());
      out.win_row.push_back(static_cast<int32_t>(out.rows.size()));
      out.win_col.push_back(static_cast<int32_t>(out.cols.size()));
    } else {
      out.plain.insert(out.plain.end(), open_rows.begin(), open_rows.end());
    }
    open_rows.clear();
    open_cols.clear();
    open_entries = 0;
    ++window;
  };
  const int32_t n = a.rows;
  for (int32_t k = 0; k < n; ++k) {
    const int32_t r = order.empty() ? k : order[static_cast<size_t>(k)];
    const int32_t len = a.row_ptr[r + 1] - a.row_ptr[r];
    if (len > max_len || len > max_cols) {  // a long row never joins a window, and leaves the open one as it is
      out.plain.push_back(r);
      continue;
    }
    int32_t fresh = 0;
    for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q)
      fresh += seen[static_cast<size_t>(a.col_idx[q])] != window;
    // (a column twice in one row would count twice here: rows are sorted and unique, validate()'s rule)
    if (static_cast<int32_t>(open_rows.size()) >= max_rows ||
        static_cast<int64_t>(open_cols.size()) + fresh > max_cols) {
      close();
      fresh = len;
    }
    for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q) {
      int32_t& s = seen[static_cast<size_t>(a.col_idx[q])];
      if (s != window) s = window, open_cols.push_back(a.col_idx[q]);
    }
    open_rows.push_back(r);
    open_entries += len;
  }
  close();
  return out;
}

}  // namespace dbsparse

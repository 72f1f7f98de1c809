#pragma once
// A model of how many of the row gathers of SpMM (a row of B per stored entry) and SpMV (an entry
// of x per stored entry) L1 serves (`dbsparse reorder` prints it per order).
// The CSR kernels' blocks take runs of rows_per_block rows in the order, blocks go to the SMs in
// turn, and each SM's L1 keeps the items it read last (LRU). An item is a row of B, or the 32-byte
// sector holding it when rows are narrower (SpMV: 8 entries of x a sector; a row asks for each of
// its sectors once, as a warp's lanes share a sector in one load). Optionally the rows of B of the
// most frequent columns sit in shared memory instead (hub staging), with the rest of L1 for the
// others; or x is read in the columns' count order (SpMV's cols-degree: hubs share sectors).
// Why a model: an order or a staging scheme is worth building only if it moves gathers from L2 to
// the SM, and the CPU can count that for any matrix without a GPU. It ignores the warps'
// interleaving and L1's real policy; how close it comes to Nsight Compute's counts:
// docs/decisions/spmm-gather-l1-model.md. Why the L1 size matters: runtime/gpu/l1_carveout.hpp.
// Pure host code, O(nnz + cols), used by tools only (no plan reads it); it lives with the benches
// because it models what they measure. tests/cpu/ops/test_gather_l1_model.cpp checks it against a
// plain list LRU.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "dbsparse/matrix.hpp"
#include "runtime/spmv/spmv_column_order.hpp"

namespace dbsparse {

struct GatherL1Geometry {
  int32_t n_cols = 32;           // B's width (1: SpMV's x); an item is max(n_cols * 4, 32) bytes
  int32_t sms = 132;             // the largest sm_90 part's SMs
  int64_t l1_bytes = 256 << 10;  // L1 and shared memory share 256 KB an SM on sm_90
  int64_t staged_bytes = 0;      // shared memory for hub rows (taken from l1_bytes); 0: none
  int32_t rows_per_block = 16;   // the CSR kernel's warps a block times its rows a warp
  bool count_order = false;      // columns renumbered by decreasing count (SpMV's cols-degree)
};

struct GatherL1Counts {
  int64_t entries = 0;   // A's stored entries
  int64_t requests = 0;  // items asked for (entries, less a row's repeats of a sector)
  int64_t l1 = 0;        // requests L1 served
  int64_t staged = 0;    // requests the staged hub rows served
  int64_t item_bytes = 0;
  int64_t l2() const { return requests - l1 - staged; }
  // Shares of A's entries: what an SpMM's gathers (one item an entry) split into.
  double l1_share() const { return entries ? double(l1) / double(entries) : 0.0; }
  double staged_share() const { return entries ? double(staged) / double(entries) : 0.0; }
  double l2_share() const { return entries ? double(l2()) / double(entries) : 0.0; }
  double l2_bytes() const { return double(l2()) * double(item_bytes); }
};

// order: A's rows in the warps' order (empty: A's own).
template <class T>
GatherL1Counts gather_l1_model(const CsrMatrix<T>& a, const std::vector<int32_t>& order, const GatherL1Geometry& g) {
  GatherL1Counts out;
  out.entries = a.nnz();
  out.item_bytes = std::max<int64_t>(int64_t{4} * g.n_cols, 32);
  const int32_t per_item = static_cast<int32_t>(std::max<int64_t>(32 / (int64_t{4} * std::max(g.n_cols, 1)), 1));
  const int64_t staged_bytes = std::max<int64_t>(g.staged_bytes, 0);
  const int64_t hub_items = staged_bytes / out.item_bytes;
  const int64_t capacity = std::max<int64_t>(g.l1_bytes - staged_bytes, 0) / out.item_bytes;
  // The count order is SpMV's cols-degree numbering itself (ties to the smaller column): entry q's
  // column there is counted.col_idx[q]. Hub staging takes the hub_items columns it puts first.
  const bool need_order = g.count_order || hub_items > 0;
  const SpmvColumnOrder counted = need_order ? spmv_degree_column_order(a.cols, a.col_idx) : SpmvColumnOrder{};
  const int64_t items = (int64_t{a.cols} + per_item - 1) / per_item;
  // An item is a column (or a sector of per_item columns) in A's numbering or the count order's.
  auto item_of = [&](int32_t q) {
    return (g.count_order ? counted.col_idx[static_cast<size_t>(q)] : a.col_idx[static_cast<size_t>(q)]) / per_item;
  };
  auto is_hub = [&](int32_t q) { return hub_items > 0 && counted.col_idx[static_cast<size_t>(q)] < hub_items; };
  // One LRU list reused SM after SM (the SMs' L1s are independent): prev / next by item, -1 at
  // the ends; head the most recent.
  std::vector<int32_t> prev(static_cast<size_t>(items), -1), next(static_cast<size_t>(items), -1);
  std::vector<char> cached(static_cast<size_t>(items), 0);
  int32_t head = -1, tail = -1;
  int64_t size = 0;
  auto unlink = [&](int32_t c) {
    const size_t u = static_cast<size_t>(c);
    (prev[u] >= 0 ? next[static_cast<size_t>(prev[u])] : head) = next[u];
    (next[u] >= 0 ? prev[static_cast<size_t>(next[u])] : tail) = prev[u];
  };
  auto push_front = [&](int32_t c) {
    const size_t u = static_cast<size_t>(c);
    prev[u] = -1;
    next[u] = head;
    if (head >= 0) prev[static_cast<size_t>(head)] = c;
    head = c;
    if (tail < 0) tail = c;
  };
  std::vector<int32_t> row_items;
  std::vector<int64_t> asked(per_item > 1 ? static_cast<size_t>(items) : 0, -1);  // the row that last asked
  const int64_t rows = a.rows, per = std::max<int32_t>(g.rows_per_block, 1), sms = std::max<int32_t>(g.sms, 1);
  for (int64_t sm = 0; sm < sms; ++sm) {
    for (int64_t b = sm; b * per < rows; b += sms)
      for (int64_t i = b * per; i < std::min(rows, (b + 1) * per); ++i) {
        const int32_t r = order.empty() ? static_cast<int32_t>(i) : order[static_cast<size_t>(i)];
        row_items.clear();
        for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q) {
          if (is_hub(q)) {
            ++out.requests;
            ++out.staged;
          } else {
            const int32_t it = item_of(q);
            if (per_item > 1) {  // a row's repeats of a sector: one request, at its first entry
              if (asked[static_cast<size_t>(it)] == i) continue;
              asked[static_cast<size_t>(it)] = i;
            }
            row_items.push_back(it);
          }
        }
        for (const int32_t it : row_items) {
          const size_t u = static_cast<size_t>(it);
          ++out.requests;
          if (cached[u]) {
            ++out.l1;
            unlink(it);
            push_front(it);
          } else if (capacity > 0) {
            cached[u] = 1;
            push_front(it);
            if (++size > capacity) {
              const int32_t old = tail;
              unlink(old);
              cached[static_cast<size_t>(old)] = 0;
              --size;
            }
          }
        }
      }
    for (int32_t c = head; c >= 0; c = next[static_cast<size_t>(c)]) cached[static_cast<size_t>(c)] = 0;
    head = tail = -1;
    size = 0;
  }
  return out;
}

}  // namespace dbsparse

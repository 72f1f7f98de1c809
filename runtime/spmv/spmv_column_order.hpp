#pragma once
// SpMV's column order (SpmvConfig::reorder = degree): A's columns renumbered by decreasing entry
// count, so that x's entries the rows read most sit together and share cache lines (on a
// scrambled power-law graph the hubs' x entries are spread over the whole vector otherwise).
// The plan keeps A's rows and y in the user's order and gathers x into the new order each call
// (spmv_gather.cuh): y = A x = (A Q)(Q^T x).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

struct SpmvColumnOrder {
  std::vector<int32_t> order;    // new column -> the user's column (what the gather reads)
  std::vector<int32_t> col_idx;  // A's entries' columns in the new numbering, entry for entry
};

// The passes over A's entries below are the plan's host cost (a scrambled R-MAT 20, 31M entries:
// ~170 ms on one slow core), so they are split over threads: part t of `parts` takes entries
// [n t / parts, n (t + 1) / parts). Whatever can throw (allocation) happens before the threads start.
inline int column_order_parts(size_t n) {
  const auto cores = static_cast<size_t>(std::max(1u, std::thread::hardware_concurrency()));
  return static_cast<int>(std::clamp<size_t>(std::min(cores, n >> 20), 1, 16));  // >= 1M entries a part
}

template <class F>
void for_column_order_parts(size_t n, int parts, F&& f) {
  if (parts <= 1) return f(size_t{0}, n, 0);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(parts) - 1);
  for (int t = 1; t < parts; ++t) threads.emplace_back([&f, n, parts, t] { f(n * t / parts, n * (t + 1) / parts, t); });
  f(0, n / parts, 0);
  for (auto& th : threads) th.join();
}

// Entries per column: the one pass over A's entries that both reorder auto's feature and the
// degree order need (a plan makes it once for both).
inline std::vector<int32_t> spmv_column_counts(int32_t cols, const std::vector<int32_t>& col_idx, int parts = 0) {
  const auto ncols = static_cast<size_t>(std::max(cols, 0));
  // A count array a part: no more of them than A has entries a column, so they never hold more
  // than col_idx itself (a wide, sparse A counts on one thread).
  if (parts <= 0)
    parts = std::max(1, std::min(column_order_parts(col_idx.size()),
                                 static_cast<int>(std::min<size_t>(16, col_idx.size() / std::max<size_t>(ncols, 1)))));
  std::vector<std::vector<int32_t>> part(static_cast<size_t>(parts), std::vector<int32_t>(ncols, 0));
  for_column_order_parts(col_idx.size(), parts, [&](size_t first, size_t end, int t) {
    auto& count = part[static_cast<size_t>(t)];
    for (size_t p = first; p < end; ++p) ++count[static_cast<size_t>(col_idx[p])];
  });
  for (size_t t = 1; t < part.size(); ++t)
    for (size_t c = 0; c < ncols; ++c) part[0][c] += part[t][c];
  return std::move(part[0]);
}

// Columns by decreasing count, ties in the user's order: a counting sort, O(nnz + cols). `count`:
// spmv_column_counts of these entries.
inline SpmvColumnOrder spmv_degree_column_order(const std::vector<int32_t>& count,
                                                const std::vector<int32_t>& col_idx) {
  const auto cols = static_cast<int32_t>(count.size());
  int32_t most = 0;
  for (int32_t k : count) most = std::max(most, k);
  // start[k]: the first new index of the columns with `most - k` entries.
  std::vector<int64_t> start(static_cast<size_t>(most) + 2, 0);
  for (int32_t c = 0; c < cols; ++c) ++start[static_cast<size_t>(most - count[static_cast<size_t>(c)]) + 1];
  for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
  SpmvColumnOrder out;
  out.order.resize(static_cast<size_t>(cols));
  std::vector<int32_t> renumber(static_cast<size_t>(cols));
  for (int32_t c = 0; c < cols; ++c) {
    const auto slot = static_cast<int32_t>(start[static_cast<size_t>(most - count[static_cast<size_t>(c)])]++);
    out.order[static_cast<size_t>(slot)] = c;
    renumber[static_cast<size_t>(c)] = slot;
  }
  out.col_idx.resize(col_idx.size());
  for_column_order_parts(col_idx.size(), column_order_parts(col_idx.size()), [&](size_t first, size_t end, int) {
    for (size_t p = first; p < end; ++p) out.col_idx[p] = renumber[static_cast<size_t>(col_idx[p])];
  });
  return out;
}

inline SpmvColumnOrder spmv_degree_column_order(int32_t cols, const std::vector<int32_t>& col_idx) {
  return spmv_degree_column_order(spmv_column_counts(cols, col_idx), col_idx);
}

// The share of `nnz` entries in the `top` most frequent columns, for each top of `tops`
// (ascending), from the columns' counts: no order changes it. Those columns' entries of x (SpMV)
// or rows of B (SpMM) are read that much of the time: what an L1 or a staged set of hubs would
// serve. O(cols log max(tops)).
inline std::vector<double> top_count_shares(std::vector<int32_t> count, int64_t nnz, const std::vector<int64_t>& tops) {
  const auto most =
      static_cast<size_t>(std::clamp<int64_t>(tops.empty() ? 0 : tops.back(), 0, static_cast<int64_t>(count.size())));
  std::partial_sort(count.begin(), count.begin() + static_cast<std::ptrdiff_t>(most), count.end(), std::greater<>());
  std::vector<double> out;
  int64_t sum = 0;
  size_t k = 0;
  for (const int64_t top : tops) {
    for (; k < most && static_cast<int64_t>(k) < top; ++k) sum += count[k];
    out.push_back(nnz <= 0 ? 0.0 : static_cast<double>(sum) / static_cast<double>(nnz));
  }
  return out;
}

// The same from A's entries. O(nnz + cols log max(tops)).
inline std::vector<double> top_column_shares(int32_t cols, const std::vector<int32_t>& col_idx,
                                             const std::vector<int64_t>& tops) {
  return top_count_shares(spmv_column_counts(cols, col_idx), static_cast<int64_t>(col_idx.size()), tops);
}

// reorder auto's skew feature: the share of one top.
inline double spmv_top_column_share(int32_t cols, const std::vector<int32_t>& col_idx, int64_t top) {
  return top_column_shares(cols, col_idx, {top}).front();
}

}  // namespace dbsparse

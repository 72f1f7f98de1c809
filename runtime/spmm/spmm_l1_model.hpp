#pragma once
// A model of how many of SpMM's B-row gathers L1 serves (issue 35's analysis; `dbsparse reorder`
// prints it per order). The CSR kernel's warps take A's rows in an order, runs of rows_per_block
// consecutive rows to a block and blocks to the SMs in turn; each SM's L1 keeps the rows of B it
// read last (LRU over whole rows of B). Optionally the rows of B of the most frequent columns sit
// in shared memory instead (hub staging), served there, with the rest through what is left of L1.
// Why a model: an order or a staging scheme is worth building only if it moves gathers from L2 to
// the SM, and the CPU can count that for any matrix while the H200 is not lent. It ignores the
// warps' interleaving and L1's real policy: on R-MAT 17 scrambled at N = 32 in the degree order it
// gives 26.6% hits at 256 KB where Nsight Compute measured 31% L1 hits (s24 run 1, H200).
// Pure host code, O(nnz + cols log cols); tests/cpu/ops/test_spmm_l1_model.cpp checks it against a
// plain list LRU.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

struct SpmmL1Shares {
  double l1 = 0;      // gathers L1 serves
  double staged = 0;  // gathers the staged hub rows serve
  double l2() const { return 1.0 - l1 - staged; }
};

struct SpmmL1Geometry {
  int32_t n_cols = 32;          // B's width: a row of B is n_cols * 4 bytes (at least a 32-byte sector)
  int32_t sms = 132;            // H200
  int64_t l1_bytes = 256 << 10;  // L1 and shared memory share 256 KB an SM on sm_90
  int64_t staged_bytes = 0;     // shared memory for hub rows (taken from l1_bytes); 0: none
  int32_t rows_per_block = 16;  // the CSR kernel's warps a block times its rows a warp
};

// order: A's rows in the warps' order (empty: A's own).
template <class T>
SpmmL1Shares spmm_l1_model(const CsrMatrix<T>& a, const std::vector<int32_t>& order, const SpmmL1Geometry& g) {
  const int64_t row_bytes = std::max<int64_t>(int64_t{4} * g.n_cols, 32);
  const int64_t hub_rows = std::max<int64_t>(g.staged_bytes, 0) / row_bytes;
  const int64_t capacity = std::max<int64_t>(g.l1_bytes - std::max<int64_t>(g.staged_bytes, 0), 0) / row_bytes;
  const size_t cols = static_cast<size_t>(a.cols);
  std::vector<char> hub(cols, 0);
  if (hub_rows > 0) {
    std::vector<int64_t> count(cols, 0);
    for (const int32_t c : a.col_idx) ++count[static_cast<size_t>(c)];
    std::vector<int32_t> by(cols);
    std::iota(by.begin(), by.end(), 0);
    const size_t k = static_cast<size_t>(std::min<int64_t>(hub_rows, a.cols));
    std::partial_sort(by.begin(), by.begin() + static_cast<std::ptrdiff_t>(k), by.end(), [&](int32_t x, int32_t y) {
      return count[static_cast<size_t>(x)] != count[static_cast<size_t>(y)] ? count[static_cast<size_t>(x)] > count[static_cast<size_t>(y)]
                                                                            : x < y;
    });
    for (size_t i = 0; i < k; ++i) hub[static_cast<size_t>(by[i])] = 1;
  }
  // One LRU list reused SM after SM (the SMs' L1s are independent): prev / next by column, -1 at
  // the ends; head the most recent.
  std::vector<int32_t> prev(cols, -1), next(cols, -1);
  std::vector<char> cached(cols, 0);
  int32_t head = -1, tail = -1;
  int64_t size = 0, l1 = 0, staged = 0;
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
  const int64_t rows = a.rows, per = std::max<int32_t>(g.rows_per_block, 1), sms = std::max<int32_t>(g.sms, 1);
  for (int64_t sm = 0; sm < sms; ++sm) {
    for (int64_t b = sm; b * per < rows; b += sms)
      for (int64_t i = b * per; i < std::min(rows, (b + 1) * per); ++i) {
        const int32_t r = order.empty() ? static_cast<int32_t>(i) : order[static_cast<size_t>(i)];
        for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q) {
          const int32_t c = a.col_idx[q];
          const size_t u = static_cast<size_t>(c);
          if (hub[u]) {
            ++staged;
          } else if (cached[u]) {
            ++l1;
            unlink(c);
            push_front(c);
          } else if (capacity > 0) {
            cached[u] = 1;
            push_front(c);
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
  const double nnz = static_cast<double>(std::max<int64_t>(a.nnz(), 1));
  return {static_cast<double>(l1) / nnz, static_cast<double>(staged) / nnz};
}

}  // namespace dbsparse

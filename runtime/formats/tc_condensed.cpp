// Condensed tensor-core windows (include/dbsparse/tc_condensed.hpp): CSR to zero-padded 16 x 8
// tiles in mma fragment order, on the host, in two passes over each window (its columns, then its
// entries).
#include "dbsparse/tc_condensed.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/half.hpp"

namespace dbsparse {

namespace {

constexpr int kRows = abi::kSpmmWindowRows, kSlots = abi::kSpmmBlockSlots;

int32_t window_count(int32_t rows) { return (rows + kRows - 1) / kRows; }

// 32-bit words a group's tiles take: g m16n8k8 operands (f32), ceil(g / 2) m16n8k16 ones (16 bits).
int64_t group_words(int g, SpmmDtype d) { return int64_t{d == SpmmDtype::F32 ? g : abi::spmm_k16_pairs(g)} * 32 * 4; }

uint16_t to_16(float x, SpmmDtype d) { return d == SpmmDtype::F16 ? float_to_half(x) : float_to_bf16(x); }
float from_16(uint16_t h, SpmmDtype d) { return d == SpmmDtype::F16 ? half_to_float(h) : bf16_to_float(h); }

// Window w's distinct columns, in the order first met, into `cols`; `mark` (a.cols entries, all
// zero outside a call) is left as it was found.
void window_distinct(const CsrMatrix<float>& a, int32_t w, std::vector<uint8_t>& mark, std::vector<int32_t>& cols) {
  const int32_t r0 = w * kRows, r1 = std::min(a.rows, r0 + kRows);
  cols.clear();
  for (int32_t p = a.row_ptr[r0]; p < a.row_ptr[r1]; ++p) {
    const int32_t c = a.col_idx[p];
    if (!mark[c]) {
      mark[c] = 1;
      cols.push_back(c);
    }
  }
  for (int32_t c : cols) mark[c] = 0;
}

int64_t window_entries(const CsrMatrix<float>& a, int32_t w) {
  return a.row_ptr[std::min(a.rows, w * kRows + kRows)] - a.row_ptr[w * kRows];
}

}  // namespace

uint32_t tf32_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7F800000u) == 0x7F800000u) return (u & 0x007FFFFFu) ? (u | 0x00400000u) & 0xFFFFE000u : u;
  return (u + 0x1000u) & 0xFFFFE000u;  // magnitude rounded half up: ties away from zero
}

namespace {
// The condensed windows' own check: BRP's named BRP ("BRP g = 0") for a condensed input.
void check_condensed_g(int g) {
  if (g != 1 && g != 2 && g != 4 && g != 8)
    throw UsageError(fmt::format("condensed TC windows g = {}: allowed 1, 2, 4, 8 (tiles a group)", g));
}
}  // namespace

double condensed_fill(const CsrMatrix<float>& a, int g, int32_t max_windows) {
  validate(a);
  check_condensed_g(g);
  std::vector<uint8_t> seen(static_cast<size_t>(a.cols), 0);
  std::vector<int32_t> touched;
  int64_t groups = 0, entries = 0;
  const int32_t windows = window_count(a.rows);
  const int64_t step = max_windows > 0 && windows > max_windows ? (windows + max_windows - 1) / max_windows : 1;
  const int64_t per_group = int64_t{kSlots} * g;
  for (int64_t wl = 0; wl < windows; wl += step) {
    const int32_t w = static_cast<int32_t>(wl);
    window_distinct(a, w, seen, touched);
    groups += (static_cast<int64_t>(touched.size()) + per_group - 1) / per_group;
    entries += window_entries(a, w);
  }
  return groups ? double(entries) / (double(groups) * g * 128.0) : 0.0;
}

CondensedTc csr_to_condensed(const CsrMatrix<float>& a, int g, SpmmDtype dtype) {
  validate(a);
  check_condensed_g(g);
  CondensedTc m;
  m.rows = a.rows;
  m.cols = a.cols;
  m.g = g;
  m.dtype = dtype;
  m.nnz = a.nnz();
  const int32_t windows = window_count(a.rows);
  const int per_group = kSlots * g;
  const int64_t words = group_words(g, dtype);
  m.win_group.assign(static_cast<size_t>(windows) + 1, 0);
  std::vector<int32_t> slot_of(static_cast<size_t>(a.cols), -1), cols;
  std::vector<uint8_t> seen(static_cast<size_t>(a.cols), 0);
  // First each window's columns (kept for the second pass, ~1 int a slot) and the group counts,
  // so that every array is sized once and checked against int32.
  std::vector<int32_t> all_cols;
  std::vector<int64_t> col_at(static_cast<size_t>(windows) + 1, 0);
  int64_t groups = 0;
  for (int32_t w = 0; w < windows; ++w) {
    window_distinct(a, w, seen, cols);
    std::sort(cols.begin(), cols.end());
    all_cols.insert(all_cols.end(), cols.begin(), cols.end());
    col_at[static_cast<size_t>(w) + 1] = static_cast<int64_t>(all_cols.size());
    groups += (static_cast<int64_t>(cols.size()) + per_group - 1) / per_group;
    m.win_group[static_cast<size_t>(w) + 1] = static_cast<int32_t>(std::min<int64_t>(groups, INT32_MAX));
  }
  const int64_t limit = std::numeric_limits<int32_t>::max();
  if (groups * per_group > limit || groups * words > limit)
    throw UsageError(fmt::format(
        "condensed TC windows: {} groups of g = {} need {} slots and {} tile words, past int32 indexing; use the "
        "BRP or CSR path",
        groups, g, groups * per_group, groups * words));
  m.group_window.resize(static_cast<size_t>(groups));
  m.old_col.resize(static_cast<size_t>(groups * per_group));
  m.afrag.assign(static_cast<size_t>(groups * words), 0u);
  uint16_t* halves = reinterpret_cast<uint16_t*>(m.afrag.data());
  // Then every entry straight to its word: validate() made a row's columns unique, so no two
  // entries share a place and there is nothing to sum.
  for (int32_t w = 0; w < windows; ++w) {
    const int32_t* wc = all_cols.data() + col_at[w];
    const size_t ncols = static_cast<size_t>(col_at[static_cast<size_t>(w) + 1] - col_at[w]);
    const int32_t q0 = m.win_group[w], nq = m.win_group[static_cast<size_t>(w) + 1] - q0;
    for (size_t s = 0; s < ncols; ++s) slot_of[wc[s]] = static_cast<int32_t>(s);
    const size_t slots = static_cast<size_t>(nq) * per_group;
    for (size_t s = 0; s < slots; ++s)
      m.old_col[static_cast<size_t>(q0) * per_group + s] = s < ncols ? wc[s] : wc[ncols - 1];
    for (int32_t q = q0; q < q0 + nq; ++q) m.group_window[q] = w;
    m.used_blocks += (static_cast<int64_t>(ncols) + kSlots - 1) / kSlots;
    const int32_t r0 = w * kRows, r1 = std::min(a.rows, r0 + kRows);
    for (int32_t r = r0; r < r1; ++r)
      for (int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) {
        const int32_t s = slot_of[a.col_idx[p]];
        const int64_t q = q0 + s / per_group;
        const int b = (s % per_group) / kSlots, lid = (r - r0) * kSlots + s % kSlots;
        if (dtype == SpmmDtype::F32)
          m.afrag[static_cast<size_t>(q * words + abi::brp_afrag_index(lid, b * kSlots, 1))] = tf32_bits(a.values[p]);
        else
          halves[static_cast<size_t>(2 * q * words + abi::brp_afrag16_index(lid, b * kSlots, 1))] =
              to_16(a.values[p], dtype);
      }
    for (size_t s = 0; s < ncols; ++s) slot_of[wc[s]] = -1;
  }
  return m;
}

std::vector<float> condensed_to_dense(const CondensedTc& m) {
  std::vector<float> d(static_cast<size_t>(m.rows) * static_cast<size_t>(m.cols), 0.0f);
  const int per_group = kSlots * m.g;
  const int64_t words = group_words(m.g, m.dtype);
  const uint16_t* halves = reinterpret_cast<const uint16_t*>(m.afrag.data());
  for (int64_t q = 0; q < m.groups(); ++q) {
    const int32_t w = m.group_window[static_cast<size_t>(q)];
    for (int s = 0; s < per_group; ++s) {
      const int32_t col = m.old_col[static_cast<size_t>(q * per_group + s)];
      const int b = s / kSlots, k = s % kSlots;
      for (int row = 0; row < kRows && w * kRows + row < m.rows; ++row) {
        const int lid = row * kSlots + k;
        float v;
        if (m.dtype == SpmmDtype::F32) {
          const uint32_t u = m.afrag[static_cast<size_t>(q * words + abi::brp_afrag_index(lid, b * kSlots, 1))];
          std::memcpy(&v, &u, 4);
        } else {
          v = from_16(halves[static_cast<size_t>(2 * q * words + abi::brp_afrag16_index(lid, b * kSlots, 1))], m.dtype);
        }
        // Padding slots repeat a column with zeros: adding keeps the real slot's value.
        d[static_cast<size_t>(w * kRows + row) * static_cast<size_t>(m.cols) + col] += v;
      }
    }
  }
  return d;
}

}  // namespace dbsparse

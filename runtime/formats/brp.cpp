#include "dbsparse/brp.hpp"

#include <algorithm>
#include <climits>
#include <span>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/reference.hpp"
#include "runtime/formats/brp_stats.hpp"

namespace dbsparse {
namespace {

bool allowed_fg(int v) { return v == 1 || v == 2 || v == 4 || v == 8; }

int32_t window_count(int32_t rows) { return (rows + kBrpWindowRows - 1) / kBrpWindowRows; }

// One window's nonzeros by condensed column: the CSR positions of each column, rows ascending.
// The per-column counts span all K columns and are reset through the touched list, so a window
// costs its own nonzeros (plus sorting its distinct columns), not K.
struct WindowColumns {
  std::vector<int32_t> count;  // K; zero between windows
  std::vector<int32_t> cols;   // distinct columns, ascending
  std::vector<int32_t> start;  // cols.size() + 1 offsets into pos / row
  std::vector<int32_t> pos;    // CSR positions, by column then row
  std::vector<uint8_t> row;    // row within the window of each pos

  explicit WindowColumns(int32_t k) : count(static_cast<size_t>(k), 0) {}

  template <class T>
  void load(const CsrMatrix<T>& a, int32_t w) {
    const int32_t r0 = w * kBrpWindowRows, r1 = std::min(a.rows, r0 + kBrpWindowRows);
    const int32_t p0 = a.row_ptr[r0], p1 = a.row_ptr[r1];
    cols.clear();
    for (int32_t p = p0; p < p1; ++p)
      if (count[a.col_idx[p]]++ == 0) cols.push_back(a.col_idx[p]);
    std::sort(cols.begin(), cols.end());
    start.assign(cols.size() + 1, 0);
    for (size_t i = 0; i < cols.size(); ++i) {
      start[i + 1] = start[i] + count[cols[i]];
      count[cols[i]] = start[i];  // now the column's next free place
    }
    pos.resize(static_cast<size_t>(p1 - p0));
    row.resize(pos.size());
    // Rows are walked in order, so each column's entries come out rows ascending.
    for (int32_t r = r0; r < r1; ++r)
      for (int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) {
        const int32_t at = count[a.col_idx[p]]++;
        pos[at] = p;
        row[at] = static_cast<uint8_t>(r - r0);
      }
    for (int32_t c : cols) count[c] = 0;
  }
};

// A hand-built matrix must hold together before the loops below index with it: lengths that agree
// with the group count and (f, g), and every id in range and at its place.
template <class T>
void check_brp(const BrpMatrix<T>& m) {
  validate(BrpParams{m.f, m.g});
  const int64_t q = m.groups();
  auto expect = [](const char* what, size_t got, int64_t want) {
    if (static_cast<int64_t>(got) != want)
      throw UsageError(fmt::format("BRP matrix: {} has {} entries, expected {}", what, got, want));
  };
  if (m.value_stride != brp_value_stride(m.f, m.g, sizeof(T)) || m.local_stride != brp_local_stride(m.f, m.g))
    throw UsageError(fmt::format("BRP matrix: strides {} / {} do not match f = {}, g = {}", m.value_stride,
                                 m.local_stride, m.f, m.g));
  expect("old_col_id", m.old_col_id.size(), q * kBrpBlockSlots * m.g);
  expect("local_id", m.local_id.size(), q * m.local_stride);
  expect("values", m.values.size(), q * m.value_stride);
  expect("res_row_offset", m.res_row_offset.size(), static_cast<int64_t>(m.res_rows_id.size()) + 1);
  expect("res_values", m.res_values.size(), static_cast<int64_t>(m.res_col_id.size()));
  expect("res_col_id", m.res_col_id.size(), m.res_row_offset.back());
  auto out_of_range = [](const char* what, int64_t at, int64_t v, int64_t end) {
    return UsageError(fmt::format("BRP matrix: {}[{}] = {} out of range [0, {})", what, at, v, end));
  };
  for (int64_t i = 0; i < q; ++i) {
    const int32_t w = m.group_window_id[static_cast<size_t>(i)];
    if (w < 0 || w >= window_count(m.rows)) throw out_of_range("group_window_id", i, w, window_count(m.rows));
    for (int64_t e = 0; e < m.group_nnz(); ++e) {
      const int64_t at = i * m.local_stride + e;
      const int lid = m.local_id[static_cast<size_t>(at)];
      const int64_t slot = e / m.f % kBrpBlockSlots;
      // A local id that disagrees with its place would put the value in another column.
      if (lid % kBrpBlockSlots != slot || lid >= kBrpWindowRows * kBrpBlockSlots ||
          int64_t{w} * kBrpWindowRows + lid / kBrpBlockSlots >= m.rows)
        throw UsageError(fmt::format("BRP matrix: local_id[{}] = {} in window {}: expected slot {} of a row < {}", at,
                                     lid, w, slot, m.rows));
    }
  }
  for (size_t i = 0; i < m.old_col_id.size(); ++i)
    if (m.old_col_id[i] < 0 || m.old_col_id[i] >= m.cols) throw out_of_range("old_col_id", i, m.old_col_id[i], m.cols);
  for (size_t i = 0; i < m.res_rows_id.size(); ++i) {
    if (m.res_rows_id[i] < 0 || m.res_rows_id[i] >= m.rows)
      throw out_of_range("res_rows_id", i, m.res_rows_id[i], m.rows);
    if (m.res_row_offset[i] > m.res_row_offset[i + 1] || m.res_row_offset[i] < 0)
      throw UsageError(fmt::format("BRP matrix: res_row_offset decreases at {}", i));
  }
  for (size_t i = 0; i < m.res_col_id.size(); ++i)
    if (m.res_col_id[i] < 0 || m.res_col_id[i] >= m.cols) throw out_of_range("res_col_id", i, m.res_col_id[i], m.cols);
}

void check_dense_sizes(const char* what, int32_t rows, int32_t cols, size_t b_size, int n, size_t c_size,
                       bool beta_zero) {
  if (n < 0) throw UsageError(fmt::format("{}: n must be >= 0, got {}", what, n));
  const size_t want_b = static_cast<size_t>(cols) * static_cast<size_t>(n);
  const size_t want_c = static_cast<size_t>(rows) * static_cast<size_t>(n);
  if (b_size != want_b)
    throw UsageError(fmt::format("{}: B must be {} x {} = {} values, has {}", what, cols, n, want_b, b_size));
  if (!beta_zero && c_size != want_c)
    throw UsageError(
        fmt::format("{}: C must be {} x {} = {} values when beta != 0, has {}", what, rows, n, want_c, c_size));
}

}  // namespace

void validate(const BrpParams& p) {
  if (!allowed_fg(p.f)) throw UsageError(fmt::format("BRP f = {}: allowed 1, 2, 4, 8", p.f));
  if (!allowed_fg(p.g)) throw UsageError(fmt::format("BRP g = {}: allowed 1, 2, 4, 8", p.g));
}

int32_t brp_value_stride(int f, int g, int value_bytes) {
  const int run = kBrpBlockSlots * g * f * value_bytes;
  return (run + kBrpValueAlignBytes - 1) / kBrpValueAlignBytes * kBrpValueAlignBytes / value_bytes;
}

int32_t brp_local_stride(int f, int g) {
  const int run = kBrpBlockSlots * g * f;
  return (run + kBrpLocalAlignBytes - 1) / kBrpLocalAlignBytes * kBrpLocalAlignBytes;
}

void check_brp_counts(int64_t groups, const BrpParams& p, int value_bytes) {
  validate(p);
  const std::pair<const char*, int64_t> per_group[] = {{"group_window_id", 1},
                                                       {"old_col_id", int64_t{kBrpBlockSlots} * p.g},
                                                       {"local_id", brp_local_stride(p.f, p.g)},
                                                       {"values", brp_value_stride(p.f, p.g, value_bytes)}};
  for (const auto& [what, each] : per_group)
    if (groups > INT_MAX / each)
      throw UsageError(fmt::format("BRP f = {}, g = {}: {} groups make {} hold {} entries, past int32", p.f, p.g,
                                   groups, what, groups * each));
}

template <class T>
BrpMatrix<T> csr_to_brp(const CsrMatrix<T>& a, const BrpParams& p) {
  validate(a);
  validate(p);
  BrpMatrix<T> m;
  m.rows = a.rows;
  m.cols = a.cols;
  m.f = p.f;
  m.g = p.g;
  m.value_stride = brp_value_stride(p.f, p.g, sizeof(T));
  m.local_stride = brp_local_stride(p.f, p.g);
  const int slots_per_group = kBrpBlockSlots * p.g;
  std::vector<uint8_t> residual(static_cast<size_t>(a.nnz()), 0);  // by CSR position
  WindowColumns wc(a.cols);
  std::vector<std::pair<int32_t, int32_t>> slots;  // (column, its first entry in wc.pos)
  for (int32_t w = 0; w < window_count(a.rows); ++w) {
    wc.load(a, w);
    slots.clear();
    for (size_t i = 0; i < wc.cols.size(); ++i) {
      const int32_t full = (wc.start[i + 1] - wc.start[i]) / p.f;
      for (int32_t k = 0; k < full; ++k) slots.emplace_back(wc.cols[i], wc.start[i] + k * p.f);
      for (int32_t e = wc.start[i] + full * p.f; e < wc.start[i + 1]; ++e) residual[wc.pos[e]] = 1;
    }
    const int64_t groups = static_cast<int64_t>(slots.size()) / slots_per_group;
    for (size_t s = static_cast<size_t>(groups * slots_per_group); s < slots.size(); ++s)
      for (int k = 0; k < p.f; ++k) residual[wc.pos[slots[s].second + k]] = 1;
    check_brp_counts(m.groups() + groups, p, sizeof(T));
    for (int64_t q = 0; q < groups; ++q) {
      m.group_window_id.push_back(w);
      for (int s = 0; s < slots_per_group; ++s) {
        const auto [col, first] = slots[static_cast<size_t>(q * slots_per_group + s)];
        m.old_col_id.push_back(col);
        for (int k = 0; k < p.f; ++k) {
          m.local_id.push_back(static_cast<uint8_t>(wc.row[first + k] * kBrpBlockSlots + s % kBrpBlockSlots));
          m.values.push_back(a.values[wc.pos[first + k]]);
        }
      }
      m.local_id.resize(m.local_id.size() + static_cast<size_t>(m.local_stride - m.group_nnz()), kBrpPadLocalId);
      m.values.resize(m.values.size() + static_cast<size_t>(m.value_stride - m.group_nnz()), T(0));
    }
    // Walking the window's rows in CSR order keeps each residual row's columns ascending.
    const int32_t r0 = w * kBrpWindowRows, r1 = std::min(a.rows, r0 + kBrpWindowRows);
    for (int32_t r = r0; r < r1; ++r) {
      const size_t before = m.res_col_id.size();
      for (int32_t q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q)
        if (residual[q]) {
          m.res_col_id.push_back(a.col_idx[q]);
          m.res_values.push_back(a.values[q]);
        }
      if (m.res_col_id.size() > before) {
        m.res_rows_id.push_back(r);
        m.res_row_offset.push_back(static_cast<int32_t>(m.res_col_id.size()));
      }
    }
  }
  return m;
}

template <class T>
CsrMatrix<T> brp_to_csr(const BrpMatrix<T>& m) {
  check_brp(m);
  CooMatrix<T> coo;
  coo.rows = m.rows;
  coo.cols = m.cols;
  const int64_t gnnz = m.group_nnz();
  for (int64_t q = 0; q < m.groups(); ++q)
    for (int64_t e = 0; e < gnnz; ++e) {
      const int lid = m.local_id[static_cast<size_t>(q * m.local_stride + e)];
      const int64_t s = e / m.f;
      coo.row.push_back(m.group_window_id[static_cast<size_t>(q)] * kBrpWindowRows + lid / kBrpBlockSlots);
      coo.col.push_back(m.old_col_id[static_cast<size_t>(q * kBrpBlockSlots * m.g + s)]);
      coo.values.push_back(m.values[static_cast<size_t>(q * m.value_stride + e)]);
    }
  for (size_t i = 0; i < m.res_rows_id.size(); ++i)
    for (int32_t p = m.res_row_offset[i]; p < m.res_row_offset[i + 1]; ++p) {
      coo.row.push_back(m.res_rows_id[i]);
      coo.col.push_back(m.res_col_id[static_cast<size_t>(p)]);
      coo.values.push_back(m.res_values[static_cast<size_t>(p)]);
    }
  return coo_to_csr(coo);
}

namespace detail {

BrpStats brp_stats_of(const BrpCounts& c) {
  BrpStats s;
  s.f = c.f;
  s.g = c.g;
  s.value_bytes = c.value_bytes;
  const int64_t gnnz = int64_t{kBrpBlockSlots} * c.g * c.f;
  s.tc_nnz = c.groups * gnnz;
  s.residual_nnz = c.residual_nnz;
  s.nnz = s.tc_nnz + s.residual_nnz;
  s.groups = c.groups;
  s.windows = window_count(c.rows);
  s.tc_windows = c.tc_windows;
  s.residual_rows = c.residual_rows;
  s.padding_bytes = s.groups * ((c.value_stride - gnnz) * c.value_bytes + (c.local_stride - gnnz));
  // group_window_id, old_col_id (8g a group), local_id, values.
  s.bytes_tc =
      s.groups * (4 + int64_t{kBrpBlockSlots} * c.g * 4 + c.local_stride + int64_t{c.value_stride} * c.value_bytes);
  // res_rows_id, res_row_offset, res_col_id, res_values.
  s.bytes_residual = (2 * s.residual_rows + 1 + s.residual_nnz) * 4 + s.residual_nnz * c.value_bytes;
  s.bytes = s.bytes_tc + s.bytes_residual;
  s.bytes_csr = (int64_t{c.rows} + 1) * 4 + s.nnz * (4 + c.value_bytes);
  s.tc_share = s.nnz ? double(s.tc_nnz) / double(s.nnz) : 0.0;
  return s;
}

}  // namespace detail

template <class T>
BrpStats brp_stats(const BrpMatrix<T>& m) {
  check_brp(m);
  detail::BrpCounts c;
  c.rows = m.rows;
  c.f = m.f;
  c.g = m.g;
  c.value_stride = m.value_stride;
  c.local_stride = m.local_stride;
  c.value_bytes = sizeof(T);
  c.groups = m.groups();
  c.residual_nnz = m.residual_nnz();
  c.residual_rows = static_cast<int64_t>(m.res_rows_id.size());
  for (size_t q = 0; q < m.group_window_id.size(); ++q)
    c.tc_windows += q == 0 || m.group_window_id[q] != m.group_window_id[q - 1];
  return detail::brp_stats_of(c);
}

std::string BrpStats::to_text() const {
  auto pct = [](double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; };
  std::string out =
      fmt::format("BRP f = {}, g = {}: groups of {} blocks 16x8, {} nonzeros each\n", f, g, g, kBrpBlockSlots * g * f);
  out += fmt::format("  {:<9} {:>12} {:>7} {:>10} {:>22}\n", "part", "nnz", "%", "groups", "windows / rows");
  out += fmt::format("  {:<9} {:>12} {:>6.1f}% {:>10} {:>12} of {:>7} windows\n", "TC", tc_nnz, pct(tc_nnz, nnz),
                     groups, tc_windows, windows);
  out += fmt::format("  {:<9} {:>12} {:>6.1f}% {:>10} {:>12} rows\n", "residual", residual_nnz, pct(residual_nnz, nnz),
                     "-", residual_rows);
  out += fmt::format(
      "  bytes: TC {:.3f} MB (padding {:.3f} MB), residual {:.3f} MB, BRP {:.3f} MB; CSR {:.3f} MB "
      "(BRP / CSR = {:.3f})\n",
      bytes_tc / 1e6, padding_bytes / 1e6, bytes_residual / 1e6, bytes / 1e6, bytes_csr / 1e6,
      bytes_csr ? double(bytes) / double(bytes_csr) : 0.0);
  if (on_device)
    out += fmt::format(
        "  conversion on the device: {:.2f} ms; peak extra device memory {} bytes ({:.1f} per nonzero), "
        "bound 4 * nnz * (4 + {}) = {} bytes: {}\n",
        convert_ms, peak_extra_bytes, nnz ? double(peak_extra_bytes) / double(nnz) : 0.0, value_bytes,
        peak_bound_bytes(), peak_extra_bytes <= peak_bound_bytes() ? "within" : "OVER");
  else
    out += fmt::format("  conversion on the host: {:.1f} ms\n", convert_ms);
  return out;
}

template <class T>
double brp_group_share(const CsrMatrix<T>& a, int f, int g) {
  validate(a);
  validate(BrpParams{f, g});
  const int64_t slots_per_group = int64_t{kBrpBlockSlots} * g;
  std::vector<int32_t> count(static_cast<size_t>(a.cols), 0);
  std::vector<int32_t> touched;
  int64_t tc = 0;
  for (int32_t w = 0; w < window_count(a.rows); ++w) {
    const int32_t r0 = w * kBrpWindowRows, r1 = std::min(a.rows, r0 + kBrpWindowRows);
    touched.clear();
    for (int32_t p = a.row_ptr[r0]; p < a.row_ptr[r1]; ++p)
      if (count[a.col_idx[p]]++ == 0) touched.push_back(a.col_idx[p]);
    int64_t slots = 0;
    for (int32_t c : touched) {
      slots += count[c] / f;
      count[c] = 0;
    }
    tc += slots / slots_per_group * slots_per_group * f;
  }
  return a.nnz() ? double(tc) / double(a.nnz()) : 0.0;
}

template <class T>
void reference_spmm(const CsrMatrix<T>& a, const std::vector<T>& b, int n, std::vector<T>& c, T alpha, T beta) {
  check_dense_sizes("reference_spmm", a.rows, a.cols, b.size(), n, c.size(), beta == T(0));
  const std::vector<double> ab = reference::spmm(a, std::span<const T>(b), n);
  // beta == 0 must not read C: 0 * NaN would be NaN.
  if (beta == T(0)) c.assign(ab.size(), T(0));
  for (size_t i = 0; i < ab.size(); ++i)
    c[i] = static_cast<T>(double(alpha) * ab[i] + (beta == T(0) ? 0.0 : double(beta) * double(c[i])));
}

template <class T>
void brp_spmm_cpu(const BrpMatrix<T>& m, const std::vector<T>& b, int n, std::vector<T>& c, T alpha, T beta) {
  check_brp(m);
  check_dense_sizes("brp_spmm_cpu", m.rows, m.cols, b.size(), n, c.size(), beta == T(0));
  const size_t nn = static_cast<size_t>(n);
  if (beta == T(0))
    c.assign(static_cast<size_t>(m.rows) * nn, T(0));
  else
    for (T& v : c) v *= beta;
  const int k = kBrpBlockSlots * m.g;
  std::vector<T> tile(static_cast<size_t>(kBrpWindowRows) * k);  // A's group, 16 x 8g row-major
  std::vector<T> bg(static_cast<size_t>(k) * nn);                // the 8g rows of B it meets
  std::vector<T> acc(static_cast<size_t>(kBrpWindowRows) * nn);  // one C tile, as in registers
  for (int64_t q = 0; q < m.groups(); ++q) {
    std::fill(tile.begin(), tile.end(), T(0));
    for (int64_t e = 0; e < m.group_nnz(); ++e) {
      const int lid = m.local_id[static_cast<size_t>(q * m.local_stride + e)];
      const int64_t block = e / (int64_t{kBrpBlockSlots} * m.f);  // from the place, the slot from the id
      tile[static_cast<size_t>((lid / kBrpBlockSlots) * k + block * kBrpBlockSlots + lid % kBrpBlockSlots)] =
          m.values[static_cast<size_t>(q * m.value_stride + e)];
    }
    for (int kk = 0; kk < k; ++kk) {
      const T* row = b.data() + static_cast<size_t>(m.old_col_id[static_cast<size_t>(q * k + kk)]) * nn;
      std::copy(row, row + nn, bg.begin() + static_cast<ptrdiff_t>(kk * nn));
    }
    std::fill(acc.begin(), acc.end(), T(0));
    for (int r = 0; r < kBrpWindowRows; ++r)
      for (int kk = 0; kk < k; ++kk) {
        const T av = tile[static_cast<size_t>(r * k + kk)];
        for (size_t j = 0; j < nn; ++j) acc[r * nn + j] += av * bg[kk * nn + j];
      }
    const int32_t r0 = m.group_window_id[static_cast<size_t>(q)] * kBrpWindowRows;
    for (int r = 0; r < kBrpWindowRows && r0 + r < m.rows; ++r)
      for (size_t j = 0; j < nn; ++j) c[static_cast<size_t>(r0 + r) * nn + j] += alpha * acc[r * nn + j];
  }
  for (size_t i = 0; i < m.res_rows_id.size(); ++i)
    for (size_t j = 0; j < nn; ++j) {
      T sum = 0;
      for (int32_t p = m.res_row_offset[i]; p < m.res_row_offset[i + 1]; ++p)
        sum += m.res_values[static_cast<size_t>(p)] *
               b[static_cast<size_t>(m.res_col_id[static_cast<size_t>(p)]) * nn + j];
      c[static_cast<size_t>(m.res_rows_id[i]) * nn + j] += alpha * sum;
    }
}

#define DBS_INSTANTIATE(T)                                                                              \
  template BrpMatrix<T> csr_to_brp(const CsrMatrix<T>&, const BrpParams&);                              \
  template CsrMatrix<T> brp_to_csr(const BrpMatrix<T>&);                                                \
  template BrpStats brp_stats(const BrpMatrix<T>&);                                                     \
  template double brp_group_share(const CsrMatrix<T>&, int, int);                                       \
  template void reference_spmm(const CsrMatrix<T>&, const std::vector<T>&, int, std::vector<T>&, T, T); \
  template void brp_spmm_cpu(const BrpMatrix<T>&, const std::vector<T>&, int, std::vector<T>&, T, T);
DBS_INSTANTIATE(float)
DBS_INSTANTIATE(double)
#undef DBS_INSTANTIATE

}  // namespace dbsparse

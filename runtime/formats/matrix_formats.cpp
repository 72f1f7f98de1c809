// Conversions between COO, CSR and CSC. All are counting sorts: O(nnz + rows + cols), no
// comparison sort and no per-element allocation, because nnz reaches 100M+.
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/matrix.hpp"
#include "support/host_memory.hpp"

namespace dbsparse {
namespace {

constexpr int64_t kMaxNnz = std::numeric_limits<int32_t>::max();

// Turns per-bucket counts stored at ptr[b + 1] into bucket starts.
void prefix_sum(std::vector<int32_t>& ptr) {
  for (size_t i = 1; i < ptr.size(); ++i) ptr[i] += ptr[i - 1];
}

struct Compressed {
  std::vector<int32_t> ptr, idx;
};

// Re-buckets a compressed matrix by its minor index. Walking the major lines in order makes the
// output's indices sorted within each bucket, so CSR->CSC, CSC->CSR and transpose all use this.
template <class T>
Compressed rebucket(const char* what, int32_t n_major, int32_t n_minor, const std::vector<int32_t>& ptr,
                    const std::vector<int32_t>& idx, const std::vector<T>& val, std::vector<T>& out_val) {
  if (n_major < 0 || n_minor < 0) throw UsageError(fmt::format("{}: negative dimension", what));
  if (ptr.size() != static_cast<size_t>(n_major) + 1 || ptr.front() != 0 ||
      static_cast<size_t>(ptr.back()) != idx.size() || idx.size() != val.size())
    throw UsageError(fmt::format("{}: pointer array and index/value arrays disagree in size", what));
  for (int32_t j = 0; j < n_major; ++j)
    if (ptr[j + 1] < ptr[j]) throw UsageError(fmt::format("{}: pointer array decreases at {}", what, j));
  Compressed out;
  out.ptr.assign(static_cast<size_t>(n_minor) + 1, 0);
  for (int32_t m : idx) {
    if (m < 0 || m >= n_minor) throw UsageError(fmt::format("{}: index {} outside [0, {})", what, m, n_minor));
    ++out.ptr[m + 1];
  }
  prefix_sum(out.ptr);
  std::vector<int32_t> next(out.ptr.begin(), out.ptr.end() - 1);
  out.idx.resize(idx.size());
  out_val.resize(idx.size());
  for (int32_t j = 0; j < n_major; ++j) {
    for (int32_t p = ptr[j]; p < ptr[j + 1]; ++p) {
      int32_t q = next[idx[p]]++;
      out.idx[q] = j;
      out_val[q] = val[p];
    }
  }
  return out;
}

}  // namespace

template <class T>
CsrMatrix<T> coo_to_csr(const CooMatrix<T>& coo) {
  const size_t n = coo.row.size();
  if (coo.rows < 0 || coo.cols < 0) throw UsageError("coo_to_csr: negative dimension");
  if (coo.col.size() != n || coo.values.size() != n)
    throw UsageError(fmt::format("coo_to_csr: row, col and values have different lengths ({}, {}, {})", n,
                                 coo.col.size(), coo.values.size()));
  if (static_cast<int64_t>(n) > kMaxNnz)
    throw UsageError(fmt::format("coo_to_csr: {} entries exceed the int32 limit", n));

  // Row and column pointers, the column-sorted copy and the result, before any of them exists.
  require_host_bytes(4.0 * (double(coo.rows) + 1) + 8.0 * (double(coo.cols) + 1) + 2.0 * double(n) * (4 + sizeof(T)),
                     fmt::format("a {} x {} matrix with {} entries in CSR", coo.rows, coo.cols, n));
  CsrMatrix<T> out;
  out.rows = coo.rows;
  out.cols = coo.cols;
  out.row_ptr.assign(static_cast<size_t>(coo.rows) + 1, 0);
  std::vector<int32_t> col_ptr(static_cast<size_t>(coo.cols) + 1, 0);
  for (size_t k = 0; k < n; ++k) {
    int32_t r = coo.row[k], c = coo.col[k];
    if (r < 0 || r >= coo.rows || c < 0 || c >= coo.cols)
      throw UsageError(
          fmt::format("coo_to_csr: entry {} at ({}, {}) is outside the {}x{} matrix", k, r, c, coo.rows, coo.cols));
    ++out.row_ptr[r + 1];
    ++col_ptr[c + 1];
  }
  prefix_sum(out.row_ptr);
  prefix_sum(col_ptr);

  // Two stable bucket passes (by column, then by row) leave entries sorted by (row, col) with
  // duplicates adjacent and in input order, so the sum below is deterministic.
  {
    std::vector<int32_t> by_col_row(n);
    std::vector<T> by_col_val(n);
    std::vector<int32_t> next(col_ptr.begin(), col_ptr.end() - 1);
    for (size_t k = 0; k < n; ++k) {
      int32_t q = next[coo.col[k]]++;
      by_col_row[q] = coo.row[k];
      by_col_val[q] = coo.values[k];
    }
    next.assign(out.row_ptr.begin(), out.row_ptr.end() - 1);
    out.col_idx.resize(n);
    out.values.resize(n);
    for (int32_t c = 0; c < coo.cols; ++c) {
      for (int32_t p = col_ptr[c]; p < col_ptr[c + 1]; ++p) {
        int32_t q = next[by_col_row[p]]++;
        out.col_idx[q] = c;
        out.values[q] = by_col_val[p];
      }
    }
  }

  // Sum duplicates, compacting in place; `read` tracks the uncompacted start of each row.
  int32_t write = 0, read = 0;
  for (int32_t r = 0; r < coo.rows; ++r) {
    const int32_t end = out.row_ptr[r + 1], row_start = write;
    out.row_ptr[r] = write;
    for (; read < end; ++read) {
      if (write > row_start && out.col_idx[write - 1] == out.col_idx[read]) {
        out.values[write - 1] += out.values[read];
      } else {
        out.col_idx[write] = out.col_idx[read];
        out.values[write] = out.values[read];
        ++write;
      }
    }
  }
  out.row_ptr[coo.rows] = write;
  if (static_cast<size_t>(write) != n) {
    out.col_idx.resize(write);
    out.values.resize(write);
    out.col_idx.shrink_to_fit();
    out.values.shrink_to_fit();
  }
  return out;
}

template <class T>
CscMatrix<T> csr_to_csc(const CsrMatrix<T>& a) {
  CscMatrix<T> out;
  out.rows = a.rows;
  out.cols = a.cols;
  auto c = rebucket("csr_to_csc", a.rows, a.cols, a.row_ptr, a.col_idx, a.values, out.values);
  out.col_ptr = std::move(c.ptr);
  out.row_idx = std::move(c.idx);
  return out;
}

template <class T>
CsrMatrix<T> csc_to_csr(const CscMatrix<T>& a) {
  CsrMatrix<T> out;
  out.rows = a.rows;
  out.cols = a.cols;
  auto c = rebucket("csc_to_csr", a.cols, a.rows, a.col_ptr, a.row_idx, a.values, out.values);
  out.row_ptr = std::move(c.ptr);
  out.col_idx = std::move(c.idx);
  return out;
}

template <class T>
CsrMatrix<T> transpose(const CsrMatrix<T>& a) {
  // The CSC arrays of A are exactly the CSR arrays of A^T.
  CsrMatrix<T> out;
  out.rows = a.cols;
  out.cols = a.rows;
  auto c = rebucket("transpose", a.rows, a.cols, a.row_ptr, a.col_idx, a.values, out.values);
  out.row_ptr = std::move(c.ptr);
  out.col_idx = std::move(c.idx);
  return out;
}

template <class T>
void validate(const CsrMatrix<T>& a) {
  auto fail = [](const std::string& why) { throw UsageError("invalid CSR matrix: " + why); };
  if (a.rows < 0 || a.cols < 0) fail(fmt::format("negative dimension {}x{}", a.rows, a.cols));
  if (a.row_ptr.size() != static_cast<size_t>(a.rows) + 1)
    fail(fmt::format("row_ptr has {} entries, expected rows + 1 = {}", a.row_ptr.size(),
                     static_cast<int64_t>(a.rows) + 1));
  if (a.col_idx.size() != a.values.size())
    fail(fmt::format("col_idx has {} entries but values has {}", a.col_idx.size(), a.values.size()));
  if (a.row_ptr[0] != 0) fail(fmt::format("row_ptr[0] is {}, expected 0", a.row_ptr[0]));
  if (static_cast<size_t>(a.row_ptr[a.rows]) != a.col_idx.size())
    fail(fmt::format("row_ptr[rows] is {} but there are {} nonzeros", a.row_ptr[a.rows], a.col_idx.size()));
  for (int32_t r = 0; r < a.rows; ++r) {
    if (a.row_ptr[r + 1] < a.row_ptr[r])
      fail(fmt::format("row_ptr decreases at row {} ({} -> {})", r, a.row_ptr[r], a.row_ptr[r + 1]));
  }
  for (int32_t r = 0; r < a.rows; ++r) {
    for (int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) {
      int32_t c = a.col_idx[p];
      if (c < 0 || c >= a.cols) fail(fmt::format("row {} has column {} outside [0, {})", r, c, a.cols));
      if (p > a.row_ptr[r] && a.col_idx[p - 1] >= c)
        fail(fmt::format("row {} columns are not sorted and unique ({} then {})", r, a.col_idx[p - 1], c));
    }
  }
}

template <class T>
CsrMatrix<T> csr_from_arrays(int64_t rows, int64_t cols, std::span<const int32_t> indptr,
                             std::span<const int32_t> indices, std::span<const T> values) {
  if (rows < 0 || cols < 0 || rows > kMaxNnz || cols > kMaxNnz)
    throw UsageError(fmt::format("shape ({}, {}): each side must be in 0 .. 2^31 - 1", rows, cols));
  if (indptr.size() != static_cast<size_t>(rows) + 1)
    throw UsageError(
        fmt::format("indptr has {} entries, the matrix has {} rows (expected rows + 1)", indptr.size(), rows));
  if (indices.size() != values.size())
    throw UsageError(fmt::format("indices has {} entries, data {}: they must match", indices.size(), values.size()));
  if (indptr[0] != 0) throw UsageError(fmt::format("indptr[0] is {}, expected 0", indptr[0]));
  for (int64_t i = 0; i < rows; ++i)
    if (indptr[static_cast<size_t>(i) + 1] < indptr[static_cast<size_t>(i)])
      throw UsageError(fmt::format("indptr decreases at row {} ({} then {})", i, indptr[static_cast<size_t>(i)],
                                   indptr[static_cast<size_t>(i) + 1]));
  if (static_cast<size_t>(indptr[static_cast<size_t>(rows)]) != indices.size())
    throw UsageError(
        fmt::format("indptr[-1] is {}, indices has {} entries", indptr[static_cast<size_t>(rows)], indices.size()));
  for (size_t k = 0; k < indices.size(); ++k)
    if (indices[k] < 0 || indices[k] >= cols)
      throw UsageError(fmt::format("indices[{}] = {} is outside 0 .. {}", k, indices[k], cols - 1));
  CsrMatrix<T> a;
  a.rows = static_cast<int32_t>(rows);
  a.cols = static_cast<int32_t>(cols);
  a.row_ptr.assign(indptr.begin(), indptr.end());
  a.col_idx.assign(indices.begin(), indices.end());
  a.values.assign(values.begin(), values.end());
  return a;
}

#define DBS_INSTANTIATE(T)                                                                                    \
  template CsrMatrix<T> csr_from_arrays(int64_t, int64_t, std::span<const int32_t>, std::span<const int32_t>, \
                                        std::span<const T>);                                                  \
  template CsrMatrix<T> coo_to_csr(const CooMatrix<T>&);                                                      \
  template CscMatrix<T> csr_to_csc(const CsrMatrix<T>&);                                                      \
  template CsrMatrix<T> csc_to_csr(const CscMatrix<T>&);                                                      \
  template CsrMatrix<T> transpose(const CsrMatrix<T>&);                                                       \
  template void validate(const CsrMatrix<T>&);
DBS_INSTANTIATE(float)
DBS_INSTANTIATE(double)
#undef DBS_INSTANTIATE

}  // namespace dbsparse

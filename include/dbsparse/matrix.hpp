#pragma once
// Host sparse matrices. Indices are int32 (nnz up to 2^31-1); values are the template type.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dbsparse {

// CSR with sorted, unique column indices in each row.
template <class T>
struct CsrMatrix {
  int32_t rows = 0;
  int32_t cols = 0;
  std::vector<int32_t> row_ptr{0};  // rows + 1
  std::vector<int32_t> col_idx;     // nnz
  std::vector<T> values;            // nnz

  int64_t nnz() const { return static_cast<int64_t>(col_idx.size()); }

  template <class U>
  CsrMatrix<U> cast() const {
    CsrMatrix<U> out;
    out.rows = rows;
    out.cols = cols;
    out.row_ptr = row_ptr;
    out.col_idx = col_idx;
    out.values.assign(values.begin(), values.end());
    return out;
  }
};

// CSC with sorted, unique row indices in each column.
template <class T>
struct CscMatrix {
  int32_t rows = 0;
  int32_t cols = 0;
  std::vector<int32_t> col_ptr{0};  // cols + 1
  std::vector<int32_t> row_idx;     // nnz
  std::vector<T> values;            // nnz

  int64_t nnz() const { return static_cast<int64_t>(row_idx.size()); }
};

// Coordinate triplets as read from a file, before duplicates are summed.
template <class T>
struct CooMatrix {
  int32_t rows = 0;
  int32_t cols = 0;
  std::vector<int32_t> row;
  std::vector<int32_t> col;
  std::vector<T> values;
};

// Sorts by (row, col), sums duplicates. Throws UsageError on an out-of-range index.
template <class T>
CsrMatrix<T> coo_to_csr(const CooMatrix<T>& coo);
template <class T>
CscMatrix<T> csr_to_csc(const CsrMatrix<T>& a);
template <class T>
CsrMatrix<T> csc_to_csr(const CscMatrix<T>& a);
template <class T>
CsrMatrix<T> transpose(const CsrMatrix<T>& a);

// Throws UsageError naming the first broken invariant (sizes, monotone row_ptr, sorted unique cols).
template <class T>
void validate(const CsrMatrix<T>& a);

// A CSR from a caller's arrays (SciPy's indptr, indices and data; the Python package's conversion),
// checked before anything is copied: each side of the shape in 0 .. 2^31 - 1, indptr of rows + 1
// entries from 0, never decreasing, ending at the entry count, indices and values of that count,
// every index inside the columns. Throws UsageError naming the array and its first bad entry.
// Columns out of order or repeated within a row are kept as given: validate() names them.
template <class T>
CsrMatrix<T> csr_from_arrays(int64_t rows, int64_t cols, std::span<const int32_t> indptr,
                             std::span<const int32_t> indices, std::span<const T> values);

// A matrix together with the name a user knows it by (file stem or generator string).
struct NamedMatrix {
  std::string name;
  CsrMatrix<double> csr;
};

}  // namespace dbsparse

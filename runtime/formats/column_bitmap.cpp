#include "dbsparse/column_bitmap.hpp"

#include <climits>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse {

template <class T>
ColumnBitmapMatrix<T> csr_to_column_bitmap(const CsrMatrix<T>& w) {
  validate(w);
  if (w.nnz() > INT_MAX) throw UsageError(fmt::format("column bitmap: {} nonzeros pass int32 offsets", w.nnz()));
  ColumnBitmapMatrix<T> m;
  m.rows = w.rows;
  m.cols = w.cols;
  m.strips = (w.rows + kBitmapStripRows - 1) / kBitmapStripRows;
  const size_t segs = static_cast<size_t>(w.cols) * static_cast<size_t>(m.strips);
  m.masks.assign(segs * 32, 0u);
  m.seg_ptr.assign(segs + 1, 0);
  // Count per (column, strip), then place values in (column, strip, row) order: rows ascend within
  // a column because the CSR is walked row by row.
  for (int32_t i = 0; i < w.rows; ++i)
    for (int32_t p = w.row_ptr[i]; p < w.row_ptr[i + 1]; ++p) {
      const size_t seg = static_cast<size_t>(w.col_idx[p]) * m.strips + static_cast<size_t>(i / kBitmapStripRows);
      const int r = i % kBitmapStripRows;
      m.masks[seg * 32 + static_cast<size_t>(r / 32)] |= 1u << (r % 32);
      ++m.seg_ptr[seg + 1];
    }
  for (size_t s = 0; s < segs; ++s) m.seg_ptr[s + 1] += m.seg_ptr[s];
  m.word_off.assign(segs * 32, 0);
  for (size_t s = 0; s < segs; ++s) {
    unsigned off = 0;
    for (size_t w = 0; w < 32; ++w) {
      m.word_off[s * 32 + w] = static_cast<uint16_t>(off);
      off += static_cast<unsigned>(__builtin_popcount(m.masks[s * 32 + w]));
    }
  }
  m.values.resize(static_cast<size_t>(w.nnz()));
  std::vector<int32_t> next(m.seg_ptr.begin(), m.seg_ptr.end() - 1);
  for (int32_t i = 0; i < w.rows; ++i)
    for (int32_t p = w.row_ptr[i]; p < w.row_ptr[i + 1]; ++p) {
      const size_t seg = static_cast<size_t>(w.col_idx[p]) * m.strips + static_cast<size_t>(i / kBitmapStripRows);
      m.values[static_cast<size_t>(next[seg]++)] = w.values[p];
    }
  return m;
}

template <class T>
CsrMatrix<T> column_bitmap_to_csr(const ColumnBitmapMatrix<T>& m) {
  CooMatrix<T> coo;
  coo.rows = m.rows;
  coo.cols = m.cols;
  for (int32_t j = 0; j < m.cols; ++j)
    for (int32_t t = 0; t < m.strips; ++t) {
      const size_t seg = static_cast<size_t>(j) * m.strips + static_cast<size_t>(t);
      int32_t v = m.seg_ptr[seg];
      for (int w = 0; w < 32; ++w)
        for (int b = 0; b < 32; ++b)
          if ((m.masks[seg * 32 + static_cast<size_t>(w)] >> b) & 1u) {
            coo.row.push_back(t * kBitmapStripRows + w * 32 + b);
            coo.col.push_back(j);
            coo.values.push_back(m.values[static_cast<size_t>(v++)]);
          }
    }
  return coo_to_csr(coo);
}

template ColumnBitmapMatrix<float> csr_to_column_bitmap(const CsrMatrix<float>&);
template ColumnBitmapMatrix<double> csr_to_column_bitmap(const CsrMatrix<double>&);
template CsrMatrix<float> column_bitmap_to_csr(const ColumnBitmapMatrix<float>&);
template CsrMatrix<double> column_bitmap_to_csr(const ColumnBitmapMatrix<double>&);

}  // namespace dbsparse

#pragma once
// A pruned weight matrix for batch-1 decoding with sparse activations: by columns (an active x_j
// needs column j only), each column cut into strips of 1024 rows, each (column, strip) stored as 32
// mask words (bit b of word w: row strip * 1024 + 32 w + b is stored) and its stored values in row
// order. At 50% sparsity that is 1 bit + half a value per weight: 0.56x dense fp16 with fp16
// values, where a 4-byte index per nonzero would cost as much as the dense matrix.
#include <cstdint>
#include <vector>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

inline constexpr int kBitmapStripRows = 1024;

template <class T>
struct ColumnBitmapMatrix {
  int32_t rows = 0, cols = 0, strips = 0;  // strips = ceil(rows / 1024)
  std::vector<uint32_t> masks;             // (j * strips + t) * 32 + w
  std::vector<int32_t> seg_ptr;            // cols * strips + 1: first value of (j, t)
  // Per mask word, its first value's offset within the segment: a thread that owns one word (the
  // row-block mapping of decode_rows) starts there without reading the words before it.
  std::vector<uint16_t> word_off;
  std::vector<T> values;
  int64_t nnz() const { return static_cast<int64_t>(values.size()); }
  int64_t bytes() const {
    return static_cast<int64_t>(masks.size() * 4 + seg_ptr.size() * 4 + word_off.size() * 2 +
                                values.size() * sizeof(T));
  }
};

// UsageError when nnz would pass 2^31 - 1 (seg_ptr is int32).
template <class T>
ColumnBitmapMatrix<T> csr_to_column_bitmap(const CsrMatrix<T>& w);
template <class T>
CsrMatrix<T> column_bitmap_to_csr(const ColumnBitmapMatrix<T>& m);

}  // namespace dbsparse

#pragma once
// A layer in the column bitmap layout with its values already in the plan's dtype: what both of
// DecodeLinearPlan's entry points (a CSR matrix converted, a compact layer read from a file) hand
// to the one builder, and what the layouts the plan may hold instead are made from.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dbsparse/column_bitmap.hpp"

namespace dbsparse::detail {

struct DecodeSource {
  int32_t rows = 0, cols = 0, strips = 0;
  const std::vector<uint32_t>* masks = nullptr;
  const std::vector<int32_t>* seg_ptr = nullptr;
  const std::vector<uint16_t>* word_off = nullptr;
  const void* values = nullptr;
  size_t nnz = 0;
};

// Calls f(row, column, index of the value) for every kept weight, column by column, rows ascending
// within a column.
template <class F>
void for_each_weight(const DecodeSource& m, F&& f) {
  for (int32_t j = 0; j < m.cols; ++j)
    for (int32_t t = 0; t < m.strips; ++t) {
      const size_t seg = static_cast<size_t>(j) * m.strips + t;
      int64_t at = (*m.seg_ptr)[seg];
      for (int p = 0; p < 32; ++p)
        for (uint32_t word = (*m.masks)[seg * 32 + p]; word; word &= word - 1)
          f(int64_t{t} * kBitmapStripRows + p * 32 + std::countr_zero(word), j, at++);
    }
}

}  // namespace dbsparse::detail

// The column bitmap layout of pruned weights (column_bitmap.hpp): a lossless round trip, and the
// memory it saves at 50% sparsity.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "dbsparse/column_bitmap.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/pruning.hpp"
#include "test_support.hpp"

using namespace dbsparse;

TEST_CASE("ColumnBitmapRoundTripsPrunedWeights") {
  for (auto [r, c] : {std::pair{1, 1}, {1023, 7}, {1024, 3}, {1025, 5}, {3000, 257}}) {
    CAPTURE(r);
    CAPTURE(c);
    const CsrMatrix<float> w = prune_magnitude(synthetic_weights(r, c, 4), r, c, 0.5);
    const ColumnBitmapMatrix<float> m = csr_to_column_bitmap(w);
    CHECK(m.strips == (r + 1023) / 1024);
    CHECK(m.nnz() == w.nnz());
    const CsrMatrix<float> back = column_bitmap_to_csr(m);
    CHECK(back.row_ptr == w.row_ptr);
    CHECK(back.col_idx == w.col_idx);
    CHECK(back.values == w.values);
  }
}

TEST_CASE("ColumnBitmapAtHalfSparsityIsSmallerThanDense") {
  const int32_t r = 2048, c = 512;
  const CsrMatrix<float> w = prune_magnitude(synthetic_weights(r, c, 5), r, c, 0.5);
  const ColumnBitmapMatrix<float> m = csr_to_column_bitmap(w);
  // f32 values: 4 B x 0.5 + 1/8 B of mask + 1/16 B of word offsets per weight, against 4 B dense;
  // CSR would need 4 + 4 per nonzero.
  const double per_weight = static_cast<double>(m.bytes()) / (double(r) * c);
  CHECK(per_weight < 2.25);
  CHECK(per_weight > 2.15);
}

// A word's offset leads to the value of its first stored row: checked against the CSR itself.
TEST_CASE("ColumnBitmapWordOffsetsPointAtEachWordsFirstValue") {
  const int32_t r = 2500, c = 40;
  const CsrMatrix<float> w = prune_magnitude(synthetic_weights(r, c, 6), r, c, 0.5);
  const ColumnBitmapMatrix<float> m = csr_to_column_bitmap(w);
  REQUIRE(m.word_off.size() == m.masks.size());
  auto at = [&](int32_t i, int32_t j) {
    for (int32_t p = w.row_ptr[i]; p < w.row_ptr[i + 1]; ++p)
      if (w.col_idx[p] == j) return w.values[p];
    return std::nanf("");
  };
  int checked = 0;
  for (int32_t j = 0; j < c; ++j)
    for (int32_t t = 0; t < m.strips; ++t)
      for (int wd = 0; wd < 32; ++wd) {
        const size_t seg = static_cast<size_t>(j) * m.strips + static_cast<size_t>(t);
        const uint32_t mask = m.masks[seg * 32 + static_cast<size_t>(wd)];
        if (!mask) continue;
        const int32_t row = t * 1024 + wd * 32 + __builtin_ctz(mask);
        CHECK(m.values[static_cast<size_t>(m.seg_ptr[seg] + m.word_off[seg * 32 + static_cast<size_t>(wd)])] ==
              at(row, j));
        ++checked;
      }
  CHECK(checked > 1000);
}

TEST_CASE("AutoDecodeMappingTakesTheCheapestEstimate") {
  using dbsparse::choose_decode_mapping;
  using dbsparse::DecodeDtype;
  using dbsparse::DecodeMapping;
  const dbsparse::DeviceProfile h200 = dbs_test::recorded_profile("h200");
  // On the card the shares were fitted on, with its recorded profile (no calibrations: the
  // fallback shares). Llama-3.1-8B gate, half the weights kept: all activations kept reads W whole (dense mma); half
  // kept reads half of the dense columns, cheaper than a quarter of W at the bitmap kernel's rate.
  CHECK(choose_decode_mapping(14336, 4096, DecodeDtype::F16, 0.5, 1.0, h200) == DecodeMapping::Dense);
  CHECK(choose_decode_mapping(14336, 4096, DecodeDtype::F16, 0.5, 0.5, h200) == DecodeMapping::DenseColumns);
  // 80% pruned: the bitmap's bytes win.
  CHECK(choose_decode_mapping(14336, 4096, DecodeDtype::F16, 0.2, 0.5, h200) == DecodeMapping::Ring);
  // Dense layouts refused: the bitmap whatever the cost.
  CHECK(choose_decode_mapping(14336, 4096, DecodeDtype::F16, 0.5, 0.5, h200, false) == DecodeMapping::Ring);
  // f32 has no mma path.
  CHECK(choose_decode_mapping(4096, 4096, DecodeDtype::F32, 0.5, 1.0, h200) != DecodeMapping::Dense);
  const auto lo = dbsparse::estimate_decode_costs(4096, 14336, DecodeDtype::F16, 0.5, 0.1, h200);
  const auto hi = dbsparse::estimate_decode_costs(4096, 14336, DecodeDtype::F16, 0.5, 0.9, h200);
  CHECK(lo.ring_us < hi.ring_us);
  CHECK(lo.dense_columns_us < hi.dense_columns_us);
  CHECK(lo.dense_us == hi.dense_us);  // reads all of W whatever x is
  CHECK(std::isnan(dbsparse::estimate_decode_costs(64, 64, DecodeDtype::F32, 0.5, 1, h200).dense_us));
  CHECK(std::isnan(dbsparse::estimate_decode_costs(64, 60, DecodeDtype::F16, 0.5, 1, h200).dense_us));
  CHECK(std::string(dbsparse::to_string(DecodeMapping::Auto)) == "auto");
  CHECK(std::string(dbsparse::to_string(DecodeMapping::DenseColumns)) == "dense-columns");
}

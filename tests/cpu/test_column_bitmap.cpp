// The column bitmap layout of pruned weights (column_bitmap.hpp): a lossless round trip, and the
// memory it saves at 50% sparsity.
#include <doctest/doctest.h>

#include "dbsparse/column_bitmap.hpp"
#include "dbsparse/pruning.hpp"

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
  // f32 values: 4 B x 0.5 + 1/8 B of mask per weight, against 4 B dense; CSR would need 4 + 4 per nonzero.
  const double per_weight = static_cast<double>(m.bytes()) / (double(r) * c);
  CHECK(per_weight < 2.2);
  CHECK(per_weight > 2.1);
}

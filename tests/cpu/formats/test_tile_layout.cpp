// The tile bitmap layout of decode_tiles (runtime/decode/tile_layout.hpp): every weight lands in the
// slot its tile, chunk, lane, step and fragment register name, once, with its value; the bytes at
// 50% kept match the column bitmap's.
#include <doctest/doctest.h>

#include <map>
#include <tuple>

#include "dbsparse/column_bitmap.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/pruning.hpp"
#include "runtime/decode/tile_layout.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {
struct Source {
  ColumnBitmapMatrix<float> m;
  std::vector<uint16_t> h;
  detail::DecodeSource src;
};
Source source_of(const CsrMatrix<float>& w) {
  Source s{csr_to_column_bitmap(w), {}, {}};
  s.h = floats_to_half(s.m.values);
  s.src = detail::DecodeSource{s.m.rows,     s.m.cols,      s.m.strips, &s.m.masks,
                               &s.m.seg_ptr, &s.m.word_off, s.h.data(), s.h.size()};
  return s;
}
}  // namespace

TEST_CASE("TileLayoutHoldsEveryWeightOnceWhereItsFragmentSlotSays") {
  for (auto [r, c] : {std::pair{1, 8}, {16, 256}, {17, 264}, {40, 520}, {100, 1000}}) {
    CAPTURE(r);
    CAPTURE(c);
    const CsrMatrix<float> w = prune_magnitude(synthetic_weights(r, c, 6), r, c, 0.5);
    const Source s = source_of(w);
    const TileLayout l = make_tile_layout(s.src);
    CHECK(l.tiles == (r + 15) / 16);
    CHECK(l.chunks == (c + 255) / 256);
    CHECK(l.nnz() == w.nnz());
    CHECK(l.values.size() == static_cast<size_t>(w.nnz()) + 8);
    std::map<std::pair<int32_t, int32_t>, uint16_t> want;
    const std::vector<uint16_t> wh = floats_to_half(w.values);
    for (int32_t i = 0; i < w.rows; ++i)
      for (int32_t p = w.row_ptr[i]; p < w.row_ptr[i + 1]; ++p) want[{i, w.col_idx[p]}] = wh[static_cast<size_t>(p)];
    std::map<std::pair<int32_t, int32_t>, uint16_t> got;
    int64_t seen = 0;
    for_each_tile_weight(l, [&](int32_t row, int32_t col, uint16_t v) {
      ++seen;
      got[{row, col}] = v;
      // The inverse of the walk: the slot the layout computes for this weight.
      const TileSlot t = tile_slot(row, col, l.chunks);
      CHECK(t.chunk == int64_t{row / 16} * l.chunks + col / 256);
    });
    CHECK(seen == w.nnz());
    CHECK(got == want);
    // Chunk offsets ascend, and the largest chunk fits the stage the kernel sizes from it.
    for (size_t k = 0; k + 1 < l.chunk_ptr.size(); ++k) {
      CHECK(l.chunk_ptr[k] <= l.chunk_ptr[k + 1]);
      CHECK((l.chunk_ptr[k + 1] - (l.chunk_ptr[k] & ~7) + 7) / 8 <= l.max_chunk_pieces);
    }
  }
}

TEST_CASE("TileSlotsOfATileAreEachTakenOnce") {
  // 16 rows x 256 columns: 32 lanes x 16 steps x 8 slots, a one-to-one map.
  std::map<std::tuple<int, int, int>, int> used;
  for (int32_t r = 0; r < 16; ++r)
    for (int32_t c = 0; c < 256; ++c) {
      const TileSlot t = tile_slot(r, c, 1);
      CHECK(t.chunk == 0);
      CHECK(t.lane >= 0);
      CHECK(t.lane < 32);
      CHECK(t.step < 16);
      CHECK(t.slot < 8);
      ++used[{t.lane, t.step, t.slot}];
    }
  CHECK(used.size() == 16u * 256u);
}

TEST_CASE("TileLayoutAtHalfSparsityReadsAboutWhatTheColumnBitmapDoes") {
  const int32_t r = 1024, c = 1024;
  const CsrMatrix<float> w = prune_magnitude(synthetic_weights(r, c, 7), r, c, 0.5);
  const Source s = source_of(w);
  const TileLayout l = make_tile_layout(s.src);
  // 1 bit of mask + half a 2-byte value a weight, and 4 bytes a chunk: ~0.5625 of dense fp16.
  const double of_dense = static_cast<double>(l.bytes()) / (2.0 * r * c);
  CHECK(of_dense > 0.56);
  CHECK(of_dense < 0.57);
}

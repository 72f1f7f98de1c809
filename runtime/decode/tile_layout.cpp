#include "runtime/decode/tile_layout.hpp"

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "dbsparse/abi/decode.h"
#include "dbsparse/error.hpp"

namespace dbsparse {

static_assert(abi::kDecodeTilesChunkCols == 256 && abi::kDecodeTilesRows == 16, "the kernel's chunk is the layout's");

TileSlot tile_slot(int32_t row, int32_t col, int32_t chunks) {
  const int rr = row % 16, cc = col % 256;
  const int p = cc / 32, t = (cc % 32) / 8, q = cc % 8, h = q / 4, pair = (q % 4) / 2, bit = q % 2;
  const int reg = 2 * pair + rr / 8;
  return TileSlot{static_cast<int64_t>(row / 16) * chunks + col / 256, 4 * (rr % 8) + t, 2 * p + h, 2 * reg + bit};
}

TileLayout make_tile_layout(const detail::DecodeSource& m) {
  if (m.nnz > static_cast<size_t>(INT_MAX))
    throw UsageError(fmt::format("tile bitmap layout: {} weights pass int32 offsets", m.nnz));
  TileLayout l;
  l.rows = m.rows;
  l.cols = m.cols;
  l.tiles = (m.rows + 15) / 16;
  l.chunks = (m.cols + 255) / 256;
  const size_t n_chunks = static_cast<size_t>(l.tiles) * static_cast<size_t>(l.chunks);
  l.masks.assign(n_chunks * 32 * 4, 0u);
  detail::for_each_weight(m, [&](int64_t row, int32_t col, int64_t) {
    const TileSlot s = tile_slot(static_cast<int32_t>(row), col, l.chunks);
    l.masks[(static_cast<size_t>(s.chunk) * 32 + s.lane) * 4 + s.step / 4] |= 1u << (8 * (s.step % 4) + s.slot);
  });
  // Each lane's run starts after the runs of the chunks and lanes before it.
  std::vector<int32_t> lane_ptr(n_chunks * 32 + 1, 0);
  l.chunk_ptr.assign(n_chunks + 1, 0);
  int32_t at = 0;
  for (size_t c = 0; c < n_chunks; ++c) {
    l.chunk_ptr[c] = at;
    for (size_t lane = 0; lane < 32; ++lane) {
      lane_ptr[c * 32 + lane] = at;
      for (size_t w = 0; w < 4; ++w) at += std::popcount(l.masks[(c * 32 + lane) * 4 + w]);
    }
    const int32_t first = l.chunk_ptr[c] & ~7;
    l.max_chunk_pieces = std::max(l.max_chunk_pieces, (at - first + 7) / 8);
  }
  l.chunk_ptr[n_chunks] = at;
  l.values.assign(static_cast<size_t>(at) + 8, 0);
  const auto* v = static_cast<const uint16_t*>(m.values);
  detail::for_each_weight(m, [&](int64_t row, int32_t col, int64_t idx) {
    const TileSlot s = tile_slot(static_cast<int32_t>(row), col, l.chunks);
    const uint32_t* w = &l.masks[(static_cast<size_t>(s.chunk) * 32 + s.lane) * 4];
    // The value's rank in its lane's run: the lane's bits below its own, (step, slot) in order.
    const int bit = 8 * s.step + s.slot;
    int rank = 0;
    for (int k = 0; k < bit / 32; ++k) rank += std::popcount(w[k]);
    rank += std::popcount(w[bit / 32] & ((1u << (bit % 32)) - 1u));
    l.values[static_cast<size_t>(lane_ptr[static_cast<size_t>(s.chunk) * 32 + s.lane] + rank)] = v[idx];
  });
  return l;
}

}  // namespace dbsparse

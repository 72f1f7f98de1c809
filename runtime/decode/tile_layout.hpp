#pragma once
// The tile bitmap layout of decode_tiles (templates/decode/decode_tiles.cuh): W cut into 16-row
// tiles and 256-column chunks; in a chunk, lane (g, t) of a warp owns, for each of 16 m16n8k16
// steps, the 8 slots of its A fragment: rows g and g + 8 of columns 32p + 8t + 4h + 0..3 (step
// 2p + h), slot 2r + b being fragment register r's half b (registers: row g cols +0,+1; row g + 8
// the same; row g cols +2,+3; row g + 8 the same). A lane's 128 bits of a chunk are 4 words, bit
// 8 * (step % 4) + slot of word step / 4; its kept values follow in (step, slot) order, the lanes'
// runs one after another. At 50% kept that is 1 bit + half a value a weight, as the column bitmap.
#include <bit>
#include <cstdint>
#include <vector>

#include "runtime/decode/decode_source.hpp"

namespace dbsparse {

struct TileLayout {
  int32_t rows = 0, cols = 0, tiles = 0, chunks = 0;
  std::vector<uint32_t> masks;     // ((tile * chunks + chunk) * 32 + lane) * 4 + word
  std::vector<int32_t> chunk_ptr;  // tiles * chunks + 1: first value of (tile, chunk)
  std::vector<uint16_t> values;    // 16-bit values, then 8 zeros (a chunk's copy reads whole 16-byte pieces)
  int max_chunk_pieces = 0;        // the largest chunk's values in 16-byte pieces, from its first value's piece
  int64_t nnz() const { return static_cast<int64_t>(chunk_ptr.empty() ? 0 : chunk_ptr.back()); }
  int64_t bytes() const { return static_cast<int64_t>(masks.size() * 4 + chunk_ptr.size() * 4 + nnz() * 2); }
};

// Where the weight at (row, col) sits: its chunk's lane, step and slot.
struct TileSlot {
  int64_t chunk = 0;  // tile * chunks + chunk of the tile
  int lane = 0, step = 0, slot = 0;
};
TileSlot tile_slot(int32_t row, int32_t col, int32_t chunks);

// The layer's weights (16-bit values) in the tile bitmap layout. UsageError past 2^31 - 1 weights.
TileLayout make_tile_layout(const detail::DecodeSource& m);

// Calls f(row, column, value) for every weight the layout holds, chunk by chunk: the inverse, for tests.
template <class F>
void for_each_tile_weight(const TileLayout& l, F&& f) {
  for (int64_t c = 0; c < static_cast<int64_t>(l.tiles) * l.chunks; ++c) {
    const int32_t tile = static_cast<int32_t>(c / l.chunks), chunk = static_cast<int32_t>(c % l.chunks);
    int64_t at = l.chunk_ptr[static_cast<size_t>(c)];
    for (int lane = 0; lane < 32; ++lane)
      for (int step = 0; step < 16; ++step)
        for (int slot = 0; slot < 8; ++slot) {
          const uint32_t word = l.masks[(static_cast<size_t>(c) * 32 + lane) * 4 + step / 4];
          if (!((word >> (8 * (step % 4) + slot)) & 1u)) continue;
          const int g = lane / 4, t = lane % 4, reg = slot / 2;
          const int32_t row = tile * 16 + g + 8 * (reg & 1);
          const int32_t col = chunk * 256 + 32 * (step / 2) + 8 * t + 4 * (step % 2) + 2 * (reg / 2) + slot % 2;
          f(row, col, l.values[static_cast<size_t>(at++)]);
        }
  }
}

}  // namespace dbsparse

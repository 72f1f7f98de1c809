#pragma once
// Batch-1 decoding's host/kernel contract (docs/DESIGN.md §10): compiled by the host
// (runtime/decode/decode_linear_plan.cpp) and by NVRTC with templates/decode/decode_bitmap.cuh.
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

// Rows of a column bitmap strip: 32 mask words of 32 rows (include/dbsparse/column_bitmap.hpp).
constexpr int kDecodeStripRows = 1024;
// decode_lanes_ring and decode_dense_cols: the most columns one block takes (it lists its kept ones in shared memory); the
// plan picks its splits of the columns so that no block passes it.
constexpr int kDecodeLanesMaxChunk = 1024;
// decode_lanes_ring's (and decode_dense_cols', decode_dense's) warps per block.
constexpr int kDecodeLanesWarps = 8;
// decode_lanes_ring's stages a warp (STAGES - 1 segments in flight while one is summed).
constexpr int kDecodeRingStages = 4;
// decode_dense's 32-column steps a warp loads before their mma.
constexpr int kDecodeDenseUnroll = 4;
// decode_tiles: the columns of a chunk (16 m16n8k16 steps; the tile bitmap layout's unit,
// runtime/decode/tile_layout.hpp) over 16-row tiles. Its variants: 4 or 8 warps a block, 2 or 3
// stages a warp (entries "tiles_w<W>s<S>"), by default 8 x 2, the fastest of the four measured
// (docs/decisions/decode-kernel-design.md).
constexpr int kDecodeTilesWarps = 8;
constexpr int kDecodeTilesStages = 2;
constexpr int kDecodeTilesChunkCols = 256;
constexpr int kDecodeTilesRows = 16;
// decode_tiles: the most rows of x one launch takes (the columns of an m16n8k16's B operand).
constexpr int kDecodeTilesBatch = 8;
// decode_dense_cols: 16-byte chunks a lane loads from each column (a slab is 32 lanes times that,
// 512 rows in 16 bits, 256 in f32; every column is padded to whole slabs) and columns a warp has
// in flight.
constexpr int kDecodeColsChunks = 2;
constexpr int kDecodeColsUnroll = 4;
DBS_ABI_FN int decode_cols_slab_rows(int value_bytes) { return 32 * (16 / value_bytes) * kDecodeColsChunks; }

}  // namespace dbsparse::abi

#pragma once
// Batch-1 decoding's host/kernel contract (DESIGN.md §10): compiled by the host
// (runtime/decode/decode_linear_plan.cpp) and by NVRTC with templates/decode/decode_bitmap.cuh.
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

// Rows of a column bitmap strip: 32 mask words of 32 rows (include/dbsparse/column_bitmap.hpp).
constexpr int kDecodeStripRows = 1024;
// decode_lanes: the most columns one block takes (it lists its kept ones in shared memory); the
// plan picks its splits of the columns so that no block passes it.
constexpr int kDecodeLanesMaxChunk = 1024;
// decode_lanes' warps per block.
constexpr int kDecodeLanesWarps = 8;
// decode_lanes_ring's stages a warp (STAGES - 1 segments in flight while one is summed).
constexpr int kDecodeRingStages = 4;
// decode_dense's 32-column steps a warp loads before their mma.
constexpr int kDecodeDenseUnroll = 4;

}  // namespace dbsparse::abi

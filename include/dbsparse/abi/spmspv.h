// DB-SpMSpV's host/kernel contract (docs/DESIGN.md §10): compiled by the host (runtime/spmspv/spmspv_plan.cpp,
// include/dbsparse/db_matrix.hpp) and by NVRTC with the templates (templates/spmspv*.cuh), so the
// two cannot drift. Plain structs only; sizes and offsets are asserted here, in both compilers.
#pragma once
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

// Block formats (db-spmspv-icpp26 §3.2). The paper's patched CSR is stored and walked exactly as
// ForceCSR (both paths read these blocks by rows: the row walk beat the column walk at every density
// measured on the H200, NOTES.md step 5), so it is not a type of its own.
enum BlockTypeId { kCoo = 0, kDense = 1, kForceCsr = 2, kForceCsc = 3 };
constexpr int kBlockTypeCount = 4;

// Per-block metadata, stored once, in block-CSR order. 20 bytes, read by the kernels as is.
struct BlockMeta {
  int32_t row;       // block row
  int32_t col;       // block column
  uint32_t val_off;  // first value of this block in the values array
  uint32_t aux_off;  // first byte of this block's index data in the aux array (4-byte aligned)
  uint16_t nnz;      // stored entries (Dense: the true nonzero count; 256 values are stored)
  uint8_t type;      // BlockTypeId
  uint8_t pad;
};
static_assert(sizeof(BlockMeta) == 20, "BlockMeta is 20 bytes on both sides");
static_assert(DBS_ABI_OFFSETOF(BlockMeta, val_off) == 8 && DBS_ABI_OFFSETOF(BlockMeta, nnz) == 16 &&
                  DBS_ABI_OFFSETOF(BlockMeta, type) == 18,
              "BlockMeta layout");

constexpr int kWarps = 4;              // warps per thread block, in every SpMSpV kernel (paper §3.3.2)
constexpr int kPushChunk = 8;          // matrix blocks per push task
constexpr int kSegmentWeight = 16;     // pull: a new segment once the blocks' weight reaches 16 (§3.3.2)
constexpr int kSegmentMaxBlocks = 16;  // what one half-warp holds; weight >= 1 per block keeps to it
// 12 resident blocks (48 warps) per SM caps registers at 40: without a minimum, ptxas kept the
// auto variant at 48 registers and the single-path ones at 32 with local-memory spills (sm_90,
// -Xptxas -v, 2026-11-29).
constexpr int kComputeBlocksPerSm = 12;

#ifndef __CUDACC_RTC__
// The pull path's weight of a block by type: Dense 4, row/column walks 2, COO 1 (host only: the
// plan cuts the segments).
constexpr int segment_weight(int type) { return type == kDense ? 4 : type == kCoo ? 1 : 2; }
#endif

// A pull segment: blocks [first, end) of one row block.
struct Segment {
  int32_t row_block, first, end;
  int32_t alone;  // 1: the only segment of its row block, so it writes y without atomics
};
static_assert(sizeof(Segment) == 16, "read as one int4");

// A push task: up to kPushChunk blocks of one column block, from block-CSC position `first`.
struct PushTask {
  uint32_t col_and_count;  // column block | (blocks - 1) << 28
  uint32_t first;
};
static_assert(sizeof(PushTask) == 8, "read as one uint2");
constexpr uint32_t kTaskCountShift = 28;

// The residual (include/dbsparse/db_matrix.hpp): entries per pull segment and per push piece, 8 per
// lane of one warp; packed indices keep the global index in the low 28 bits.
constexpr int kResidualChunk = 256;
constexpr uint32_t kResidualIndexMask = (1u << 28) - 1u;
constexpr int kResidualLocalShift = 28;

// A push piece of the residual: entries [piece * kResidualChunk, +kResidualChunk) of column block
// col_block's residual column view. Column blocks with at most kResidualSmall entries are listed
// as one small task instead ({col_block, 0}), and a warp takes 32 of those at once.
struct ResidualTask {
  uint32_t col_block;
  uint32_t piece;
};
static_assert(sizeof(ResidualTask) == 8, "read as one uint2");
constexpr int kResidualSmall = 32;

// Counts the mask pass accumulates: non-empty x blocks, x nonzeros, then the push tasks it listed.
struct SpmspvCounters {
  uint32_t nonempty;
  uint32_t xnnz;
  uint32_t block_tasks;
  uint32_t residual_tasks;
  uint32_t small_tasks;
  uint32_t pad[3];
};
static_assert(sizeof(SpmspvCounters) == 32, "SpmspvCounters layout");

// Per-call device state. Every path alternates between two count slots by call (gen): the listing
// kernel adds into slot[gen] and clears slot[gen ^ 1], the compute reads both (their sum is the
// call's) and flips gen (templates/spmspv/spmspv_prep.cuh says why: no last-block ticket).
// finish_ticket is run_sparse_out's output pass's; bar_count the fused kernel's grid barrier. One
// per workspace: calls that share one must be ordered (include/dbsparse/spmspv.hpp).
struct SpmspvState {
  SpmspvCounters slot[2];
  uint64_t bar_count;  // the fused kernel's grid barrier: arrivals, monotonic (8-byte aligned)
  uint32_t gen;
  uint32_t finish_ticket;
  uint32_t last_direction;  // kept for the host to read back
  uint32_t last_res_direction;
  uint32_t last_nonempty;
  uint32_t ycount;  // run_sparse_out: row blocks listed in ylist by this call (reset by its output pass)
  uint32_t yout;    // run_sparse_out: pairs written so far by this call's output pass
  uint32_t pad[3];
};
static_assert(sizeof(SpmspvState) == 112, "SpmspvState layout");
static_assert(DBS_ABI_OFFSETOF(SpmspvState, bar_count) == 64 && DBS_ABI_OFFSETOF(SpmspvState, last_direction) == 80,
              "SpmspvState layout");
constexpr uint32_t kDirPush = 1, kDirPull = 2;

// The kernels' one argument, by value. Device pointers on both sides (the host fills them from
// CUdeviceptr values).
template <typename T>
struct SpmspvArgs {
  const int32_t* blk_col_idx;
  const int32_t* blk_col_ptr;
  const int32_t* csc2csr;
  const BlockMeta* meta;
  const T* values;
  const uint8_t* aux;
  const Segment* segments;  // block segments [0, nblock_segments), then residual segments
  const uint32_t* res_rc;   // residual row view: local row << 28 | column
  const T* res_row_val;
  const int32_t* res_col_ptr;  // residual column view, by column block
  const uint32_t* res_cr;      // local column << 28 | row
  const T* res_col_val;
  PushTask* block_tasks;  // workspace: this call's push lists, written by prep
  ResidualTask* residual_tasks;
  ResidualTask* small_tasks;
  SpmspvState* state;
  uint16_t* xmask;
  const T* x;
  T* y;
  // run_sparse_out only (null otherwise): a bit per row block that push added into, and the list
  // of those row blocks, so the output pass costs the touched rows, not all of y.
  uint32_t* ytouched;
  int32_t* ylist;
  // Mapped host memory, two words (null where the host knows x's nonzeros): compute writes the
  // call's x nonzeros and non-empty x blocks there; run() sizes the next call's compute grid from
  // the first and picks the next call's kernels from both.
  uint32_t* feedback;
  int32_t rows, cols, block_cols, nsegments, nblock_segments;
  float xb_threshold;   // blocks: push while non-empty x blocks < xb_threshold * block_cols
  float res_threshold;  // residual: push while x nonzeros < res_threshold * cols
  int32_t block_rows;
};
static_assert(sizeof(SpmspvArgs<float>) == 208 && sizeof(SpmspvArgs<double>) == 208, "SpmspvArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmspvArgs<float>, rows) == 176 &&
                  DBS_ABI_OFFSETOF(SpmspvArgs<float>, res_threshold) == 200,
              "SpmspvArgs layout");

}  // namespace dbsparse::abi

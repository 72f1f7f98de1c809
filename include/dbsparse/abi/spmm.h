// SpMM's host/kernel contract (docs/DESIGN.md §10): compiled by the host (runtime/spmm/spmm_plan.cpp, the
// BRP format, a cpu test) and by NVRTC with templates/spmm/spmm_tc.cuh and spmm_rows.cuh.
//
// The mma.m16n8k8 .tf32 fragment layouts are here as functions, so that the kernel and a cpu test
// that emulates one mma on the host run the same index math. They are the PTX ISA's (§9.7.14.5.7
// "Matrix Fragments for mma.m16n8k8", .tf32 A and B, .f32 C/D), with groupID = lane >> 2 and
// threadID_in_group = lane % 4:
//   A (16 x 8, row): a_i at row groupID + 8 * (i & 1), col threadID_in_group + 4 * (i >> 1)
//   B (8 x 8, col):  b_i at row threadID_in_group + 4 * i, col groupID
//   C, D (16 x 8):   c_i at row groupID + 8 * (i >> 1), col 2 * threadID_in_group + (i & 1)
#pragma once
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

constexpr int kSpmmWindowRows = 16;  // m of mma.m16n8k8: a BRP row window
constexpr int kSpmmTileCols = 8;     // n: the columns of B and C one warp takes at a time
constexpr int kSpmmBlockSlots = 8;   // k: the slots of a BRP TC block
constexpr uint8_t kSpmmPadLocalId = 0xFF;
constexpr int kSpmmRowWarps = 8;           // warps per block of brp_residual
constexpr int kSpmmMaxCols = 4096;         // n_cols a plan accepts
constexpr int kSpmmFinalizeThreads = 256;  // threads per block of spmm_finalize16

DBS_ABI_FN int mma_group_id(int lane) { return lane >> 2; }
DBS_ABI_FN int mma_thread_in_group(int lane) { return lane & 3; }

DBS_ABI_FN int mma_a_row(int lane, int i) { return mma_group_id(lane) + 8 * (i & 1); }
DBS_ABI_FN int mma_a_col(int lane, int i) { return mma_thread_in_group(lane) + 4 * (i >> 1); }
// The inverse: which lane and register hold A(row, col).
DBS_ABI_FN int mma_a_lane(int row, int col) { return (row & 7) * 4 + (col & 3); }
DBS_ABI_FN int mma_a_reg(int row, int col) { return (row >> 3) | ((col >> 2) << 1); }

DBS_ABI_FN int mma_b_row(int lane, int i) { return mma_thread_in_group(lane) + 4 * i; }
DBS_ABI_FN int mma_b_col(int lane) { return mma_group_id(lane); }

DBS_ABI_FN int mma_c_row(int lane, int i) { return mma_group_id(lane) + 8 * (i >> 1); }
DBS_ABI_FN int mma_c_col(int lane, int i) { return 2 * mma_thread_in_group(lane) + (i & 1); }

// A BRP group's 16 x 8g tile is kept in fragment order, g blocks of 32 lanes of 4 registers, so
// that a warp loads block b's A operand with one 16-byte load per lane. Entry e of a group (local
// id lid = row * 8 + slot) is in block e / (8f): this is its place in that array.
DBS_ABI_FN int brp_afrag_index(int local_id, int e, int f) {
  const int row = local_id >> 3, col = local_id & 7;
  return ((e / (kSpmmBlockSlots * f)) * 32 + mma_a_lane(row, col)) * 4 + mma_a_reg(row, col);
}

// mma.m16n8k16 with .f16 or .bf16 multiplicands and .f32 accumulators (PTX ISA §9.7.14.5.8,
// "Matrix Fragments for mma.m16n8k16 with floating point type"): each .b32 register holds two
// elements, the lower-numbered one in its low 16 bits, so a lane's A is 8 halves a0..a7 (4
// registers) and its B 4 halves b0..b3 (2 registers); C and D are as in m16n8k8 above.
//   A (16 x 16, row): a_i at row groupID + 8 * ((i >> 1) & 1), col 2 * threadID_in_group + (i & 1) + 8 * (i >> 2)
//   B (16 x 8, col):  b_i at row 2 * threadID_in_group + (i & 1) + 8 * (i >> 1), col groupID
// A BRP block is 16 x 8 (k = 8), so one k16 mma takes a pair of a group's blocks: block 2p in
// k 0..7 and block 2p + 1 in k 8..15. g = 1 has no partner: its k 8..15 half is zero in A and
// its B registers are not loaded (zero). So a group is ceil(g / 2) mma; the format stays the same
// for every precision and the A tile of a pair is 32 lanes x 16 bytes, one 16-byte load per lane.
constexpr int kSpmmK16 = 16;
DBS_ABI_FN int spmm_k16_pairs(int g) { return (g + 1) / 2; }

DBS_ABI_FN int mma16_a_row(int lane, int i) { return mma_group_id(lane) + 8 * ((i >> 1) & 1); }
DBS_ABI_FN int mma16_a_col(int lane, int i) { return 2 * mma_thread_in_group(lane) + (i & 1) + 8 * (i >> 2); }
// The inverse: which lane and which of its 8 halves hold A(row, col).
DBS_ABI_FN int mma16_a_lane(int row, int col) { return (row & 7) * 4 + ((col & 7) >> 1); }
DBS_ABI_FN int mma16_a_half(int row, int col) { return (col & 1) | ((row >> 3) << 1) | ((col >> 3) << 2); }

DBS_ABI_FN int mma16_b_row(int lane, int i) { return 2 * mma_thread_in_group(lane) + (i & 1) + 8 * (i >> 1); }
DBS_ABI_FN int mma16_b_col(int lane) { return mma_group_id(lane); }

// The k16 counterpart of brp_afrag_index, in halves: a group's tile is ceil(g / 2) pairs of 32
// lanes of 8 halves (one uint4 per lane). Entry e (local id row * 8 + slot) is in block
// b = e / (8f): pair b / 2, k column 8 * (b % 2) + slot.
DBS_ABI_FN int brp_afrag16_index(int local_id, int e, int f) {
  const int row = local_id >> 3, block = e / (kSpmmBlockSlots * f);
  const int col = (block & 1) * kSpmmBlockSlots + (local_id & 7);
  return ((block >> 1) * 32 + mma16_a_lane(row, col)) * 8 + mma16_a_half(row, col);
}

// Every SpMM kernel's only argument, by value. C is m x n and B is k x n, both row-major, in the
// key's value type: f32, or f16 / bf16 (then vals, group_vals, b and c point at 16-bit words, read
// through the kernel's value type; the pointer types stay float so that the layout is one).
// alpha and beta are f32 for every value type.
struct SpmmArgs {
  // Row kernels: `rows` rows of a CSR (row_ptr, col_idx, vals). BRP's residual rows: C's row of
  // row r is row_id[r]. A reordered CSR plan (SpmmConfig::reorder): warp u takes A's row
  // row_id[u] (and writes that row of C). Null: row r, C's row r.
  const int32_t* row_ptr;
  const int32_t* col_idx;
  const float* vals;
  const int32_t* row_id;
  // BRP groups (brp.hpp): window, old_col_id (8g per group), local_id and values with their strides.
  const int32_t* group_window;
  const int32_t* old_col;
  const uint8_t* local_id;
  const float* group_vals;
  const float* b;
  float* c;
  int32_t rows;
  int32_t m, n;
  int32_t local_stride, value_stride;
  float alpha, beta;
  // CSR pieces pass: 1 sums the pieces of one row within a block in shared memory first, so a hub
  // row cut into many pieces takes one atomic add per block instead of one per piece.
  int32_t piece_reduce;
  // BRP: window w's groups are [win_group[w], win_group[w + 1]) (windows + 1 entries).
  const int32_t* win_group;
  // Long windows (BRP) and long rows (CSR) are cut: the first pass takes at most max_run groups of
  // a window (entries of a row) and stores; the rest are n_pieces triples (window or row, begin,
  // end) that a second pass adds with atomics (f32: into C; f16 / bf16: into SpmmAcc::w).
  const int32_t* pieces;
  int32_t n_pieces, max_run;
  // BRP with pre-expanded A operands (brp_tc_windows<.., FRAGS = true>): group q's block b is
  // afrag[((q * g + b) * 32 + lane) * 4 .. + 3], tf32 bits in fragment order, zeros included
  // (brp_expand_frags writes it once per plan). f16 / bf16: pair p of group q is
  // afrag[((q * ceil(g / 2) + p) * 32 + lane) * 4 .. + 3], 8 halves (brp_afrag16_index).
  const uint32_t* afrag;
  // CSR f32 with SpmmConfig::csr_split = 1: a long row is cut whole into n_parts parts, in the same
  // launch as the other rows (units [0, n_parts) are the parts, then the rows; a row longer than
  // max_run is skipped as a row). parts: quadruples (row, begin, end, slot); slot s's parts are
  // [part_first[s], part_first[s + 1]). Part q stores its unscaled sum to part_sum[q * n ..], and
  // the last of a row's parts to count itself in part_count[s] adds them in part order and writes
  // C = alpha * sum + beta * C, then sets the count back to 0 for the next call. No atomics on C,
  // no second launch, and the sum's order is fixed. Null / 0 when nothing is cut or the plan
  // takes the second, atomic pass (pieces above).
  const int32_t* parts;
  const int32_t* part_first;
  float* part_sum;
  uint32_t* part_count;
  int32_t n_parts;
  // 1: every store of C's final value (store_c, a split row's last part, spmm_finalize16) writes
  // max(value, 0) (SpmmEpilogue::Relu, fused). Only the CSR path's launches set it, and only when
  // each C entry has one final writer there (no atomic pieces pass into C).
  int32_t relu;
};
static_assert(sizeof(SpmmArgs) == 184, "SpmmArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmmArgs, parts) == 144 && DBS_ABI_OFFSETOF(SpmmArgs, n_parts) == 176 &&
                  DBS_ABI_OFFSETOF(SpmmArgs, relu) == 180,
              "SpmmArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmmArgs, win_group) == 112 && DBS_ABI_OFFSETOF(SpmmArgs, pieces) == 120,
              "SpmmArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmmArgs, afrag) == 136, "SpmmArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmmArgs, b) == 64 && DBS_ABI_OFFSETOF(SpmmArgs, c) == 72, "SpmmArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmmArgs, rows) == 80 && DBS_ABI_OFFSETOF(SpmmArgs, n) == 88, "SpmmArgs layout");
static_assert(DBS_ABI_OFFSETOF(SpmmArgs, value_stride) == 96 && DBS_ABI_OFFSETOF(SpmmArgs, beta) == 104,
              "SpmmArgs layout");

// f16 / bf16 only, the 16-bit kernels' second argument (the f32 kernels take SpmmArgs alone): where
// the rows (CSR) or windows (BRP) cut into pieces are summed. Adding each piece into a 16-bit C
// rounded C at every add, and with many pieces the roundings compounded past bf16's 1e-2 budget
// (docs/decisions/spmm-kernel-design.md); here every part of such a unit is an f32
// sum in w, and spmm_finalize16 rounds C = alpha * w + beta * C once.
//  - units: the cut units (row or window ids), ascending; slot[u]: u's index there, or -1. Both
//    null (and n_units 0) when a plan cuts nothing: every unit then goes to C directly.
//  - w: n_units * unit_rows rows of n floats, unit i's row r (unit_rows 1 for CSR, 16 for BRP's
//    windows) at row i * unit_rows + r. The first pass stores its partial there (it covers every
//    entry of the unit, so w needs no zeroing), the pieces add with f32 atomicAdd, both unscaled.
struct SpmmAcc {
  float* w;
  const int32_t* slot;
  const int32_t* units;
  int32_t n_units, unit_rows;
};
static_assert(sizeof(SpmmAcc) == 32, "SpmmAcc layout");

// Staged windows (f32, float4, SpmmConfig::csr_stage_reuse): runs of short rows that share B's
// rows, a block each. csr_spmm_staged copies the window's distinct columns' rows of B into shared
// memory once (cp.async), then its rows read B there. Built on the host (runtime/spmm/spmm_stage.hpp):
//  - window w: rows win_row[w] .. win_row[w + 1] of rows/ptr, distinct columns win_col[w] ..
//    win_col[w + 1] of cols;
//  - staged row i: C's row rows[i], its entries ptr[i] .. ptr[i + 1] of slot (the entry's column as
//    an index into its window's columns) and vals.
constexpr int kSpmmStageWarps = 4;          // warps a window's block
constexpr int kSpmmStageBytes = 48 * 1024;  // shared memory a window's B rows may take (no opt-in needed)
struct SpmmStageArgs {
  const int32_t* win_row;
  const int32_t* win_col;
  const int32_t* cols;
  const int32_t* rows;
  const int32_t* ptr;
  const uint16_t* slot;
  const float* vals;
  const float* b;
  float* c;
  int32_t n, windows;
  float alpha, beta;
};
static_assert(sizeof(SpmmStageArgs) == 88, "SpmmStageArgs layout");

}  // namespace dbsparse::abi

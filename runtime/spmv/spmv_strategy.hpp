#pragma once
// Problem -> key(s) for SpMV (the pure first stage): the config's strategy and cutoffs plus the
// matrix's shape decide the kernel variants.
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/keys/spmv_key.hpp"
#include "dbsparse/abi/spmv.h"
#include "dbsparse/spmv.hpp"

namespace dbsparse {

// Entries per lane, E: a lane of any strategy takes 4 entries a step (strided_dot), and a row of
// up to E entries per lane is best served without more lanes: about 2 steps a lane in f32 and 1 in
// f64 (lane_entries_f32 = 8, lane_entries_f64 = 4; the figures: docs/decisions/spmv-defaults.md).
//
// A single strategy for the whole matrix. config.strategy:
//   "scalar", "vector" (config.lanes, 0: from the mean), "block", "longrow";
//   "uniform": one strategy chosen from rows, nnz and the mean row length (docs/DESIGN.md [2]),
//     no read-back: mean <= scalar_max_len (0: E) scalar; mean <= 32 E vector with the smallest power of two >= mean/E
//     lanes, in [2, 32]; longer: block per row.
// Throws UsageError for "classified" (see choose_spmv_layout).
codegen::SpmvKey choose_spmv_key(const SpmvConfig& config, int64_t rows, int64_t nnz, codegen::ValueType value);

// One bin of a classified plan: rows of length (previous max_len, max_len] run `key`.
struct SpmvBin {
  codegen::SpmvKey key;
  int64_t max_len = 0;
};

// The plan's layout: one bin (uniform or forced strategy) or the classified bins, shortest rows
// first, the last one unbounded. Classified (defaults: SpmvConfig):
//   scalar up to scalar_max_len (0: E) entries, then vector bins of v1..v4_lanes (2, 4, 8, 32) lanes up to lanes x E
//     entries each (f32: 8, 16, 32, 64, 256; f64: 4, 8, 16, 32, 128);
//   block_max_len 4096: a 256-thread block takes 1024 entries a step, at most 4 steps (at 65536,
//     a power-law graph's longest rows take dozens of dependent steps in one block);
//   longer rows: long-row split, longrow_chunk (2048) entries per block;
//   fold_share 0.02: a bin with less than 2% of the nonzeros joins the next wider one, so a
//     regular matrix runs one kernel over all rows with no row list;
//   fuse_bins 1: every bin in one launch of fused_key's kernel; one kernel per bin (0, the
//     paper's way) pays a launch and a partly empty grid per bin.
// The figures behind these defaults: docs/decisions/spmv-defaults.md.
struct SpmvLayout {
  bool classified = false;
  std::vector<SpmvBin> bins;
  // Set from the config by choose_spmv_layout.
  int64_t longrow_chunk = 0;
  double fold_share = 0;
  bool fuse_bins = true;
  codegen::SpmvKey fused_key;  // classified: the one-launch kernel for these bins
  // Classified, one launch: rows of length <= window (the largest scalar or vector bin bound up
  // to config.window_max_len; 0: none) run in memory order (fused_key.window), not from lists.
  int64_t window = 0;
  // Whether bin b's rows run in the window: a scalar or vector bin (below the block bin) whose
  // bound is within it. False for every bin without a window.
  bool in_window(size_t b) const { return b < static_cast<size_t>(abi::kSpmvBlockBin) && bins[b].max_len <= window; }
  // A classified config's small-matrix path (spmv_fill_layout): the lanes a row of its one vector
  // kernel, the resident threads they fill and A's longest row; 0 lanes: not taken.
  int fill_lanes = 0;
  int64_t fill_threads = 0, fill_max_len = 0;
};
SpmvLayout choose_spmv_layout(const SpmvConfig& config, int64_t rows, int64_t nnz, codegen::ValueType value);

// A classified config's small-matrix path (SpmvConfig::fill_threads): the lanes a row of one
// vector kernel over every row, or 0 to classify. rows, nnz and max_len are A's (max_len: its
// longest row); resident: the device's resident threads, taken where fill_threads is -1. Never
// fewer lanes than uniform would give the mean row.
int spmv_fill_lanes(const SpmvConfig& config, int64_t rows, int64_t nnz, int64_t max_len, codegen::ValueType value,
                    int64_t resident);
// That path's layout: one unclassified vector bin of `lanes` lanes over every row.
SpmvLayout spmv_fill_layout(const SpmvConfig& config, codegen::ValueType value, int lanes, int64_t threads,
                            int64_t max_len);
// The threads spmv_fill_lanes fills: fill_threads, or the device's resident threads for -1.
int64_t spmv_fill_threads(const SpmvConfig& config, int64_t resident);

// Thread blocks a row kernel (scalar, vector, block) is launched with for `rows` rows.
int64_t spmv_grid(const codegen::SpmvKey& key, int64_t rows);

}  // namespace dbsparse

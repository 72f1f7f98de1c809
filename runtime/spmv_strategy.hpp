#pragma once
// Problem -> key(s) for SpMV (the pure first stage): the config's strategy and cutoffs plus the
// matrix's shape decide the kernel variants.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/spmv_key.hpp"

namespace dbsparse {

// A single strategy for the whole matrix. params["strategy"]:
//   "scalar", "vector" (params["lanes"], 0: from the mean), "block", "longrow";
//   "uniform": one strategy chosen from rows, nnz and the mean row length (adaptive-csr-spmv.txt),
//     no read-back: mean <= scalar_max_mean (8) scalar — a thread does up to 8 entries in two
//     steps of strided_dot, and on the H200 the 7-point stencil ran at 60.7 us scalar against
//     66.8 with 2 lanes and 93.8 with 4 (2026-11-29); mean <= vector_max_mean (64) vector with the
//     power of two covering mean/4 lanes, in [2, 32] — each lane takes four entries per step;
//     longer: block per row.
// Missing parameters take default_params("spmv"). Throws UsageError for an unknown strategy,
// and for "classified" (see choose_spmv_layout).
codegen::SpmvKey choose_spmv_key(const nlohmann::json& params, int64_t rows, int64_t nnz,
                                 codegen::ValueType value);

// One bin of a classified plan: rows of length (previous max_len, max_len] run `key`.
struct SpmvBin {
  codegen::SpmvKey key;
  int64_t max_len = 0;
};

// The plan's layout: one bin (uniform or forced strategy) or the classified bins, shortest rows
// first, the last one unbounded. Classified defaults (H200 bench, 2026-11-29, NOTES.md):
//   scalar_max_len 8: as scalar_max_mean above;
//   v1 4 lanes up to 16, v2 8 lanes up to 64, v3 32 lanes up to 512: a lane takes 4 entries a
//     step, so a bin's longest row takes 1, 2 and 4 steps (the 27-point stencil's 27-entry rows:
//     38 us with 8 lanes, 68 us scalar);
//   block_max_len 4096: a 256-thread block takes 1024 entries a step, at most 4 steps; with
//     65536 (the first try) RMAT-19's longest rows would take ~60 dependent steps, the likely
//     reason classified RMAT-19 ran at 91 us against cuSPARSE's 62;
//   longer rows: long-row split, longrow_chunk (2048) entries per block, one finalize pass;
//   fold_share 0.02: a bin with less than 2% of the nonzeros joins the next wider one, so a
//     regular matrix runs one kernel over all rows with no row list;
//   fuse_bins 1: all bins in one launch of fused_key's kernel (no gap or tail between bins);
//     0 launches one kernel per bin, as the paper's classified mode would.
struct SpmvLayout {
  bool classified = false;
  std::vector<SpmvBin> bins;
  int64_t longrow_chunk = 2048;
  double fold_share = 0.02;
  bool fuse_bins = true;
  codegen::SpmvKey fused_key;  // classified: the one-launch kernel for these bins
};
SpmvLayout choose_spmv_layout(const nlohmann::json& params, int64_t rows, int64_t nnz,
                              codegen::ValueType value);

// Thread blocks a row kernel (scalar, vector, block) is launched with for `rows` rows.
int64_t spmv_grid(const codegen::SpmvKey& key, int64_t rows);

}  // namespace dbsparse

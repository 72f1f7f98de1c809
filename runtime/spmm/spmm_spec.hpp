#pragma once
// The SpMM plan's spec: every host decision of a plan (the path, the rows' order, the CSR kernels'
// rows a warp and long rows, staged windows, the condensed tiles, the TC windows' pieces, the
// 16-bit workspace, the launch shapes and the kernel keys), made from A, n, the options, the
// config and the SM count alone. No CUDA and no device memory: materialize (spmm_materialize.cpp)
// uploads it and loads its kernels, explain (spmm_explain.cpp) renders it, and
// tests/cpu/ops/test_spmm_spec.cpp checks it on the CPU. Internal: only runtime/spmm and the tests
// include it.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/spmm.hpp"
#include "dbsparse/tc_condensed.hpp"
#include "runtime/spmm/spmm_pieces.hpp"
#include "runtime/spmm/spmm_stage.hpp"

namespace dbsparse::spmm_detail {

// Four values a load whenever n % 4 == 0 (and B and C are aligned to 4 values, checked per run):
// below n = 128 the CSR kernel puts fewer lanes across N and more subgroups over the entries
// (csr_lanes).
inline bool wants_vec4(int n) { return n % 4 == 0; }

// The CSR kernel's lanes across N: the fewest (a power of two up to 32) whose lanes * vec columns
// cover n; the rest of the warp splits the row's entries.
inline int csr_lanes(int n, int vec) {
  int lanes = 1;
  while (lanes < 32 && lanes * vec < n) lanes *= 2;
  return lanes;
}

inline constexpr int32_t kAutoFillWindows = 2048;  // auto's sample for condensed_fill (tc_condensed.hpp)

// Rows a warp when the config leaves it to the plan (csr_rows_per_warp 0): R rows where A's mean
// row is at most 32 entries and the rows fill the GPU twice over at R a warp (64 warps an SM).
// Small matrices keep one row a warp: fewer warps than the GPU holds lose more than the shared
// fixed costs save. Why: docs/decisions/spmm-csr-rows-per-warp.md.
inline int auto_rows_per_warp(int lanes, int64_t nnz, int32_t rows, int sm_count) {
  const double mean = rows > 0 ? double(nnz) / double(rows) : 0.0;
  const int64_t resident = int64_t{64} * std::max(sm_count, 1);
  for (int r : {4, 2}) {
    const int subgroups = 32 / r / lanes;
    if (subgroups >= 1 && mean <= 32.0 && int64_t{rows} >= 2 * r * resident) return r;
  }
  return 1;
}

// Rows a warp of the CSR kernel with `vec` values a load: the config's (0: auto_rows_per_warp),
// as far as the lanes across N leave room (at n = 128 a row takes all 32 lanes).
inline int csr_rows_a_warp(const SpmmConfig& c, int n_cols, int vec, int64_t nnz, int32_t rows, int sm_count) {
  const int lanes = csr_lanes(n_cols, vec);
  const int asked = c.csr_rows_per_warp > 0 ? c.csr_rows_per_warp : auto_rows_per_warp(lanes, nnz, rows, sm_count);
  return std::min(asked, 32 / lanes);
}

// reorder auto: the degree order where A's row lengths vary this much (standard deviation over
// mean); where rows are alike the order only costs. Why: docs/decisions/spmm-reorder-auto.md.
inline constexpr double kAutoDegreeCv = 0.6;

// A 16-bit plan's f32 workspace for the units (CSR rows or TC windows) cut into pieces
// (abi::SpmmAcc): the cut units' rows, n floats each, rounded into C once by the finalize pass.
struct SpmmWorkspaceSpec {
  int32_t n_units = 0;    // 0: no workspace
  int32_t unit_rows = 1;  // 1 a CSR row, abi::kSpmmWindowRows a TC window
  int64_t floats = 0;
  unsigned finalize_grid = 1;
};

// The host arrays a plan uploads; materialize moves them to the device and drops them.
struct SpmmTables {
  std::vector<int32_t> pieces;     // triples (unit, begin, end): SpmmArgs::pieces
  SpmmSplitParts split;            // CSR, f32, csr_split: SpmmArgs::parts
  SpmmCutUnits cut;                // 16 bits with pieces: abi::SpmmAcc's units and slot
  SpmmStageWindows stage;          // CSR staged windows: abi::SpmmStageArgs
  std::vector<int32_t> win_group;  // TC paths: windows + 1, each window's group range
  CondensedTc condensed;           // the condensed path's tiles
};

struct SpmmSpec {
  int32_t rows = 0, cols = 0;
  int64_t nnz = 0;
  int n = 1;
  SpmmDtype dtype = SpmmDtype::F32;
  Config config;     // as read (tuning DB or SpmmOptions::config)
  SpmmConfig typed;  // with SpmmOptions' explicit fields applied
  SpmmPath asked = SpmmPath::Auto, path = SpmmPath::Brp;
  int f = 1, g = 4;
  double auto_share = -1;  // brp_group_share, when Auto weighed it
  double auto_fill = -1;   // condensed_fill, when Auto weighed it
  std::string trial;       // Auto's plan-time trial or its recorded outcome (explain), empty when none
  bool vec4 = false;
  // SpmmOptions::epilogue: fused (SpmmArgs::relu) where each entry of C has one final writer, the
  // CSR path's stores; else a pass over C after the product.
  SpmmEpilogue epilogue = SpmmEpilogue::None;
  bool epilogue_fused = false;
  // SpmmOptions::reduce: not Sum takes the CSR path. Max and min: one kernel (csr_spmm_reduce),
  // long rows cut into parts as the f32 sum's (n_parts), no pieces, no staged window (extreme_kernel). Mean: the sum's kernels, cuts and all, over A's
  // values divided by their row's length once at plan time (mean_scaled).
  SpmmReduce reduce = SpmmReduce::Sum;

  // The CSR path's rows' order (SpmmConfig::reorder): warp k takes A's row row_order[k].
  Reorder order = Reorder::None;
  double auto_cv = -1;  // the rows' length CV, when reorder auto weighed it
  double reorder_ms = 0;
  std::vector<int32_t> row_order;  // old_of_new; on the device as row_id

  // The row kernels: CSR's over all of A, or BRP's over its residual rows (csr_rows of them).
  int32_t csr_rows = 0;
  codegen::SpmmKey csr_key1, csr_key4;  // CSR: the scalar and (vec4) float4 modules
  int csr_warps = 8;                    // SpmmConfig::csr_warps
  int csr_rows1 = 1, csr_rows4 = 1;     // rows a warp of each (SpmmConfig::csr_rows_per_warp)
  unsigned csr_grid1 = 1, csr_grid4 = 1, csr_pieces_grid = 1;
  int32_t n_parts = 0, cut_rows = 0;  // CSR f32 split: long rows' parts in the rows' launch, the rows cut
  // Staged windows (SpmmConfig::csr_stage_reuse; spmm_stage.hpp), float4 calls only.
  int32_t st_windows = 0, st_rows = 0, st_cols = 0, plain_count = 0;
  int64_t st_entries = 0;
  unsigned st_smem = 0;      // the widest window's rows of B, bytes
  unsigned plain_grid4 = 1;  // the CSR launch over the rows left plain
  double st_build_ms = 0;

  // Both paths: runs past max_run go to the pieces pass; 16 bits sum cut units in the workspace.
  int32_t max_run = 0, n_pieces = 0;
  SpmmWorkspaceSpec acc;

  // The TC paths (BRP and condensed).
  codegen::SpmmKey tc_key;
  int tc_warps = 4;
  unsigned tc_grid = 1, tc_pieces_grid = 1;
  int32_t groups = 0;
  bool frags = false;                          // the TC kernels read A operands expanded in fragment order
  bool convert_on_host = false;                // BRP: csr_to_brp on the host instead of csr_to_brp_device
  int32_t local_stride = 0, value_stride = 0;  // BRP
  double fill = 0, convert_ms = 0;             // condensed: tile fill, host conversion time
  int64_t csr_bytes = 0;                       // condensed: A in CSR, what its tiles are weighed against

  SpmmTables tables;
};

// Max and min run csr_spmm_reduce; sum and mean the sum's kernels.
inline bool extreme_kernel(SpmmReduce r) { return r == SpmmReduce::Max || r == SpmmReduce::Min; }

// A with each value divided by its row's length: the sum of its products is then their mean
// (SpmmReduce::Mean), whatever cuts the sum's kernels make of a long row.
CsrMatrix<float> mean_scaled(const CsrMatrix<float>& a);

// The spec of a CsrMatrix<float>'s plan; `config` is the config read (before SpmmOptions' fields
// apply). Throws UsageError for options the config cannot take. A BRP spec ends before the
// conversion: its windows depend on the converted groups (place_brp).
SpmmSpec spmm_spec(const CsrMatrix<float>& a, int n_cols, const SpmmOptions& opt, Config config, int sm_count);

// BRP, once converted: the groups' windows (group_window, one per group, ascending) and the
// residual rows set the TC launch, its pieces and workspace, and whether operands are expanded.
void place_brp(SpmmSpec& s, const std::vector<int32_t>& group_window, int64_t residual_rows);

// The spec of a DeviceCsrView64's plan (f32, the CSR path, nothing cut): all but the rows' order,
// which is made on the device (view64_order says which).
SpmmSpec spmm_view64_spec(int32_t rows, int32_t cols, int64_t nnz, int n_cols, const SpmmOptions& opt, Config config,
                          int sm_count);
// "none", "degree" or "auto" (UsageError for an order that needs A on the host).
std::string view64_order(const SpmmOptions& opt, const SpmmConfig& typed);

}  // namespace dbsparse::spmm_detail

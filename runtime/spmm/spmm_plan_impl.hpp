#pragma once
// The SpMM plan's state (SpmmPlan::Impl) and the helpers its three sources share: the host plan
// (spmm_plan.cpp), the plan of a DeviceCsrView64 (spmm_plan_view64.cpp) and the calls, accessors
// and explain (spmm_run.cpp). Internal: only runtime/spmm includes it.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/spmm.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/l1_carveout.hpp"
#include "runtime/spmm/spmm_pieces.hpp"
#include "runtime/spmm/spmm_relu.hpp"
#include "runtime/spmm/spmm_stage.hpp"

namespace dbsparse {
namespace spmm_detail {

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
// H200, n = 32, s24 run 1 (R = 1 / 2 / 4, us): uniform 200K d = 16 101.6 / 74.8 / 63.7,
// luxembourg_osm 39.2 / 22.1 / 12.2, R-MAT 17 (mean 28) 102 / 84 / 74, community 100K (mean 30)
// 68.5 / 60.0 / 56.6; on small matrices fewer warps than the GPU holds lose (ex10hs, 2.5K rows:
// 4.9 / 6.3 / 8.8; Cora 7.9 / 8.0 / 12.4). max_run stays a whole warp's (above): cutting rows at
// a group's 32 entries a subgroup sent more rows to parts and cost more than it saved (run 3:
// R-MAT 17 at R = 2 84 -> 96 us, R-MAT 16 38 -> 46).
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
// mean). On the H200 (2026-12-04, docs/bench/2026-12-04-s22-run6-spmm-graphs.*) it gained 1.10-1.28x
// at N = 32 on power-law, R-MAT, cit-HepPh and bayer10 (CV 0.7 and up) and was within noise on the
// other CV >= 0.6 matrices; it lost up to 1.35x where rows are alike (community at N = 128, CV
// about 0.2; road graph, uniform, mhd3200a: 0.2-0.3).
inline constexpr double kAutoDegreeCv = 0.6;

template <class U>
inline DeviceBuffer<U> upload(const std::vector<U>& v) {
  return DeviceBuffer<U>(std::span<const U>(v));
}

template <class U>
inline const U* dev(const DeviceBuffer<U>& b) {
  return reinterpret_cast<const U*>(b.ptr());
}

}  // namespace spmm_detail

struct SpmmPlan::Impl {
  int32_t rows = 0, cols = 0;
  int64_t nnz = 0;
  int n = 1;
  SpmmPath asked = SpmmPath::Auto, path = SpmmPath::Brp;
  SpmmDtype dtype = SpmmDtype::F32;
  int f = 1, g = 4;
  Config config;                  // as read (tuning DB or SpmmOptions::config)
  SpmmConfig typed;               // with SpmmOptions' explicit fields applied
  double auto_share = -1;         // brp_group_share, when Auto weighed it
  double auto_fill = -1;          // condensed_fill, when Auto weighed it
  double fill = 0;                // the condensed path's tile fill
  double convert_ms = 0;          // the condensed path's host conversion
  int64_t csr_bytes = 0;          // the condensed path: A in CSR, what its tiles are weighed against
  Reorder order = Reorder::None;  // the CSR path's row order (SpmmConfig::reorder)
  double auto_cv = -1;            // the rows' length CV, when reorder auto weighed it
  double reorder_ms = 0;
  std::vector<int32_t> row_order;  // old_of_new; on the device as row_id
  BrpStats stats;                  // BRP path
  // The row kernels' CSR: the residual rows (BRP; row_id maps them to C's rows) or all of A (CSR).
  DeviceBuffer<int32_t> row_ptr, col_idx, row_id;
  DeviceBuffer<float> vals;
  DeviceBuffer<uint16_t> vals16;  // instead of vals in f16 / bf16
  int32_t csr_rows = 0;
  // The TC groups.
  DeviceBuffer<int32_t> window, old_col;
  DeviceBuffer<uint8_t> local_id;
  DeviceBuffer<float> group_vals;
  DeviceBuffer<uint16_t> group_vals16;  // instead of group_vals in f16 / bf16
  int32_t local_stride = 0, value_stride = 0, groups = 0;
  CUfunction tc = nullptr, rows1 = nullptr, rows4 = nullptr;
  int carveout = -1;             // the rows kernels' preferred shared carveout (l1_carveout.hpp); -1: the driver's
  DeviceBuffer<uint32_t> afrag;  // the groups' A operands in fragment order, when expanded (SpmmArgs::afrag)
  CUfunction tc_pieces = nullptr, rows1_pieces = nullptr, rows4_pieces = nullptr;
  DeviceBuffer<int32_t> pieces;  // triples: see SpmmArgs::pieces
  int32_t n_pieces = 0, max_run = 0;
  // CSR f32 split (SpmmConfig::csr_split): long rows' parts in the rows' launch (SpmmArgs::parts).
  DeviceBuffer<int32_t> parts, part_first;
  DeviceBuffer<float> part_sum;
  DeviceBuffer<uint32_t> part_count;
  int32_t n_parts = 0;                                         // the cut rows are part_first.size() - 1
  unsigned csr_grid1 = 1, csr_grid4 = 1, csr_pieces_grid = 1;  // the scalar and float4 kernels'
  int csr_rows1 = 1, csr_rows4 = 1;                            // rows a warp of each (SpmmConfig::csr_rows_per_warp)
  // Staged windows (SpmmConfig::csr_stage_reuse; abi::SpmmStageArgs, spmm_stage.hpp), float4 calls
  // only: the windows' arrays and kernel, and the rows left to the CSR kernel then (plain_rows).
  DeviceBuffer<int32_t> st_win_row, st_win_col, st_cols, st_rows, st_ptr, plain_rows;
  DeviceBuffer<uint16_t> st_slot;
  DeviceBuffer<float> st_vals;
  int32_t st_windows = 0, plain_count = 0;
  double st_build_ms = 0;
  CUfunction staged = nullptr;
  unsigned plain_grid4 = 1;
  unsigned st_smem = 0;  // the largest window's rows of B, bytes

  // The rows kernels (scalar and float4) as gather kernels: the least shared carveout that keeps
  // their occupancy, so L1 keeps more of B's rows (DBSPARSE_L1_CARVEOUT=max-l1; l1_carveout.hpp).
  void prefer_l1(const DeviceInfo& d) {
    for (CUfunction fn : {rows1, rows4})
      if (fn) carveout = detail::prefer_l1(fn, csr_warps * 32, 0, d.reserved_shared_per_block, d.shared_per_sm);
  }

  // Builds the staged windows of A (f32, float4 calls) in the warps' order; grid_for sizes the CSR
  // launch over the rows left plain.
  template <class GridFor>
  void stage_windows(const CsrMatrix<float>& a, int n_cols, const GridFor& grid_for) {
    // Short rows only (at most 64 entries, and within max_run), as many distinct columns as a
    // block's shared memory holds rows of B.
    const int32_t max_cols = abi::kSpmmStageBytes / (4 * n_cols);
    if (max_cols < 2) return;
    const auto t0 = std::chrono::steady_clock::now();
    const SpmmStageWindows sw = spmm_stage_windows(a, row_order, typed.csr_stage_reuse, 32,
                                                   std::min<int32_t>(64, max_run), std::min(max_cols, 65535));
    st_build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (sw.windows() == 0) return;
    st_windows = sw.windows();
    int32_t widest = 0;
    for (int32_t w = 0; w < st_windows; ++w)
      widest = std::max(widest, sw.win_col[static_cast<size_t>(w) + 1] - sw.win_col[static_cast<size_t>(w)]);
    st_smem = static_cast<unsigned>(widest) * 4u * static_cast<unsigned>(n_cols);
    st_win_row = spmm_detail::upload(sw.win_row);
    st_win_col = spmm_detail::upload(sw.win_col);
    st_cols = spmm_detail::upload(sw.cols);
    st_rows = spmm_detail::upload(sw.rows);
    st_ptr = spmm_detail::upload(sw.ptr);
    st_slot = spmm_detail::upload(sw.slot);
    st_vals = spmm_detail::upload(sw.vals);
    plain_count = static_cast<int32_t>(sw.plain.size());
    plain_rows = sw.plain.empty() ? DeviceBuffer<int32_t>(1) : spmm_detail::upload(sw.plain);
    plain_grid4 = grid_for((int64_t{plain_count} + csr_rows4 - 1) / csr_rows4 + n_parts);
  }
  int csr_warps = 8;  // the CSR path's launches (SpmmConfig::csr_blocks_per_sm)
  int tc_warps = 4;
  // f16 / bf16 with pieces: the cut rows' or windows' f32 sums (abi::SpmmAcc, spmm_pieces.hpp),
  // rounded into C by `finalize` after the pieces pass.
  DeviceBuffer<float> acc_w;
  DeviceBuffer<int32_t> acc_slot, acc_units;
  int32_t acc_n_units = 0, acc_unit_rows = 1;
  CUfunction finalize = nullptr;
  unsigned finalize_grid = 1;
  DeviceBuffer<int32_t> win_group;  // windows + 1: each window's group range
  unsigned tc_grid = 1, tc_pieces_grid = 1;
  bool vec4 = false;
  std::vector<KernelInfo> kernels;
  // A DeviceCsrView64's arrays (not owned): the plan runs csr_spmm_rows64 on them.
  uint64_t view_row_ptr64 = 0, view_col_idx = 0, view_vals = 0;
  // SpmmOptions::epilogue: fused (SpmmArgs::relu) where each entry of C has one final writer, the
  // CSR path's stores; else `relu`, a pass over C after the product.
  SpmmEpilogue epilogue = SpmmEpilogue::None;
  bool epilogue_fused = false;
  detail::ReluPass relu;

  // After the path's kernels are placed: fused on the CSR path unless f32 atomic pieces or staged
  // windows (a kernel of their own, which has no epilogue) also write C.
  void place_epilogue(SpmmEpilogue e, const Context& ctx) {
    epilogue = e;
    if (e == SpmmEpilogue::None) return;
    epilogue_fused = path == SpmmPath::CsrCudaCore && st_windows == 0 && (n_pieces == 0 || dtype != SpmmDtype::F32);
    if (epilogue_fused) return;
    relu = detail::relu_pass(ctx, dtype, int64_t{rows} * n);
    kernels.push_back(relu.kernel());
  }

  abi::SpmmAcc acc() const {
    abi::SpmmAcc w{};
    if (acc_n_units == 0) return w;
    w.w = reinterpret_cast<float*>(acc_w.ptr());
    w.slot = spmm_detail::dev(acc_slot);
    w.units = spmm_detail::dev(acc_units);
    w.n_units = acc_n_units;
    w.unit_rows = acc_unit_rows;
    return w;
  }
  // 16 bits: the units (rows or windows of unit_rows rows) that `ptr` and max_run cut get an f32
  // workspace; every part of such a unit is summed there and C rounded once (finalize).
  void cut_into_workspace(const std::vector<int32_t>& ptr, int unit_rows) {
    const SpmmCutUnits cut = spmm_cut_units(ptr, max_run);
    if (cut.units.empty()) return;
    acc_slot = spmm_detail::upload(cut.slot);
    acc_units = spmm_detail::upload(cut.units);
    acc_n_units = static_cast<int32_t>(cut.units.size());
    acc_unit_rows = unit_rows;
    const int64_t floats = spmm_workspace_floats(cut, unit_rows, n);
    acc_w = DeviceBuffer<float>(static_cast<size_t>(floats));
    // A grid-stride loop: a few blocks a SM cover any size.
    finalize_grid = static_cast<unsigned>(
        std::clamp<int64_t>((floats + abi::kSpmmFinalizeThreads - 1) / abi::kSpmmFinalizeThreads, 1, 4096));
  }

  // The TC kernels' launch shape from each window's group range wg (windows + 1): windows past
  // tc_max_run groups are cut into pieces for the atomic pass, and a block takes a (window or
  // piece, 64 columns of C), every window, so that C is written once.
  void place_windows(const std::vector<int32_t>& wg, int n_cols, bool f32) {
    max_run = typed.tc_max_run;
    const auto pc = spmm_cut_pieces(wg, max_run);
    n_pieces = static_cast<int32_t>(pc.size() / 3);
    if (!pc.empty()) pieces = spmm_detail::upload(pc);
    if (!f32 && !pc.empty()) cut_into_workspace(wg, abi::kSpmmWindowRows);
    const int64_t windows = static_cast<int64_t>(wg.size()) - 1;
    const int64_t chunks = ((n_cols + abi::kSpmmTileCols - 1) / abi::kSpmmTileCols + 7) / 8;
    tc_grid = static_cast<unsigned>(windows * chunks);
    tc_pieces_grid = static_cast<unsigned>(n_pieces * chunks);
  }

  uint64_t vals_ptr() const { return dtype == SpmmDtype::F32 ? vals.ptr() : vals16.ptr(); }
  uint64_t group_vals_ptr() const { return dtype == SpmmDtype::F32 ? group_vals.ptr() : group_vals16.ptr(); }
};

}  // namespace dbsparse

// SpmmPlan::explain: the spec's decisions, a section per path, then what materialize added (the
// device bytes, BRP's conversion, the L1 carveout, the kernels).
#include <algorithm>

#include <fmt/format.h>

#include "dbsparse/abi/csr_view.h"
#include "dbsparse/abi/spmm.h"
#include "runtime/spmm/spmm_plan_impl.hpp"

namespace dbsparse {

using namespace spmm_detail;

namespace {

// The first line: the shape, the path and why.
std::string explain_path(const SpmmSpec& p) {
  const double th = p.typed.min_tc_share;
  const double th_fill = p.typed.min_condensed_fill;
  std::string why = "asked for";
  if (p.asked == SpmmPath::Auto) {
    why = fmt::format("auto: condensed fill at g = {} (from up to {} windows) is {:.3f} {} min_condensed_fill {}", p.g,
                      kAutoFillWindows, p.auto_fill, p.auto_fill >= th_fill ? ">=" : "<", th_fill);
    if (p.auto_share >= 0)
      why += fmt::format("; TC share at f = {}, g = {} is {:.3f} {} min_tc_share {}", p.f, p.g, p.auto_share,
                         p.auto_share >= th ? ">=" : "<", th);
    if (!p.trial.empty()) why += "; " + p.trial;
  }
  std::string out = fmt::format("spmm {}x{}, {} nonzeros, n = {}, {}: path {} ({})\n", p.rows, p.cols, p.nnz, p.n,
                                to_string(p.dtype), to_string(p.path), why);
  out += fmt::format("  config ({}): {}{}; used: {}\n", to_string(p.config.source), p.config.params.dump(),
                     p.config.note.empty() ? "" : " — " + p.config.note, config_to_json(p.typed).dump());
  return out;
}

std::string explain_brp(const SpmmSpec& p, const BrpStats& s, int64_t device_bytes) {
  const bool f32 = p.dtype == SpmmDtype::F32;
  std::string out = fmt::format(
      "  BRP f = {}, g = {}: {} TC groups ({:.1f}% of the nonzeros, {} tensor cores, a block of {} warps per "
      "16-row window and 64 columns, at most {} groups a window, {} more runs added atomically, A operands {}), {} "
      "residual rows ({} nonzeros, CUDA cores, f32 sums)\n",
      p.f, p.g, s.groups, 100.0 * s.tc_share,
      f32 ? "TF32 m16n8k8" : fmt::format("{} m16n8k16 (two blocks a mma)", to_string(p.dtype)), p.tc_warps, p.max_run,
      p.n_pieces, p.frags ? "expanded once per plan" : "built per group in shared memory", s.residual_rows,
      s.residual_nnz);
  const double ratio = s.bytes_csr ? double(s.bytes) / double(s.bytes_csr) : 0.0;
  if (s.on_device)
    out += fmt::format(
        "  converted on the GPU by csr_to_brp_device in {:.2f} ms, peak extra device memory {} bytes (bound "
        "4 * nnz * 8 = {}); device {} bytes, {:.3f}x CSR\n",
        s.convert_ms, s.peak_extra_bytes, s.peak_bound_bytes(), device_bytes, ratio);
  else
    out += fmt::format(
        "  converted on the host by csr_to_brp in {:.1f} ms and uploaded (SpmmOptions::convert_on_host); "
        "device {} bytes, {:.3f}x CSR\n",
        s.convert_ms, device_bytes, ratio);
  if (!f32)
    out += fmt::format(
        "  converted in f32, then A's values rounded to {} on the host: the device bytes are the "
        "plan's, the x CSR ratio and the peak the f32 conversion's\n",
        to_string(p.dtype));
  return out;
}

std::string explain_condensed(const SpmmSpec& p, int64_t device_bytes) {
  return fmt::format(
      "  condensed TC windows, g = {}: {} groups of {} zero-padded 16 x 8 tiles ({} tensor cores, fill {:.3f}: "
      "stored entries over tile capacity), A operands in fragment order, built on the host in {:.1f} ms; a block "
      "of {} warps per 16-row window and 64 columns, at most {} groups a window, {} more runs added atomically; "
      "no residual; device {} bytes ({:.3f}x CSR's {})\n",
      p.g, p.groups, p.g,
      p.dtype == SpmmDtype::F32 ? "TF32 m16n8k8" : fmt::format("{} m16n8k16 (two tiles a mma)", to_string(p.dtype)),
      p.fill, p.convert_ms, p.tc_warps, p.max_run, p.n_pieces, device_bytes,
      double(device_bytes) / double(std::max<int64_t>(1, p.csr_bytes)), p.csr_bytes);
}

std::string explain_view64(const SpmmSpec& p) {
  std::string out = fmt::format(
      "  CSR on CUDA cores (f32 sums) with 64-bit row offsets over the caller's device arrays (a DeviceCsrView64): "
      "{} rows a warp (float4 kernel; {} with scalars), none cut; {} lanes across N (4 values a load) or {} "
      "(scalars); {} blocks of {} warps\n",
      p.csr_rows4, p.csr_rows1, csr_lanes(p.n, 4), csr_lanes(p.n, 1), p.vec4 ? p.csr_grid4 : p.csr_grid1, p.csr_warps);
  if (p.auto_cv >= 0)
    out += fmt::format("  reorder auto: the rows' length CV is {:.2f} (counted on the device), {} {}\n", p.auto_cv,
                       p.auto_cv >= kAutoDegreeCv ? ">=" : "<", kAutoDegreeCv);
  out += p.order == Reorder::Degree
             ? fmt::format(
                   "  rows taken in degree order, made on the device in {:.1f} ms at plan time "
                   "(rows by decreasing length, past {} together): warp k takes A's row order[k]\n",
                   p.reorder_ms, abi::kDegreeCap)
             : std::string("  rows taken in A's order\n");
  return out;
}

// The CSR path's staged windows and rows' order.
std::string explain_csr_extras(const SpmmSpec& p) {
  std::string out;
  if (p.st_windows > 0)
    out += fmt::format(
        "  staged windows (csr_stage_reuse {}): {} windows of up to 32 rows ({} rows, {:.1f}% of the entries), "
        "their entries over their distinct columns {:.2f}; a block each copies the window's rows of B into up "
        "to {} bytes of shared memory by cp.async and its rows read them there (float4 calls; the other {} rows "
        "by the CSR kernel, a second launch); built on the host in {:.1f} ms\n",
        p.typed.csr_stage_reuse, p.st_windows, p.st_rows,
        100.0 * double(p.st_entries) / double(std::max<int64_t>(1, p.nnz)),
        double(p.st_entries) / double(std::max<int32_t>(1, p.st_cols)), p.st_smem, p.plain_count, p.st_build_ms);
  else if (p.typed.csr_stage_reuse > 0)
    out += fmt::format("  staged windows (csr_stage_reuse {}): none qualified{} ({:.1f} ms)\n", p.typed.csr_stage_reuse,
                       p.dtype != SpmmDtype::F32 || !p.vec4 ? " (f32 and N a multiple of 4 only)" : "", p.st_build_ms);
  if (p.auto_cv >= 0)
    out += fmt::format("  reorder auto: the rows' length CV is {:.2f}, {} {} ({})\n", p.auto_cv,
                       p.auto_cv >= kAutoDegreeCv ? ">=" : "<", kAutoDegreeCv,
                       p.order == Reorder::Degree ? "degree order" : "A's own order");
  if (p.order != Reorder::None)
    out += fmt::format(
        "  rows taken in {} order ({}computed on the host in {:.1f} ms at plan time): warp k takes A's row "
        "order[k]; A, B and C as given, no extra pass\n",
        to_string(p.order), p.order == Reorder::Degree ? "A's rows by decreasing length, " : "", p.reorder_ms);
  return out;
}

// How the CSR path treats long rows: the f32 split's parts, the pieces pass, or (max and min) parts
// merging their extremes, or none cut.
std::string long_rows_text(const SpmmSpec& p) {
  if (extreme_kernel(p.reduce) && p.n_parts == 0)
    return fmt::format("reduce {}: no row cut, the longest ({} entries) with one warp's group", to_string(p.reduce),
                       p.max_run);
  if (p.n_parts)
    return fmt::format(
        "rows longer than {} entries ({}) cut into {} parts of a warp each in the same launch, the last "
        "part of a row to finish {}",
        p.max_run, p.cut_rows, p.n_parts, extreme_kernel(p.reduce) ? "merging their extremes" : "adding them in order");
  return fmt::format("its first {} entries; {} more runs added atomically in a second launch", p.max_run, p.n_pieces);
}

std::string explain_csr(const SpmmSpec& p, int64_t device_bytes) {
  const std::string long_rows = long_rows_text(p);
  const std::string per_warp =
      p.csr_rows4 == 1 && p.csr_rows1 == 1
          ? std::string("a warp per row")
          : fmt::format("{} rows a warp (float4 kernel; {} with scalars), each on 32 / rows lanes", p.csr_rows4,
                        p.csr_rows1);
  // The float4 launch's blocks (over the plain rows when windows are staged).
  const unsigned rows_grid = !p.vec4 ? p.csr_grid1 : p.st_windows > 0 ? p.plain_grid4 : p.csr_grid4;
  std::string out = fmt::format(
      "  CSR on CUDA cores (f32 sums), {} ({}), "
      "{} lanes across N (4 values a load) or {} (scalars), the rest of the row's lanes over the entries; "
      "{} blocks of {} warps{}; device {} bytes\n",
      per_warp, long_rows, csr_lanes(p.n, 4), csr_lanes(p.n, 1), rows_grid, p.csr_warps,
      p.typed.csr_blocks_per_sm > 0 ? " striding over the rows" : "", device_bytes);
  return out + explain_csr_extras(p);
}

// 16 bits: how C is rounded, the f32 workspace of the units cut into pieces.
std::string explain_16bit(const SpmmSpec& p) {
  std::string out;
  if (p.acc.n_units)
    out += fmt::format(
        "  {}: the {} {} cut into pieces are summed in f32 (first pass and pieces, f32 atomics, in a "
        "workspace of their {} rows x n = {} floats) and rounded to {} once by a finalize pass; ",
        to_string(p.dtype), p.acc.n_units, p.path != SpmmPath::CsrCudaCore ? "windows" : "rows",
        int64_t{p.acc.n_units} * p.acc.unit_rows, p.acc.floats, to_string(p.dtype));
  else
    out += fmt::format("  {}: nothing cut into pieces; ", to_string(p.dtype));
  out += p.path == SpmmPath::Brp
             ? "C is rounded once per entry, a residual row's entries twice (brp_residual adds after)\n"
             : "C is rounded once per entry\n";
  return out;
}

// The lines every path ends with: loads, the epilogue, the L1 carveout, the kernels.
std::string explain_tail(const SpmmPlan::Impl& i) {
  const SpmmSpec& p = i.spec;
  std::string out = fmt::format("  columns per lane: {} (4 a load needs n % 4 == 0 and B and C aligned to {} bytes)\n",
                                p.vec4 ? "4 where B and C are aligned, else 1" : "1", 4 * spmm_value_bytes(p.dtype));
  if (p.reduce == SpmmReduce::Mean)
    out += "  reduce mean: the sum's kernels over A's values divided by their row's length at plan time\n";
  if (p.epilogue != SpmmEpilogue::None)
    out += fmt::format("  epilogue {}: {}\n", to_string(p.epilogue),
                       p.epilogue_fused ? "fused into the final stores of C (no pass of its own)"
                                        : "a pass over C after the product (several kernels add into C on this path)");
  if (i.carveout >= 0)
    out += fmt::format(
        "  L1: the rows kernels prefer a {}% shared carveout, the least that keeps their occupancy "
        "(DBSPARSE_L1_CARVEOUT=max-l1); L1 takes the rest\n",
        i.carveout);
  for (const KernelInfo& k : i.kernels) out += fmt::format("  kernel {} ({})\n", k.key, k.origin);
  return out;
}

}  // namespace

std::string SpmmPlan::explain() const {
  const Impl& i = *impl_;
  const SpmmSpec& p = i.spec;
  std::string out = explain_path(p);
  if (p.path == SpmmPath::Brp)
    out += explain_brp(p, i.stats, device_bytes());
  else if (p.path == SpmmPath::Condensed)
    out += explain_condensed(p, device_bytes());
  else if (i.view_row_ptr64)
    out += explain_view64(p);
  else
    out += explain_csr(p, device_bytes());
  if (p.dtype != SpmmDtype::F32) out += explain_16bit(p);
  return out + explain_tail(i);
}

}  // namespace dbsparse

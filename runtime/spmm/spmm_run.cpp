// SpmmPlan's calls (the launches of each path, the epilogue's pass), accessors and explain.
#include <algorithm>

#include <fmt/format.h>

#include "dbsparse/abi/csr_view.h"
#include "dbsparse/abi/spmm.h"
#include "runtime/spmm/spmm_plan_impl.hpp"

namespace dbsparse {

using namespace spmm_detail;

SpmmPlan::SpmmPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SpmmPlan::SpmmPlan(SpmmPlan&&) noexcept = default;
SpmmPlan& SpmmPlan::operator=(SpmmPlan&&) noexcept = default;
SpmmPlan::~SpmmPlan() = default;

namespace {
void check_sizes(const SpmmPlan::Impl& p, size_t b, size_t c, const char* what) {
  const size_t want_b = static_cast<size_t>(p.cols) * static_cast<size_t>(p.n);
  const size_t want_c = static_cast<size_t>(p.rows) * static_cast<size_t>(p.n);
  if (b != want_b || c != want_c)
    throw UsageError(fmt::format("SpmmPlan::run: B has {} {} (need {} x {} = {}), C has {} (need {} x {} = {})", b,
                                 what, p.cols, p.n, want_b, c, p.rows, p.n, want_c));
}
}  // namespace

void SpmmPlan::run(const DeviceBuffer<float>& b, DeviceBuffer<float>& c, const Stream& stream, float alpha,
                   float beta) const {
  if (impl_->dtype != SpmmDtype::F32)
    throw UsageError(fmt::format("SpmmPlan::run: the plan is {}, so B and C are uint16_t buffers, not float",
                                 to_string(impl_->dtype)));
  check_sizes(*impl_, b.size(), c.size(), "floats");
  run(b.ptr(), c.ptr(), stream.handle(), alpha, beta);
}

void SpmmPlan::run(const DeviceBuffer<uint16_t>& b, DeviceBuffer<uint16_t>& c, const Stream& stream, float alpha,
                   float beta) const {
  if (impl_->dtype == SpmmDtype::F32)
    throw UsageError("SpmmPlan::run: the plan is f32, so B and C are float buffers, not uint16_t");
  check_sizes(*impl_, b.size(), c.size(), to_string(impl_->dtype));
  run(b.ptr(), c.ptr(), stream.handle(), alpha, beta);
}

void SpmmPlan::run(uint64_t b, uint64_t c, void* stream, float alpha, float beta) const {
  const Impl& p = *impl_;
  if (p.rows == 0) return;
  if (!c || (!b && p.cols > 0)) throw UsageError("SpmmPlan::run: B and C must be device pointers");
  const auto h = static_cast<CUstream>(stream);
  abi::SpmmArgs args{};
  args.row_ptr = dev(p.row_ptr);
  args.col_idx = dev(p.col_idx);
  args.vals = reinterpret_cast<const float*>(p.vals_ptr());
  args.row_id = p.row_id.size() ? dev(p.row_id) : nullptr;  // BRP's residual rows, or CSR's order
  args.group_window = dev(p.window);
  args.old_col = dev(p.old_col);
  args.local_id = dev(p.local_id);
  args.group_vals = reinterpret_cast<const float*>(p.group_vals_ptr());
  args.b = reinterpret_cast<const float*>(b);
  args.c = reinterpret_cast<float*>(c);
  args.rows = p.csr_rows;
  args.m = p.rows;
  args.n = p.n;
  args.local_stride = p.local_stride;
  args.value_stride = p.value_stride;
  args.alpha = alpha;
  args.beta = beta;
  args.win_group = p.path != SpmmPath::CsrCudaCore ? dev(p.win_group) : nullptr;
  args.pieces = p.n_pieces ? dev(p.pieces) : nullptr;
  args.n_pieces = p.n_pieces;
  args.piece_reduce = p.path == SpmmPath::CsrCudaCore && p.typed.csr_piece_reduce ? 1 : 0;
  args.max_run = p.max_run;
  args.afrag = p.afrag.size() ? dev(p.afrag) : nullptr;
  if (p.n_parts) {
    args.parts = dev(p.parts);
    args.part_first = dev(p.part_first);
    args.part_sum = reinterpret_cast<float*>(p.part_sum.ptr());
    args.part_count = reinterpret_cast<uint32_t*>(p.part_count.ptr());
    args.n_parts = p.n_parts;
  }
  args.relu = p.epilogue_fused ? 1 : 0;
  // The epilogue's own pass over C, last, where the plan could not fuse it.
  auto epilogue_pass = [&] {
    if (p.epilogue != SpmmEpilogue::None && !p.epilogue_fused) p.relu.run(c, h);
  };
  void* params[] = {&args};
  // The 16-bit row and TC kernels also take the workspace (all null when nothing is cut).
  abi::SpmmAcc acc = p.acc();
  void* params16[] = {&args, &acc};
  const bool f32 = p.dtype == SpmmDtype::F32;
  void** tc_params = f32 ? params : params16;
  // 16 bits with pieces: the cut units' C, from their f32 sums, once the pieces are in.
  auto finalize = [&] {
    if (!f32 && p.acc_n_units)
      DBS_CU(
          cuLaunchKernel(p.finalize, p.finalize_grid, 1, 1, abi::kSpmmFinalizeThreads, 1, 1, 0, h, params16, nullptr));
  };
  const uint64_t vec_bytes = 4 * static_cast<uint64_t>(spmm_value_bytes(p.dtype));
  const bool v4 = p.vec4 && b % vec_bytes == 0 && c % vec_bytes == 0;
  const CUfunction rows_fn = v4 ? p.rows4 : p.rows1;
  if (p.view_row_ptr64) {  // 64-bit offsets: one launch over the caller's arrays
    args.col_idx = reinterpret_cast<const int32_t*>(p.view_col_idx);
    args.vals = reinterpret_cast<const float*>(p.view_vals);
    CUdeviceptr rp64 = p.view_row_ptr64;
    void* params64[] = {&args, &rp64};
    DBS_CU(
        cuLaunchKernel(rows_fn, v4 ? p.csr_grid4 : p.csr_grid1, 1, 1, p.csr_warps * 32, 1, 1, 0, h, params64, nullptr));
    epilogue_pass();  // fused today (one kernel writes every row); here so that a later change cannot drop it
    return;
  }
  if (p.path == SpmmPath::CsrCudaCore) {
    unsigned grid = v4 ? p.csr_grid4 : p.csr_grid1;
    if (p.st_windows > 0 && v4) {  // the staged windows, then the CSR kernel on the other rows
      abi::SpmmStageArgs sa{dev(p.st_win_row),
                            dev(p.st_win_col),
                            dev(p.st_cols),
                            dev(p.st_rows),
                            dev(p.st_ptr),
                            dev(p.st_slot),
                            dev(p.st_vals),
                            args.b,
                            args.c,
                            p.n,
                            p.st_windows,
                            alpha,
                            beta};
      void* stage_params[] = {&sa};
      DBS_CU(cuLaunchKernel(p.staged, static_cast<unsigned>(p.st_windows), 1, 1, abi::kSpmmStageWarps * 32, 1, 1,
                            p.st_smem, h, stage_params, nullptr));
      args.row_id = dev(p.plain_rows);
      args.rows = p.plain_count;
      grid = p.plain_grid4;
    }
    if (args.rows > 0 || p.n_parts > 0)
      DBS_CU(cuLaunchKernel(rows_fn, grid, 1, 1, p.csr_warps * 32, 1, 1, 0, h, tc_params, nullptr));
    if (p.n_pieces)
      DBS_CU(cuLaunchKernel(v4 ? p.rows4_pieces : p.rows1_pieces, p.csr_pieces_grid, 1, 1, p.csr_warps * 32, 1, 1, 0, h,
                            tc_params, nullptr));
    finalize();
    epilogue_pass();
    return;
  }
  // The TC kernel writes every entry of C (alpha * groups + beta * C; in 16 bits a cut window's
  // after finalize); the residual rows add after it.
  DBS_CU(cuLaunchKernel(p.tc, p.tc_grid, 1, 1, p.tc_warps * 32, 1, 1, 0, h, tc_params, nullptr));
  if (p.n_pieces)
    DBS_CU(cuLaunchKernel(p.tc_pieces, p.tc_pieces_grid, 1, 1, p.tc_warps * 32, 1, 1, 0, h, tc_params, nullptr));
  finalize();
  if (p.csr_rows > 0)
    DBS_CU(cuLaunchKernel(rows_fn,
                          static_cast<unsigned>((int64_t{p.csr_rows} + abi::kSpmmRowWarps - 1) / abi::kSpmmRowWarps), 1,
                          1, abi::kSpmmRowWarps * 32, 1, 1, 0, h, params, nullptr));
  epilogue_pass();
}

int32_t SpmmPlan::rows() const { return impl_->rows; }
int32_t SpmmPlan::cols() const { return impl_->cols; }
int SpmmPlan::n_cols() const { return impl_->n; }
SpmmPath SpmmPlan::path() const { return impl_->path; }
SpmmDtype SpmmPlan::dtype() const { return impl_->dtype; }
int SpmmPlan::f() const { return impl_->f; }
int SpmmPlan::g() const { return impl_->g; }
double SpmmPlan::tc_share() const {
  if (impl_->path == SpmmPath::Condensed) return impl_->nnz > 0 ? 1.0 : 0.0;
  return impl_->path == SpmmPath::Brp ? impl_->stats.tc_share : 0.0;
}
Reorder SpmmPlan::reorder() const { return impl_->order; }
double SpmmPlan::reorder_ms() const { return impl_->reorder_ms; }
const std::vector<int32_t>& SpmmPlan::row_order() const { return impl_->row_order; }
double SpmmPlan::condensed_fill() const { return impl_->path == SpmmPath::Condensed ? impl_->fill : 0.0; }
SpmmEpilogue SpmmPlan::epilogue() const { return impl_->epilogue; }
bool SpmmPlan::epilogue_fused() const { return impl_->epilogue_fused; }
std::optional<BrpStats> SpmmPlan::brp_stats() const {
  if (impl_->path != SpmmPath::Brp) return std::nullopt;
  return impl_->stats;
}
const std::vector<KernelInfo>& SpmmPlan::kernels() const { return impl_->kernels; }
const Config& SpmmPlan::config() const { return impl_->config; }
const SpmmConfig& SpmmPlan::typed_config() const { return impl_->typed; }

int64_t SpmmPlan::device_bytes() const {
  const Impl& p = *impl_;
  return static_cast<int64_t>(
      (p.row_ptr.size() + p.col_idx.size() + p.row_id.size() + p.window.size() + p.old_col.size() + p.win_group.size() +
       p.pieces.size() + p.afrag.size() + p.acc_w.size() + p.acc_slot.size() + p.acc_units.size() + p.parts.size() +
       p.part_first.size() + p.part_sum.size() + p.part_count.size() + p.st_win_row.size() + p.st_win_col.size() +
       p.st_cols.size() + p.st_rows.size() + p.st_ptr.size() + p.plain_rows.size() + p.st_vals.size()) *
          4 +
      p.st_slot.size() * 2 + (p.vals.size() + p.group_vals.size()) * 4 + (p.vals16.size() + p.group_vals16.size()) * 2 +
      p.local_id.size());
}

std::string SpmmPlan::explain() const {
  const Impl& p = *impl_;
  const double th = p.typed.min_tc_share;
  const double th_fill = p.typed.min_condensed_fill;
  std::string why = "asked for";
  if (p.asked == SpmmPath::Auto) {
    why = fmt::format("auto: condensed fill at g = {} (from up to {} windows) is {:.3f} {} min_condensed_fill {}", p.g,
                      kAutoFillWindows, p.auto_fill, p.auto_fill >= th_fill ? ">=" : "<", th_fill);
    if (p.auto_share >= 0)
      why += fmt::format("; TC share at f = {}, g = {} is {:.3f} {} min_tc_share {}", p.f, p.g, p.auto_share,
                         p.auto_share >= th ? ">=" : "<", th);
  }
  std::string out = fmt::format("spmm {}x{}, {} nonzeros, n = {}, {}: path {} ({})\n", p.rows, p.cols, p.nnz, p.n,
                                to_string(p.dtype), to_string(p.path), why);
  const bool f32 = p.dtype == SpmmDtype::F32;
  out += fmt::format("  config ({}): {}{}; used: {}\n", to_string(p.config.source), p.config.params.dump(),
                     p.config.note.empty() ? "" : " — " + p.config.note, config_to_json(p.typed).dump());
  if (p.path == SpmmPath::Brp) {
    const BrpStats& s = p.stats;
    out += fmt::format(
        "  BRP f = {}, g = {}: {} TC groups ({:.1f}% of the nonzeros, {} tensor cores, a block of {} warps per "
        "16-row window and 64 columns, at most {} groups a window, {} more runs added atomically, A operands {}), {} residual rows "
        "({} nonzeros, CUDA cores, f32 sums)\n",
        p.f, p.g, s.groups, 100.0 * s.tc_share,
        f32 ? "TF32 m16n8k8" : fmt::format("{} m16n8k16 (two blocks a mma)", to_string(p.dtype)), p.tc_warps, p.max_run,
        p.n_pieces, p.afrag.size() ? "expanded once per plan" : "built per group in shared memory", s.residual_rows,
        s.residual_nnz);
    if (s.on_device)
      out += fmt::format(
          "  converted on the GPU by csr_to_brp_device in {:.2f} ms, peak extra device memory {} bytes (bound "
          "4 * nnz * 8 = {}); device {} bytes, {:.3f}x CSR\n",
          s.convert_ms, s.peak_extra_bytes, s.peak_bound_bytes(), device_bytes(),
          s.bytes_csr ? double(s.bytes) / double(s.bytes_csr) : 0.0);
    else
      out += fmt::format(
          "  converted on the host by csr_to_brp in {:.1f} ms and uploaded (SpmmOptions::convert_on_host); "
          "device {} bytes, {:.3f}x CSR\n",
          s.convert_ms, device_bytes(), s.bytes_csr ? double(s.bytes) / double(s.bytes_csr) : 0.0);
    if (!f32)
      out += fmt::format(
          "  converted in f32, then A's values rounded to {} on the host: the device bytes are the "
          "plan's, the x CSR ratio and the peak the f32 conversion's\n",
          to_string(p.dtype));
  } else if (p.path == SpmmPath::Condensed) {
    out += fmt::format(
        "  condensed TC windows, g = {}: {} groups of {} zero-padded 16 x 8 tiles ({} tensor cores, fill {:.3f}: "
        "stored entries over tile capacity), A operands in fragment order, built on the host in {:.1f} ms; a block "
        "of {} warps per 16-row window and 64 columns, at most {} groups a window, {} more runs added atomically; "
        "no residual; device {} bytes ({:.3f}x CSR's {})\n",
        p.g, p.groups, p.g, f32 ? "TF32 m16n8k8" : fmt::format("{} m16n8k16 (two tiles a mma)", to_string(p.dtype)),
        p.fill, p.convert_ms, p.tc_warps, p.max_run, p.n_pieces, device_bytes(),
        double(device_bytes()) / double(std::max<int64_t>(1, p.csr_bytes)), p.csr_bytes);
  } else if (p.view_row_ptr64) {
    out += fmt::format(
        "  CSR on CUDA cores (f32 sums) with 64-bit row offsets over the caller's device arrays (a DeviceCsrView64): "
        "{} rows a warp (float4 kernel; {} with scalars), none cut; {} lanes across N (4 values a load) or {} "
        "(scalars); {} blocks of {} warps\n",
        p.csr_rows4, p.csr_rows1, csr_lanes(p.n, 4), csr_lanes(p.n, 1), p.vec4 ? p.csr_grid4 : p.csr_grid1,
        p.csr_warps);
    if (p.auto_cv >= 0)
      out += fmt::format("  reorder auto: the rows' length CV is {:.2f} (counted on the device), {} {}\n", p.auto_cv,
                         p.auto_cv >= kAutoDegreeCv ? ">=" : "<", kAutoDegreeCv);
    out += p.order == Reorder::Degree
               ? fmt::format(
                     "  rows taken in degree order, made on the device in {:.1f} ms at plan time (rows by "
                     "decreasing length, past {} together): warp k takes A's row order[k]\n",
                     p.reorder_ms, abi::kDegreeCap)
               : std::string("  rows taken in A's order\n");
  } else {
    const std::string long_rows =
        p.n_parts ? fmt::format(
                        "rows longer than {} entries ({}) cut into {} parts of a warp each in the same launch, "
                        "the last part of a row to finish adding them in order",
                        p.max_run, p.part_first.size() - 1, p.n_parts)
                  : fmt::format("its first {} entries; {} more runs added atomically in a second launch", p.max_run,
                                p.n_pieces);
    const std::string per_warp =
        p.csr_rows4 == 1 && p.csr_rows1 == 1
            ? std::string("a warp per row")
            : fmt::format("{} rows a warp (float4 kernel; {} with scalars), each on 32 / rows lanes", p.csr_rows4,
                          p.csr_rows1);
    // The float4 launch's blocks (over the plain rows when windows are staged).
    const unsigned rows_grid = !p.vec4 ? p.csr_grid1 : p.st_windows > 0 ? p.plain_grid4 : p.csr_grid4;
    out += fmt::format(
        "  CSR on CUDA cores (f32 sums), {} ({}), "
        "{} lanes across N (4 values a load) or {} (scalars), the rest of the row's lanes over the entries; "
        "{} blocks of {} warps{}; device {} bytes\n",
        per_warp, long_rows, csr_lanes(p.n, 4), csr_lanes(p.n, 1), rows_grid, p.csr_warps,
        p.typed.csr_blocks_per_sm > 0 ? " striding over the rows" : "", device_bytes());
    if (p.st_windows > 0)
      out += fmt::format(
          "  staged windows (csr_stage_reuse {}): {} windows of up to 32 rows ({} rows, {:.1f}% of the entries), "
          "their entries over their distinct columns {:.2f}; a block each copies the window's rows of B into up "
          "to {} bytes of shared memory by cp.async and its rows read them there (float4 calls; the other {} rows "
          "by the CSR kernel, a second launch); built on the host in {:.1f} ms\n",
          p.typed.csr_stage_reuse, p.st_windows, p.st_rows.size(),
          100.0 * double(p.st_slot.size()) / double(std::max<int64_t>(1, p.nnz)),
          double(p.st_slot.size()) / double(std::max<size_t>(1, p.st_cols.size())), p.st_smem, p.plain_count,
          p.st_build_ms);
    else if (p.typed.csr_stage_reuse > 0)
      out +=
          fmt::format("  staged windows (csr_stage_reuse {}): none qualified{} ({:.1f} ms)\n", p.typed.csr_stage_reuse,
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
  }
  if (!f32) {
    const bool brp = p.path == SpmmPath::Brp;
    if (p.acc_n_units)
      out += fmt::format(
          "  {}: the {} {} cut into pieces are summed in f32 (first pass and pieces, f32 atomics, in a "
          "workspace of their {} rows x n = {} floats) and rounded to {} once by a finalize pass; ",
          to_string(p.dtype), p.acc_n_units, p.path != SpmmPath::CsrCudaCore ? "windows" : "rows",
          int64_t{p.acc_n_units} * p.acc_unit_rows, p.acc_w.size(), to_string(p.dtype));
    else
      out += fmt::format("  {}: nothing cut into pieces; ", to_string(p.dtype));
    out += brp ? "C is rounded once per entry, a residual row's entries twice (brp_residual adds after)\n"
               : "C is rounded once per entry\n";
  }
  out += fmt::format("  columns per lane: {} (4 a load needs n % 4 == 0 and B and C aligned to {} bytes)\n",
                     p.vec4 ? "4 where B and C are aligned, else 1" : "1", 4 * spmm_value_bytes(p.dtype));
  if (p.epilogue != SpmmEpilogue::None)
    out += fmt::format("  epilogue {}: {}\n", to_string(p.epilogue),
                       p.epilogue_fused ? "fused into the final stores of C (no pass of its own)"
                                        : "a pass over C after the product (several kernels add into C on this path)");
  if (p.carveout >= 0)
    out += fmt::format(
        "  L1: the rows kernels prefer a {}% shared carveout, the least that keeps their occupancy "
        "(DBSPARSE_L1_CARVEOUT=max-l1); L1 takes the rest\n",
        p.carveout);
  for (const KernelInfo& k : p.kernels) out += fmt::format("  kernel {} ({})\n", k.key, k.origin);
  return out;
}

}  // namespace dbsparse

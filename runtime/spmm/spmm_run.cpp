// SpmmPlan's calls (the launches of each path, the epilogue's pass) and accessors.
#include <fmt/format.h>

#include "dbsparse/abi/spmm.h"
#include "runtime/spmm/spmm_plan_impl.hpp"

namespace dbsparse {

using namespace spmm_detail;

SpmmPlan::SpmmPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SpmmPlan::SpmmPlan(SpmmPlan&&) noexcept = default;
SpmmPlan& SpmmPlan::operator=(SpmmPlan&&) noexcept = default;
SpmmPlan::~SpmmPlan() = default;

namespace {
void check_sizes(const spmm_detail::SpmmSpec& p, size_t b, size_t c, const char* what) {
  const size_t want_b = static_cast<size_t>(p.cols) * static_cast<size_t>(p.n);
  const size_t want_c = static_cast<size_t>(p.rows) * static_cast<size_t>(p.n);
  if (b != want_b || c != want_c)
    throw UsageError(fmt::format("SpmmPlan::run: B has {} {} (need {} x {} = {}), C has {} (need {} x {} = {})", b,
                                 what, p.cols, p.n, want_b, c, p.rows, p.n, want_c));
}
}  // namespace

void SpmmPlan::run(const DeviceBuffer<float>& b, DeviceBuffer<float>& c, const Stream& stream, float alpha,
                   float beta) const {
  if (impl_->spec.dtype != SpmmDtype::F32)
    throw UsageError(fmt::format("SpmmPlan::run: the plan is {}, so B and C are uint16_t buffers, not float",
                                 to_string(impl_->spec.dtype)));
  check_sizes(impl_->spec, b.size(), c.size(), "floats");
  run(b.ptr(), c.ptr(), stream.handle(), alpha, beta);
}

void SpmmPlan::run(const DeviceBuffer<uint16_t>& b, DeviceBuffer<uint16_t>& c, const Stream& stream, float alpha,
                   float beta) const {
  if (impl_->spec.dtype == SpmmDtype::F32)
    throw UsageError("SpmmPlan::run: the plan is f32, so B and C are float buffers, not uint16_t");
  check_sizes(impl_->spec, b.size(), c.size(), to_string(impl_->spec.dtype));
  run(b.ptr(), c.ptr(), stream.handle(), alpha, beta);
}

namespace {

using Impl = SpmmPlan::Impl;

// One call's launches: the arguments every kernel of the plan reads, and the stream.
struct Call {
  const Impl& p;
  CUstream h;
  uint64_t c;
  abi::SpmmArgs args{};
  abi::SpmmAcc acc{};
  uint64_t arg = 0;  // a Max / Min plan's run_arg: where csr_spmm_reduce writes the winning entries
  bool v4 = false;   // the float4 kernels: n % 4 == 0 and B and C aligned to 4 values

  void launch(CUfunction fn, unsigned grid, int threads, void** params, unsigned smem = 0) const {
    DBS_CU(cuLaunchKernel(fn, grid, 1, 1, static_cast<unsigned>(threads), 1, 1, smem, h, params, nullptr));
  }
  // The 16-bit row and TC kernels also take the workspace (all null when nothing is cut).
  void launch_rows(CUfunction fn, unsigned grid, int threads) {
    void* params[] = {&args};
    void* params16[] = {&args, &acc};
    launch(fn, grid, threads, p.spec.dtype == SpmmDtype::F32 ? params : params16);
  }
  // 16 bits with pieces: the cut units' C, from their f32 sums, once the pieces are in.
  void finalize() {
    if (p.spec.dtype == SpmmDtype::F32 || p.spec.acc.n_units == 0) return;
    void* params16[] = {&args, &acc};
    launch(p.finalize, p.spec.acc.finalize_grid, abi::kSpmmFinalizeThreads, params16);
  }
  // The epilogue's own pass over C, last, where the plan could not fuse it.
  void epilogue() const {
    if (p.spec.epilogue != SpmmEpilogue::None && !p.spec.epilogue_fused) p.relu.run(c, h);
  }
};

abi::SpmmArgs args_of(const Impl& p, uint64_t b, uint64_t c, float alpha, float beta) {
  const spmm_detail::SpmmSpec& s = p.spec;
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
  args.rows = s.csr_rows;
  args.m = s.rows;
  args.n = s.n;
  args.local_stride = s.local_stride;
  args.value_stride = s.value_stride;
  args.alpha = alpha;
  args.beta = beta;
  args.win_group = s.path != SpmmPath::CsrCudaCore ? dev(p.win_group) : nullptr;
  args.pieces = s.n_pieces ? dev(p.pieces) : nullptr;
  args.n_pieces = s.n_pieces;
  args.piece_reduce = s.path == SpmmPath::CsrCudaCore && s.typed.csr_piece_reduce ? 1 : 0;
  args.max_run = s.max_run;
  args.afrag = p.afrag.size() ? dev(p.afrag) : nullptr;
  if (s.n_parts) {
    args.parts = dev(p.parts);
    args.part_first = dev(p.part_first);
    args.part_sum = reinterpret_cast<float*>(p.part_sum.ptr());
    args.part_count = reinterpret_cast<uint32_t*>(p.part_count.ptr());
    args.n_parts = s.n_parts;
  }
  args.relu = s.epilogue_fused ? 1 : 0;
  return args;
}

// 64-bit offsets: one launch over the caller's arrays.
void run_view64(Call& k) {
  const Impl& p = k.p;
  k.args.col_idx = reinterpret_cast<const int32_t*>(p.view_col_idx);
  k.args.vals = reinterpret_cast<const float*>(p.view_vals);
  CUdeviceptr rp64 = p.view_row_ptr64;
  void* params64[] = {&k.args, &rp64};
  k.launch(k.v4 ? p.rows4 : p.rows1, k.v4 ? p.spec.csr_grid4 : p.spec.csr_grid1, p.spec.csr_warps * 32, params64);
  k.epilogue();  // fused today (one kernel writes every row); here so that a later change cannot drop it
}

// Max and min: one launch, every row whole (csr_spmm_reduce takes arg too).
void run_reduce(Call& k) {
  const Impl& p = k.p;
  void* params[] = {&k.args, &k.arg};
  k.launch(k.v4 ? p.rows4 : p.rows1, k.v4 ? p.spec.csr_grid4 : p.spec.csr_grid1, p.spec.csr_warps * 32, params);
}

// The CSR path: the staged windows (float4 calls, when any), the rows, the pieces, finalize.
void run_csr(Call& k, float alpha, float beta) {
  const Impl& p = k.p;
  const spmm_detail::SpmmSpec& s = p.spec;
  if (extreme_kernel(s.reduce)) {
    run_reduce(k);
    return;
  }
  unsigned grid = k.v4 ? s.csr_grid4 : s.csr_grid1;
  if (s.st_windows > 0 && k.v4) {  // the staged windows, then the CSR kernel on the other rows
    abi::SpmmStageArgs sa{dev(p.st_win_row),
                          dev(p.st_win_col),
                          dev(p.st_cols),
                          dev(p.st_rows),
                          dev(p.st_ptr),
                          dev(p.st_slot),
                          dev(p.st_vals),
                          k.args.b,
                          k.args.c,
                          s.n,
                          s.st_windows,
                          alpha,
                          beta};
    void* stage_params[] = {&sa};
    k.launch(p.staged, static_cast<unsigned>(s.st_windows), abi::kSpmmStageWarps * 32, stage_params, s.st_smem);
    k.args.row_id = dev(p.plain_rows);
    k.args.rows = s.plain_count;
    grid = s.plain_grid4;
  }
  if (k.args.rows > 0 || s.n_parts > 0) k.launch_rows(k.v4 ? p.rows4 : p.rows1, grid, s.csr_warps * 32);
  if (s.n_pieces) k.launch_rows(k.v4 ? p.rows4_pieces : p.rows1_pieces, s.csr_pieces_grid, s.csr_warps * 32);
  k.finalize();
  k.epilogue();
}

// The TC paths: the TC kernel writes every entry of C (alpha * groups + beta * C; in 16 bits a cut
// window's after finalize); BRP's residual rows add after it.
void run_tc(Call& k) {
  const Impl& p = k.p;
  const spmm_detail::SpmmSpec& s = p.spec;
  k.launch_rows(p.tc, s.tc_grid, s.tc_warps * 32);
  if (s.n_pieces) k.launch_rows(p.tc_pieces, s.tc_pieces_grid, s.tc_warps * 32);
  k.finalize();
  if (s.csr_rows > 0) {
    void* params[] = {&k.args};  // brp_residual takes SpmmArgs alone in every value type
    k.launch(k.v4 ? p.rows4 : p.rows1,
             static_cast<unsigned>((int64_t{s.csr_rows} + abi::kSpmmRowWarps - 1) / abi::kSpmmRowWarps),
             abi::kSpmmRowWarps * 32, params);
  }
  k.epilogue();
}

}  // namespace

void SpmmPlan::run(uint64_t b, uint64_t c, void* stream, float alpha, float beta) const {
  run_arg(b, c, 0, stream, alpha, beta);
}

void SpmmPlan::run_arg(uint64_t b, uint64_t c, uint64_t arg, void* stream, float alpha, float beta) const {
  const Impl& p = *impl_;
  if (arg && p.spec.reduce != SpmmReduce::Max && p.spec.reduce != SpmmReduce::Min)
    throw UsageError(fmt::format("SpmmPlan::run_arg: the plan's reduce is {}; an arg array is for max and min",
                                 to_string(p.spec.reduce)));
  if (p.spec.rows == 0) return;
  if (!c || (!b && p.spec.cols > 0)) throw UsageError("SpmmPlan::run: B and C must be device pointers");
  Call k{p, static_cast<CUstream>(stream), c};
  k.arg = arg;
  k.args = args_of(p, b, c, alpha, beta);
  k.acc = p.acc();
  const uint64_t vec_bytes = 4 * static_cast<uint64_t>(spmm_value_bytes(p.spec.dtype));
  k.v4 = p.spec.vec4 && b % vec_bytes == 0 && c % vec_bytes == 0;
  if (p.view_row_ptr64)
    run_view64(k);
  else if (p.spec.path == SpmmPath::CsrCudaCore)
    run_csr(k, alpha, beta);
  else
    run_tc(k);
}

int32_t SpmmPlan::rows() const { return impl_->spec.rows; }
int32_t SpmmPlan::cols() const { return impl_->spec.cols; }
int SpmmPlan::n_cols() const { return impl_->spec.n; }
SpmmPath SpmmPlan::path() const { return impl_->spec.path; }
SpmmDtype SpmmPlan::dtype() const { return impl_->spec.dtype; }
int SpmmPlan::f() const { return impl_->spec.f; }
int SpmmPlan::g() const { return impl_->spec.g; }
double SpmmPlan::tc_share() const {
  if (impl_->spec.path == SpmmPath::Condensed) return impl_->spec.nnz > 0 ? 1.0 : 0.0;
  return impl_->spec.path == SpmmPath::Brp ? impl_->stats.tc_share : 0.0;
}
Reorder SpmmPlan::reorder() const { return impl_->spec.order; }
double SpmmPlan::reorder_ms() const { return impl_->spec.reorder_ms; }
const std::vector<int32_t>& SpmmPlan::row_order() const { return impl_->spec.row_order; }
double SpmmPlan::condensed_fill() const { return impl_->spec.path == SpmmPath::Condensed ? impl_->spec.fill : 0.0; }
SpmmEpilogue SpmmPlan::epilogue() const { return impl_->spec.epilogue; }
SpmmReduce SpmmPlan::reduce() const { return impl_->spec.reduce; }
bool SpmmPlan::epilogue_fused() const { return impl_->spec.epilogue_fused; }
std::optional<BrpStats> SpmmPlan::brp_stats() const {
  if (impl_->spec.path != SpmmPath::Brp) return std::nullopt;
  return impl_->stats;
}
const std::vector<KernelInfo>& SpmmPlan::kernels() const { return impl_->kernels; }
const Config& SpmmPlan::config() const { return impl_->spec.config; }
const SpmmConfig& SpmmPlan::typed_config() const { return impl_->spec.typed; }

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

}  // namespace dbsparse

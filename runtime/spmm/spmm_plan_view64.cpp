// SpMM plans of a DeviceCsrView64 (64-bit row offsets, f32, the CSR path): the caller's device
// arrays, checked on the GPU first, the degree order made there (include/dbsparse/spmm.hpp).
#include <chrono>

#include <fmt/format.h>

#include "dbsparse/device_csr.hpp"
#include "runtime/gpu/device_csr_view.hpp"
#include "runtime/spmm/spmm_plan_impl.hpp"

namespace dbsparse {

using namespace spmm_detail;

SpmmPlan SpmmPlan::build(Context& ctx, const DeviceCsrView64<float>& a, int n_cols) {
  return build(ctx, a, n_cols, SpmmOptions{});
}

SpmmPlan SpmmPlan::build(Context& ctx, const DeviceCsrView64<float>& a, int n_cols, const SpmmOptions& opt) {
  if (n_cols < 1 || n_cols > abi::kSpmmMaxCols)
    throw UsageError(fmt::format("plan_spmm: n_cols must be in 1 .. {}, got {}", abi::kSpmmMaxCols, n_cols));
  validate(a, "plan_spmm (64-bit offsets)");
  if (opt.dtype != SpmmDtype::F32)
    throw UsageError("plan_spmm (64-bit offsets): f32 only (a 16-bit A would be a copy of the caller's values)");
  if (opt.path == SpmmPath::Brp || opt.path == SpmmPath::Condensed)
    throw UsageError(fmt::format("plan_spmm (64-bit offsets): the CSR path only, not {}", to_string(opt.path)));
  if (opt.reduce != SpmmReduce::Sum)
    throw UsageError(
        fmt::format("plan_spmm (64-bit offsets): reduce {} is not available here (sum only); a "
                    "CsrMatrix's plan takes it",
                    to_string(opt.reduce)));
  ctx.make_current();
  Config config =
      opt.config ? *opt.config : Config{"spmm", config_to_json(SpmmConfig{}), ConfigSource::Default, "device view"};
  auto p = std::make_unique<SpmmPlan::Impl>();
  p->spec = spmm_view64_spec(a.rows, a.cols, a.nnz, n_cols, opt, std::move(config), ctx.device().sm_count);
  SpmmSpec& s = p->spec;
  // The kernel indexes B and C by the caller's arrays: checked first.
  const detail::DeviceCsrArrays arrays = detail::arrays_of(a);
  detail::check_device_csr(ctx, "plan_spmm (64-bit offsets)", "A", arrays, false);
  // The rows' order, made on the device where A is: degree, or auto's degree where the lengths vary.
  const std::string order = view64_order(opt, s.typed);
  if (order != "none" && a.rows > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const detail::DeviceRowLengths lengths = detail::device_row_lengths(ctx, arrays);
    if (order == "auto") s.auto_cv = lengths.cv;
    if (order == "degree" || lengths.cv >= kAutoDegreeCv) {
      s.order = Reorder::Degree;
      p->row_id = detail::device_degree_order(ctx, arrays, lengths);
    }
    s.reorder_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  load_csr_kernels(ctx, *p);
  p->view_row_ptr64 = reinterpret_cast<uintptr_t>(a.row_ptr);
  p->view_col_idx = reinterpret_cast<uintptr_t>(a.col_idx);
  p->view_vals = reinterpret_cast<uintptr_t>(a.values);
  load_epilogue(ctx, *p);  // fused: nothing to load
  return SpmmPlan(std::move(p));
}

}  // namespace dbsparse

// SpMM plans of a DeviceCsrView64 (64-bit row offsets, f32, the CSR path): the caller's device
// arrays, checked on the GPU first, the degree order made there (include/dbsparse/spmm.hpp).
#include <chrono>

#include <fmt/format.h>

#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/device_csr.hpp"
#include "runtime/gpu/device_csr_view.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/spmm/spmm_plan_impl.hpp"

namespace dbsparse {

using namespace spmm_detail;

SpmmPlan Context::plan_spmm(const DeviceCsrView64<float>& a, int n_cols) { return plan_spmm(a, n_cols, SpmmOptions{}); }

SpmmPlan Context::plan_spmm(const DeviceCsrView64<float>& a, int n_cols, const SpmmOptions& opt) {
  if (n_cols < 1 || n_cols > abi::kSpmmMaxCols)
    throw UsageError(fmt::format("plan_spmm: n_cols must be in 1 .. {}, got {}", abi::kSpmmMaxCols, n_cols));
  validate(a, "plan_spmm (64-bit offsets)");
  if (opt.dtype != SpmmDtype::F32)
    throw UsageError("plan_spmm (64-bit offsets): f32 only (a 16-bit A would be a copy of the caller's values)");
  if (opt.path == SpmmPath::Brp || opt.path == SpmmPath::Condensed)
    throw UsageError(fmt::format("plan_spmm (64-bit offsets): the CSR path only, not {}", to_string(opt.path)));
  make_current();
  auto p = std::make_unique<SpmmPlan::Impl>();
  p->config =
      opt.config ? *opt.config : Config{"spmm", config_to_json(SpmmConfig{}), ConfigSource::Default, "device view"};
  p->typed = config_from_json<SpmmConfig>(p->config.params);
  p->config.params = config_to_json(p->typed);
  // The rows' order: none, degree, or auto's degree where the lengths vary, all made on the
  // device where A is; rcm and community need A on the host.
  const std::string order = opt.reorder ? to_string(*opt.reorder) : p->typed.reorder;
  if (order != "auto" && order != "none" && order != "degree")
    throw UsageError("plan_spmm (64-bit offsets): reorder " + order +
                     " needs A on the host (a CsrMatrix); none, degree or auto are made on the device");
  if (p->typed.path == "brp" || p->typed.path == "condensed")
    throw UsageError("plan_spmm (64-bit offsets): the config asks for path " + p->typed.path + "; the CSR path only");
  // The kernel indexes B and C by the caller's arrays: checked first.
  const detail::DeviceCsrArrays arrays = detail::arrays_of(a);
  detail::check_device_csr(*this, "plan_spmm (64-bit offsets)", "A", arrays, false);
  if (order != "none" && a.rows > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const detail::DeviceRowLengths lengths = detail::device_row_lengths(*this, arrays);
    if (order == "auto") p->auto_cv = lengths.cv;
    if (order == "degree" || lengths.cv >= kAutoDegreeCv) {
      p->order = Reorder::Degree;
      p->row_id = detail::device_degree_order(*this, arrays, lengths);
    }
    p->reorder_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  p->rows = a.rows;
  p->cols = a.cols;
  p->nnz = a.nnz;
  p->n = n_cols;
  p->dtype = SpmmDtype::F32;
  p->asked = opt.path == SpmmPath::Auto && p->typed.path == "auto" ? SpmmPath::Auto : SpmmPath::CsrCudaCore;
  p->path = SpmmPath::CsrCudaCore;
  p->csr_rows = a.rows;
  p->csr_warps = p->typed.csr_warps;
  p->vec4 = n_cols % 4 == 0;
  auto load = [&](int vec, int rows) {
    codegen::SpmmKey k{codegen::SpmmKernelPath::Csr, 1, 4, p->csr_warps, vec, csr_lanes(n_cols, vec)};
    k.rows = rows;
    k.offsets64 = true;
    auto loaded = modules_->get(codegen::make_source(k), info_.arch());
    p->kernels.push_back(loaded.info);
    return loaded.fns.at(0);
  };
  p->csr_rows1 = csr_rows_a_warp(p->typed, n_cols, 1, a.nnz, a.rows, info_.sm_count);
  p->rows1 = load(1, p->csr_rows1);
  if (p->vec4) {
    p->csr_rows4 = csr_rows_a_warp(p->typed, n_cols, 4, a.nnz, a.rows, info_.sm_count);
    p->rows4 = load(4, p->csr_rows4);
  }
  p->prefer_l1(info_);
  auto grid_for = [&](int rows_a_warp) {
    const int64_t units = (int64_t{a.rows} + rows_a_warp - 1) / rows_a_warp;
    return static_cast<unsigned>(std::max<int64_t>(1, (units + p->csr_warps - 1) / p->csr_warps));
  };
  p->csr_grid1 = grid_for(p->csr_rows1);
  p->csr_grid4 = grid_for(p->csr_rows4);
  p->view_row_ptr64 = reinterpret_cast<uintptr_t>(a.row_ptr);
  p->view_col_idx = reinterpret_cast<uintptr_t>(a.col_idx);
  p->view_vals = reinterpret_cast<uintptr_t>(a.values);
  // One kernel writes each entry of C once: the epilogue is always fused.
  p->place_epilogue(opt.epilogue, *this);
  return SpmmPlan(std::move(p));
}

}  // namespace dbsparse

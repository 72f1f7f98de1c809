#include "dbsparse/spmv.hpp"

#include <fmt/format.h>

#include "codegen/spmv_key.hpp"
#include "dbsparse/features.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/module_registry.hpp"
#include "runtime/spmv_strategy.hpp"

namespace dbsparse {

template <class T>
SpmvPlan<T> Context::plan_spmv(const CsrMatrix<T>& a) {
  auto fp = structure_fingerprint(a);
  auto config = lookup_config(info_.record().fingerprint, fp, "spmv");
  return build_spmv(a, config, std::move(fp));
}

template <class T>
SpmvPlan<T> Context::plan_spmv(const CsrMatrix<T>& a, const Config& config) {
  return build_spmv(a, config, structure_fingerprint(a));
}

template <class T>
SpmvPlan<T> Context::build_spmv(const CsrMatrix<T>& a, const Config& config, std::string fingerprint) {
  make_current();
  SpmvPlan<T> plan;
  plan.rows_ = a.rows;
  plan.cols_ = a.cols;
  plan.nnz_ = a.nnz();
  plan.matrix_fp_ = std::move(fingerprint);
  plan.config_ = config;

  // Problem -> key: the config decides the variant; the key is all the JIT sees.
  const codegen::SpmvKey key =
      choose_spmv_key(plan.config_.params, a.rows, a.nnz(), codegen::value_type_of<T>());
  auto loaded = modules_->get(codegen::make_source(key), info_.arch());
  plan.fn_ = loaded.fn;
  plan.kernel_ = loaded.info;
  plan.block_ = static_cast<unsigned>(key.block_size);
  plan.grid_ = static_cast<unsigned>(spmv_grid(key, a.rows));

  plan.row_ptr_ = DeviceBuffer<int32_t>(std::span<const int32_t>(a.row_ptr));
  plan.col_idx_ = DeviceBuffer<int32_t>(std::span<const int32_t>(a.col_idx));
  plan.values_ = DeviceBuffer<T>(std::span<const T>(a.values));
  return plan;
}

template <class T>
void SpmvPlan<T>::run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream, T alpha,
                      T beta) const {
  if (x.size() != static_cast<size_t>(cols_) || y.size() != static_cast<size_t>(rows_))
    throw UsageError(fmt::format("SpmvPlan::run: x has {} elements (need {}), y has {} (need {})",
                                 x.size(), cols_, y.size(), rows_));
  run(x.ptr(), y.ptr(), stream.handle(), alpha, beta);
}

template <class T>
void SpmvPlan<T>::run(uint64_t x, uint64_t y, void* stream, T alpha, T beta) const {
  if (rows_ == 0) return;
  int rows = rows_;
  CUdeviceptr rp = row_ptr_.ptr(), ci = col_idx_.ptr(), va = values_.ptr();
  CUdeviceptr xp = x, yp = y;
  void* args[] = {&rows, &rp, &ci, &va, &xp, &yp, &alpha, &beta};
  DBS_CU(cuLaunchKernel(static_cast<CUfunction>(fn_), grid_, 1, 1, block_, 1, 1, 0,
                        static_cast<CUstream>(stream), args, nullptr));
}

template <class T>
std::string SpmvPlan<T>::explain() const {
  return fmt::format(
      "spmv plan: {} x {}, nnz {}\n  matrix fingerprint: {}\n  config ({}): {}{}\n"
      "  kernel: {} (binary from {}: {:.2f} ms; module load {:.2f} ms)\n",
      rows_, cols_, nnz_, matrix_fp_, to_string(config_.source), config_.params.dump(),
      config_.note.empty() ? "" : "  [" + config_.note + "]", kernel_.key, kernel_.origin,
      kernel_.acquire_ms, kernel_.load_ms);
}

template class SpmvPlan<float>;
template class SpmvPlan<double>;
template SpmvPlan<float> Context::plan_spmv(const CsrMatrix<float>&);
template SpmvPlan<double> Context::plan_spmv(const CsrMatrix<double>&);
template SpmvPlan<float> Context::plan_spmv(const CsrMatrix<float>&, const Config&);
template SpmvPlan<double> Context::plan_spmv(const CsrMatrix<double>&, const Config&);

}  // namespace dbsparse

// DB-Decoding plans (include/dbsparse/sparse_linear.hpp): the sparsifier launch, then SpMSpV.
#include "dbsparse/sparse_linear.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "codegen/sparse_linear_key.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/module_registry.hpp"

namespace dbsparse {

template <class T>
struct SparseLinearPlan<T>::Impl {
  SpmspvPlan<T> spmspv;
  DeviceBuffer<T> xs;  // the sparsified x
  CUfunction sparsify = nullptr;
  unsigned grid = 1;
  float tau = 0;
  KernelInfo kernel;
};

template <class T>
SparseLinearPlan<T> Context::plan_sparse_linear(const CsrMatrix<T>& w, const SparseLinearOptions& opt) {
  if (!(opt.tau >= 0)) throw UsageError(fmt::format("plan_sparse_linear: tau must be >= 0, got {}", opt.tau));
  SpmspvOptions so;
  so.direction = opt.direction;
  so.config = opt.config;
  auto impl = std::unique_ptr<typename SparseLinearPlan<T>::Impl>(
      new typename SparseLinearPlan<T>::Impl{plan_spmspv(w, so), DeviceBuffer<T>(static_cast<size_t>(std::max(w.cols, 1))),
                                             nullptr, 1, opt.tau, {}});
  codegen::SparseLinearKey key;
  key.value = codegen::value_type_of<T>();
  auto loaded = modules_->get(codegen::make_source(key), info_.arch());
  impl->sparsify = loaded.fns.at(0);
  impl->kernel = loaded.info;
  impl->grid = static_cast<unsigned>(std::clamp<int64_t>((int64_t{w.cols} + 255) / 256, 1, int64_t{info_.sm_count} * 4));
  return SparseLinearPlan<T>(std::move(impl));
}

template <class T>
SparseLinearPlan<T>::SparseLinearPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
template <class T>
SparseLinearPlan<T>::SparseLinearPlan(SparseLinearPlan&&) noexcept = default;
template <class T>
SparseLinearPlan<T>& SparseLinearPlan<T>::operator=(SparseLinearPlan&&) noexcept = default;
template <class T>
SparseLinearPlan<T>::~SparseLinearPlan() = default;

template <class T>
void SparseLinearPlan<T>::run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream) const {
  if (x.size() != static_cast<size_t>(cols()) || y.size() != static_cast<size_t>(rows()))
    throw UsageError(fmt::format("SparseLinearPlan::run: x needs {} elements and y {}, have {} and {}", cols(), rows(),
                                 x.size(), y.size()));
  run(x.ptr(), y.ptr(), stream.handle());
}

template <class T>
void SparseLinearPlan<T>::run(uint64_t x, uint64_t y, void* stream) const {
  const Impl& p = *impl_;
  uint64_t xs = p.xs.ptr();
  int n = cols();
  float tau = p.tau;
  void* params[] = {&x, &xs, &n, &tau};
  if (n > 0)
    DBS_CU(cuLaunchKernel(p.sparsify, p.grid, 1, 1, 256, 1, 1, 0, static_cast<CUstream>(stream), params, nullptr));
  p.spmspv.run(xs, y, stream);
}

template <class T>
void SparseLinearPlan<T>::set_tau(float tau) {
  if (!(tau >= 0)) throw UsageError(fmt::format("SparseLinearPlan::set_tau: tau must be >= 0, got {}", tau));
  impl_->tau = tau;
}
template <class T>
float SparseLinearPlan<T>::tau() const { return impl_->tau; }
template <class T>
int32_t SparseLinearPlan<T>::rows() const { return impl_->spmspv.rows(); }
template <class T>
int32_t SparseLinearPlan<T>::cols() const { return impl_->spmspv.cols(); }
template <class T>
const SpmspvPlan<T>& SparseLinearPlan<T>::spmspv() const { return impl_->spmspv; }
template <class T>
int64_t SparseLinearPlan<T>::device_bytes() const {
  return impl_->spmspv.stats().device_bytes + static_cast<int64_t>(impl_->xs.size() * sizeof(T));
}
template <class T>
std::string SparseLinearPlan<T>::explain() const {
  return fmt::format("sparse linear {}x{}: x kept where |x| >= {} ({}), then\n{}", rows(), cols(), impl_->tau,
                     impl_->kernel.key, impl_->spmspv.explain());
}

template SparseLinearPlan<float> Context::plan_sparse_linear(const CsrMatrix<float>&, const SparseLinearOptions&);
template SparseLinearPlan<double> Context::plan_sparse_linear(const CsrMatrix<double>&, const SparseLinearOptions&);
template class SparseLinearPlan<float>;
template class SparseLinearPlan<double>;

}  // namespace dbsparse

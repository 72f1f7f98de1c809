// DB-Decoding plans (include/dbsparse/sparse_linear.hpp): the sparsifier launch, then SpMSpV; or,
// for the column bitmap layout, the decoding plan (decode_linear.hpp) in f32.
#include "dbsparse/sparse_linear.hpp"

#include <algorithm>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

#include "codegen/keys/sparse_linear_key.hpp"
#include "dbsparse/decode_linear.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse {

template <class T>
struct SparseLinearPlan<T>::Impl {
  std::optional<SpmspvPlan<T>> spmspv;
  DeviceBuffer<T> xs;  // the sparsified x (DB layout)
  CUfunction sparsify = nullptr;
  unsigned grid = 1;
  float tau = 0;
  KernelInfo kernel;
  SparseLinearLayout layout = SparseLinearLayout::Spmspv;
  int32_t rows = 0, cols = 0;
  // The column bitmap layout: the decoding plan's f32 kernels (one copy of them, not two).
  std::optional<DecodeLinearPlan> bitmap;
};

template <class T>
SparseLinearPlan<T> SparseLinearPlan<T>::build(Context& ctx, const CsrMatrix<T>& w, const SparseLinearOptions& opt) {
  if (!(opt.tau >= 0)) throw UsageError(fmt::format("plan_sparse_linear: tau must be >= 0, got {}", opt.tau));
  if (opt.layout == SparseLinearLayout::Spmspv && opt.dtype != DecodeDtype::F32)
    throw UsageError(
        fmt::format("plan_sparse_linear: dtype {} takes the column bitmap layout (the SpMSpV layout "
                    "stores the matrix's own value type)",
                    to_string(opt.dtype)));
  auto impl = std::make_unique<typename SparseLinearPlan<T>::Impl>();
  impl->tau = opt.tau;
  impl->layout = opt.layout;
  impl->rows = w.rows;
  impl->cols = w.cols;
  const size_t n = static_cast<size_t>(std::max(w.cols, 1));
  if (opt.layout == SparseLinearLayout::Spmspv) {
    SpmspvOptions so;
    so.direction = opt.direction;
    so.config = opt.config;
    impl->spmspv.emplace(plan_spmspv(ctx, w, so));
    impl->xs = DeviceBuffer<T>(n);
  } else {
    if constexpr (!std::is_same_v<T, float>) {
      throw UsageError(
          "plan_sparse_linear: the column bitmap layout takes f32 weights (its dtype option stores "
          "them as fp16 or bf16)");
    } else {
      DecodeLinearOptions d;
      d.dtype = opt.dtype;
      d.tau = opt.tau;
      d.mapping = opt.mapping;
      d.row_block_words = opt.row_block_words;
      impl->bitmap.emplace(plan_decode_linear(ctx, w, d));
    }
  }
  codegen::SparseLinearKey key;
  key.value = codegen::value_type_of<T>();
  auto loaded = ctx.modules().get(codegen::make_source(key), ctx.device().arch());
  impl->sparsify = loaded.entry("sparsify");
  impl->kernel = loaded.info;
  impl->grid =
      static_cast<unsigned>(std::clamp<int64_t>((int64_t{w.cols} + 255) / 256, 1, int64_t{ctx.device().sm_count} * 4));
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
  if (impl_->bitmap && impl_->bitmap->dtype() != DecodeDtype::F32)
    throw UsageError(fmt::format("SparseLinearPlan::run: this plan stores {}; pass device pointers of that type",
                                 to_string(impl_->bitmap->dtype())));
  if (x.size() != static_cast<size_t>(cols()) || y.size() != static_cast<size_t>(rows()))
    throw UsageError(fmt::format("SparseLinearPlan::run: x needs {} elements and y {}, have {} and {}", cols(), rows(),
                                 x.size(), y.size()));
  run(x.ptr(), y.ptr(), stream.handle());
}

template <class T>
void SparseLinearPlan<T>::run(uint64_t x, uint64_t y, void* stream) const {
  const Impl& p = *impl_;
  const auto h = static_cast<CUstream>(stream);
  int n = cols();
  float tau = p.tau;
  if (p.layout == SparseLinearLayout::Spmspv) {
    uint64_t xs = p.xs.ptr();
    void* params[] = {&x, &xs, &n, &tau};
    if (n > 0) DBS_CU(cuLaunchKernel(p.sparsify, p.grid, 1, 1, 256, 1, 1, 0, h, params, nullptr));
    p.spmspv->run(xs, y, stream);
    return;
  }
  p.bitmap->run(x, y, stream);
}

template <class T>
void SparseLinearPlan<T>::set_tau(float tau) {
  if (!(tau >= 0)) throw UsageError(fmt::format("SparseLinearPlan::set_tau: tau must be >= 0, got {}", tau));
  impl_->tau = tau;
  if (impl_->bitmap) impl_->bitmap->set_tau(tau);
}
template <class T>
float SparseLinearPlan<T>::tau() const {
  return impl_->tau;
}
template <class T>
int32_t SparseLinearPlan<T>::rows() const {
  return impl_->rows;
}
template <class T>
int32_t SparseLinearPlan<T>::cols() const {
  return impl_->cols;
}
template <class T>
SparseLinearLayout SparseLinearPlan<T>::layout() const {
  return impl_->layout;
}
template <class T>
const SpmspvPlan<T>& SparseLinearPlan<T>::spmspv() const {
  if (!impl_->spmspv) throw UsageError("SparseLinearPlan::spmspv: this plan uses the column bitmap layout");
  return *impl_->spmspv;
}
template <class T>
int64_t SparseLinearPlan<T>::device_bytes() const {
  const Impl& p = *impl_;
  if (p.spmspv) return p.spmspv->stats().device_bytes + static_cast<int64_t>(p.xs.size() * sizeof(T));
  return p.bitmap->device_bytes();
}
template <class T>
std::string SparseLinearPlan<T>::explain() const {
  const Impl& p = *impl_;
  if (p.spmspv)
    return fmt::format("sparse linear {}x{}: x kept where |x| >= {} ({}), then\n{}", rows(), cols(), p.tau,
                       p.kernel.key, p.spmspv->explain());
  return fmt::format("sparse linear {}x{}: column bitmap layout, {} device bytes, through\n{}", rows(), cols(),
                     device_bytes(), p.bitmap->explain());
}

template class SparseLinearPlan<float>;
template class SparseLinearPlan<double>;

}  // namespace dbsparse

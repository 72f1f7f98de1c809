// DB-Decoding plans (include/dbsparse/sparse_linear.hpp): the sparsifier launch, then SpMSpV.
#include "dbsparse/sparse_linear.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "codegen/sparse_linear_key.hpp"
#include "dbsparse/column_bitmap.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/module_registry.hpp"

namespace dbsparse {

// Blocks per strip at most: the last block of a strip adds this many partial sums per row, and a
// 1024-row strip with few active columns gives little work to each split anyway.
constexpr int kMaxSplits = 16;

template <class T>
struct SparseLinearPlan<T>::Impl {
  std::optional<SpmspvPlan<T>> spmspv;
  DeviceBuffer<T> xs;  // the sparsified x (DB layout)
  CUfunction sparsify = nullptr, sparsify_list = nullptr, colbitmap = nullptr;
  unsigned grid = 1;
  float tau = 0;
  KernelInfo kernel;
  SparseLinearLayout layout = SparseLinearLayout::Spmspv;
  int32_t rows = 0, cols = 0;
  // The column bitmap layout: W, the active list, per-split partial sums and per-strip tickets.
  int strips = 0, splits = 1;
  DeviceBuffer<uint32_t> masks, tickets, count;
  DeviceBuffer<int32_t> seg_ptr, act_idx;
  DeviceBuffer<T> values, act_val;
  DeviceBuffer<float> partial;
};

template <class T>
SparseLinearPlan<T> Context::plan_sparse_linear(const CsrMatrix<T>& w, const SparseLinearOptions& opt) {
  if (!(opt.tau >= 0)) throw UsageError(fmt::format("plan_sparse_linear: tau must be >= 0, got {}", opt.tau));
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
    impl->spmspv.emplace(plan_spmspv(w, so));
    impl->xs = DeviceBuffer<T>(n);
  } else {
    make_current();
    const ColumnBitmapMatrix<T> m = csr_to_column_bitmap(w);
    impl->strips = m.strips;
    // Enough blocks to fill the GPU twice: strips x splits.
    impl->splits = std::clamp((2 * info_.sm_count + std::max(m.strips, 1) - 1) / std::max(m.strips, 1), 1, kMaxSplits);
    impl->masks = DeviceBuffer<uint32_t>(std::span<const uint32_t>(m.masks.empty() ? std::vector<uint32_t>{0} : m.masks));
    impl->seg_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(m.seg_ptr));
    impl->values = m.values.empty() ? DeviceBuffer<T>(1) : DeviceBuffer<T>(std::span<const T>(m.values));
    impl->act_idx = DeviceBuffer<int32_t>(n);
    impl->act_val = DeviceBuffer<T>(n);
    impl->count = DeviceBuffer<uint32_t>(1);
    impl->count.fill_bytes(0);
    impl->tickets = DeviceBuffer<uint32_t>(static_cast<size_t>(m.strips) + 1);
    impl->tickets.fill_bytes(0);
    impl->partial = DeviceBuffer<float>(static_cast<size_t>(impl->splits) * static_cast<size_t>(std::max(w.rows, 1)));
  }
  codegen::SparseLinearKey key;
  key.value = codegen::value_type_of<T>();
  auto loaded = modules_->get(codegen::make_source(key), info_.arch());
  impl->sparsify = loaded.fns.at(0);
  impl->sparsify_list = loaded.fns.at(1);
  impl->colbitmap = loaded.fns.at(2);
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
  if (p.rows == 0) return;
  uint64_t idx = p.act_idx.ptr(), val = p.act_val.ptr(), cnt = p.count.ptr();
  void* list_params[] = {&x, &n, &tau, &idx, &val, &cnt};
  if (n > 0) DBS_CU(cuLaunchKernel(p.sparsify_list, p.grid, 1, 1, 256, 1, 1, 0, h, list_params, nullptr));
  uint64_t masks = p.masks.ptr(), seg = p.seg_ptr.ptr(), vals = p.values.ptr(), part = p.partial.ptr(),
           tick = p.tickets.ptr();
  int rows = p.rows, strips = p.strips, splits = p.splits;
  void* push_params[] = {&masks, &seg, &vals, &idx, &val, &cnt, &part, &tick, &y, &rows, &strips, &splits};
  DBS_CU(cuLaunchKernel(p.colbitmap, static_cast<unsigned>(strips * splits), 1, 1, 256, 1, 1, 0, h, push_params,
                        nullptr));
}

template <class T>
void SparseLinearPlan<T>::set_tau(float tau) {
  if (!(tau >= 0)) throw UsageError(fmt::format("SparseLinearPlan::set_tau: tau must be >= 0, got {}", tau));
  impl_->tau = tau;
}
template <class T>
float SparseLinearPlan<T>::tau() const { return impl_->tau; }
template <class T>
int32_t SparseLinearPlan<T>::rows() const { return impl_->rows; }
template <class T>
int32_t SparseLinearPlan<T>::cols() const { return impl_->cols; }
template <class T>
SparseLinearLayout SparseLinearPlan<T>::layout() const { return impl_->layout; }
template <class T>
const SpmspvPlan<T>& SparseLinearPlan<T>::spmspv() const {
  if (!impl_->spmspv) throw UsageError("SparseLinearPlan::spmspv: this plan uses the column bitmap layout");
  return *impl_->spmspv;
}
template <class T>
int64_t SparseLinearPlan<T>::device_bytes() const {
  const Impl& p = *impl_;
  if (p.spmspv) return p.spmspv->stats().device_bytes + static_cast<int64_t>(p.xs.size() * sizeof(T));
  return static_cast<int64_t>((p.masks.size() + p.tickets.size() + p.count.size() + p.seg_ptr.size() +
                               p.act_idx.size() + p.partial.size()) * 4 +
                              (p.values.size() + p.act_val.size()) * sizeof(T));
}
template <class T>
std::string SparseLinearPlan<T>::explain() const {
  const Impl& p = *impl_;
  if (p.spmspv)
    return fmt::format("sparse linear {}x{}: x kept where |x| >= {} ({}), then\n{}", rows(), cols(), p.tau,
                       p.kernel.key, p.spmspv->explain());
  return fmt::format("sparse linear {}x{}: column bitmap layout, {} strips of 1024 rows x {} splits, {} device bytes; "
                     "active columns listed where |x| >= {} ({})\n",
                     rows(), cols(), p.strips, p.splits, device_bytes(), p.tau, p.kernel.key);
}

template SparseLinearPlan<float> Context::plan_sparse_linear(const CsrMatrix<float>&, const SparseLinearOptions&);
template SparseLinearPlan<double> Context::plan_sparse_linear(const CsrMatrix<double>&, const SparseLinearOptions&);
template class SparseLinearPlan<float>;
template class SparseLinearPlan<double>;

}  // namespace dbsparse

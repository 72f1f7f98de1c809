// Hash SpGEMM on the GPU (include/dbsparse/spgemm.hpp, templates/spgemm.cuh): the host analysis
// of runtime/spgemm_analysis.cpp decides the groups and the global tables once; the kernels follow
// hash_spgemm_cpu phase for phase.
#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/spgemm_key.hpp"
#include "dbsparse/spgemm.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/upload_nonempty.hpp"
#include "runtime/module_registry.hpp"

namespace dbsparse {
namespace {

using abi::kSpgemmGlobalGroup;

template <class U>
DeviceBuffer<U> upload(std::span<const U> host) {
  return detail::upload_nonempty(host);
}

struct GroupKernels {
  CUfunction symbolic = nullptr, numeric = nullptr;
  int rows_per_block = 1;
  int64_t symbolic_smem = 0, numeric_smem = 0;  // dynamic shared bytes
  KernelInfo symbolic_info, numeric_info;
};

}  // namespace

template <class T>
struct SpgemmPlan<T>::Impl {
  SpgemmConfig config;
  int32_t rows = 0, cols = 0;
  int64_t a_nnz = 0, b_nnz = 0;
  std::vector<int64_t> ip;
  SpgemmGrouping grouping;
  DeviceBuffer<int32_t> a_ptr, a_col, b_ptr, b_col;
  DeviceBuffer<T> a_val, b_val;
  std::array<DeviceBuffer<int32_t>, kSpgemmGroups> group_rows;
  // Global tables: group 3's rows first (always run), then the rows of groups 0-2 that may overflow
  // their shared table (run where the symbolic phase flagged them).
  std::vector<int32_t> global_rows;
  int32_t global_always = 0;
  int64_t global_slots = 0;
  DeviceBuffer<int32_t> global_rows_dev;
  DeviceBuffer<int64_t> table_off;
  DeviceBuffer<int32_t> table_keys;
  DeviceBuffer<T> table_vals;
  DeviceBuffer<int32_t> row_len, overflow;
  std::array<GroupKernels, kSpgemmGroups> kernels;
  // C
  bool structured = false;
  int64_t nnz = -1;
  int64_t overflowed = 0;
  DeviceBuffer<int32_t> c_ptr, c_col;
  DeviceBuffer<T> c_val;

  void launch_symbolic(CUstream h);
  void launch_numeric(CUstream h);
  void size_c(CUstream h);
};

template <class T>
void SpgemmPlan<T>::Impl::launch_symbolic(CUstream h) {
  DBS_CU(cuMemsetD32Async(row_len.ptr(), 0, row_len.size(), h));
  DBS_CU(cuMemsetD32Async(overflow.ptr(), 0, overflow.size(), h));
  uint64_t ap = a_ptr.ptr(), ac = a_col.ptr(), bp = b_ptr.ptr(), bc = b_col.ptr(), len = row_len.ptr(),
           ovf = overflow.ptr();
  for (int g = 0; g < kSpgemmGlobalGroup; ++g) {
    int n = static_cast<int>(grouping.count(g));
    if (n == 0) continue;
    const GroupKernels& k = kernels[g];
    uint64_t list = group_rows[g].ptr();
    void* params[] = {&list, &n, &ap, &ac, &bp, &bc, &len, &ovf};
    DBS_CU(cuLaunchKernel(k.symbolic, static_cast<unsigned>((n + k.rows_per_block - 1) / k.rows_per_block), 1, 1,
                          static_cast<unsigned>(config.block(g)), 1, 1, static_cast<unsigned>(k.symbolic_smem), h,
                          params, nullptr));
  }
  if (!global_rows.empty()) {
    int n = static_cast<int>(global_rows.size()), always = global_always;
    uint64_t list = global_rows_dev.ptr(), off = table_off.ptr(), keys = table_keys.ptr();
    void* params[] = {&list, &n, &always, &off, &ap, &ac, &bp, &bc, &keys, &len, &ovf};
    DBS_CU(cuLaunchKernel(kernels[kSpgemmGlobalGroup].symbolic, static_cast<unsigned>(n), 1, 1,
                          static_cast<unsigned>(config.block3), 1, 1, 0, h, params, nullptr));
  }
}

template <class T>
void SpgemmPlan<T>::Impl::size_c(CUstream h) {
  DBS_CU(cuStreamSynchronize(h));
  const std::vector<int32_t> len = row_len.download();
  const std::vector<int32_t> ovf = overflow.download();
  const std::span<const int32_t> lengths(len.data(), static_cast<size_t>(rows));
  overflowed = 0;
  std::vector<uint8_t> in_global(static_cast<size_t>(rows), 0);
  for (int32_t i : global_rows) in_global[i] = 1;
  for (int32_t i = 0; i < rows; ++i)
    if (ovf[i]) {
      ++overflowed;
      if (!in_global[i])  // only rows that may overflow can, and those have a global table
        throw std::logic_error(fmt::format("spgemm plan: row {} overflowed its shared table and has no global one", i));
    }
  nnz = check_nnz_fits(lengths);
  std::vector<int32_t> ptr(static_cast<size_t>(rows) + 1, 0);
  for (int32_t i = 0; i < rows; ++i) ptr[i + 1] = ptr[i] + len[i];
  c_ptr = DeviceBuffer<int32_t>(std::span<const int32_t>(ptr));
  c_col = DeviceBuffer<int32_t>(static_cast<size_t>(std::max<int64_t>(nnz, 1)));
  c_val = DeviceBuffer<T>(static_cast<size_t>(std::max<int64_t>(nnz, 1)));
  structured = true;
}

template <class T>
void SpgemmPlan<T>::Impl::launch_numeric(CUstream h) {
  uint64_t ap = a_ptr.ptr(), ac = a_col.ptr(), av = a_val.ptr(), bp = b_ptr.ptr(), bc = b_col.ptr(),
           bv = b_val.ptr(), ovf = overflow.ptr(), cp = c_ptr.ptr(), cc = c_col.ptr(), cv = c_val.ptr();
  for (int g = 0; g < kSpgemmGlobalGroup; ++g) {
    int n = static_cast<int>(grouping.count(g));
    if (n == 0) continue;
    const GroupKernels& k = kernels[g];
    uint64_t list = group_rows[g].ptr();
    void* params[] = {&list, &n, &ap, &ac, &av, &bp, &bc, &bv, &ovf, &cp, &cc, &cv};
    DBS_CU(cuLaunchKernel(k.numeric, static_cast<unsigned>((n + k.rows_per_block - 1) / k.rows_per_block), 1, 1,
                          static_cast<unsigned>(config.block(g)), 1, 1, static_cast<unsigned>(k.numeric_smem), h,
                          params, nullptr));
  }
  if (!global_rows.empty()) {
    int n = static_cast<int>(global_rows.size()), always = global_always;
    uint64_t list = global_rows_dev.ptr(), off = table_off.ptr(), keys = table_keys.ptr(), vals = table_vals.ptr();
    void* params[] = {&list, &n, &always, &off, &ap, &ac, &av, &bp, &bc, &bv, &keys, &vals, &ovf, &cp, &cc, &cv};
    DBS_CU(cuLaunchKernel(kernels[kSpgemmGlobalGroup].numeric, static_cast<unsigned>(n), 1, 1,
                          static_cast<unsigned>(config.block3), 1, 1, 0, h, params, nullptr));
  }
}

template <class T>
SpgemmPlan<T> Context::plan_spgemm(const CsrMatrix<T>& a, const CsrMatrix<T>& b) {
  return plan_spgemm(a, b, SpgemmOptions{});
}

template <class T>
SpgemmPlan<T> Context::plan_spgemm(const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmOptions& opt) {
  make_current();
  auto p = std::make_unique<typename SpgemmPlan<T>::Impl>();
  p->config = opt.config.value_or(SpgemmConfig{});
  const SpgemmConfig& c = p->config;
  c.check();
  p->ip = intermediate_products(a, b);  // checks the shapes and A's columns
  for (int32_t k = 0; k < b.rows; ++k)
    for (int32_t q = b.row_ptr[k]; q < b.row_ptr[k + 1]; ++q)
      if (b.col_idx[q] < 0 || b.col_idx[q] >= b.cols)
        throw UsageError(fmt::format("spgemm: row {} of B has column {}, outside [0, {})", k, b.col_idx[q], b.cols));
  p->rows = a.rows;
  p->cols = b.cols;
  p->a_nnz = static_cast<int64_t>(a.col_idx.size());
  p->b_nnz = static_cast<int64_t>(b.col_idx.size());
  p->grouping = group_rows(p->ip, c);

  // Global tables: group 3, then (with the fallback) the rows that may overflow, each ascending.
  p->global_rows = p->grouping.rows[kSpgemmGlobalGroup];
  p->global_always = static_cast<int32_t>(p->global_rows.size());
  if (c.overflow_to_global != 0)
    for (int g = 0; g < kSpgemmGlobalGroup; ++g)
      for (int32_t i : p->grouping.rows[g])
        if (spgemm_row_may_overflow(p->ip[i], b.cols, c)) p->global_rows.push_back(i);
  std::vector<int64_t> off(p->global_rows.size() + 1, 0);
  for (size_t r = 0; r < p->global_rows.size(); ++r)
    off[r + 1] = off[r] + spgemm_global_table_slots(p->ip[p->global_rows[r]], b.cols, c);
  p->global_slots = off.back();

  p->a_ptr = upload(std::span<const int32_t>(a.row_ptr));
  p->a_col = upload(std::span<const int32_t>(a.col_idx));
  p->a_val = upload(std::span<const T>(a.values));
  p->b_ptr = upload(std::span<const int32_t>(b.row_ptr));
  p->b_col = upload(std::span<const int32_t>(b.col_idx));
  p->b_val = upload(std::span<const T>(b.values));
  for (int g = 0; g < kSpgemmGroups; ++g) p->group_rows[g] = upload(std::span<const int32_t>(p->grouping.rows[g]));
  p->global_rows_dev = upload(std::span<const int32_t>(p->global_rows));
  p->table_off = upload(std::span<const int64_t>(off));
  p->table_keys = DeviceBuffer<int32_t>(static_cast<size_t>(std::max<int64_t>(p->global_slots, 1)));
  p->table_vals = DeviceBuffer<T>(static_cast<size_t>(std::max<int64_t>(p->global_slots, 1)));
  p->row_len = DeviceBuffer<int32_t>(static_cast<size_t>(std::max(a.rows, 1)));
  p->overflow = DeviceBuffer<int32_t>(static_cast<size_t>(std::max(a.rows, 1)));

  // Kernels of the groups that have rows; their tables' shared memory against the device's limit.
  CUdevice dev = 0;
  DBS_CU(cuDeviceGet(&dev, info_.ordinal));
  int optin = 0;
  DBS_CU(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
  const auto vt = codegen::value_type_of<T>();
  for (int g = 0; g < kSpgemmGroups; ++g) {
    const bool global = g == kSpgemmGlobalGroup;
    if (global ? p->global_rows.empty() : p->grouping.count(g) == 0) continue;
    GroupKernels& k = p->kernels[g];
    if (!global) {
      k.rows_per_block = g == 0 ? c.block0 / c.lanes0 : 1;
      k.symbolic_smem = int64_t{k.rows_per_block} * c.table(g) * 4;
      k.numeric_smem = int64_t{k.rows_per_block} * c.table(g) * (4 + static_cast<int64_t>(sizeof(T)));
      if (k.numeric_smem > optin)
        throw UsageError(fmt::format("spgemm: group {} needs {} bytes of shared memory per block ({} table(s) of {} "
                                     "slots), over this device's {} ({}): lower 't{}'",
                                     g, k.numeric_smem, k.rows_per_block, c.table(g), optin, info_.arch(), g));
    }
    auto sym = modules_->get(codegen::make_source(codegen::spgemm_key(vt, codegen::SpgemmPhase::Symbolic, g, c)),
                             info_.arch());
    auto num = modules_->get(codegen::make_source(codegen::spgemm_key(vt, codegen::SpgemmPhase::Numeric, g, c)),
                             info_.arch());
    k.symbolic = sym.fns.at(0);
    k.numeric = num.fns.at(0);
    k.symbolic_info = sym.info;
    k.numeric_info = num.info;
    // Past 48 KiB a kernel must opt in to its dynamic shared memory.
    DBS_CU(cuFuncSetAttribute(k.symbolic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              static_cast<int>(k.symbolic_smem)));
    DBS_CU(cuFuncSetAttribute(k.numeric, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              static_cast<int>(k.numeric_smem)));
  }
  return SpgemmPlan<T>(std::move(p));
}

template <class T>
SpgemmPlan<T>::SpgemmPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
template <class T>
SpgemmPlan<T>::SpgemmPlan(SpgemmPlan&&) noexcept = default;
template <class T>
SpgemmPlan<T>& SpgemmPlan<T>::operator=(SpgemmPlan&&) noexcept = default;
template <class T>
SpgemmPlan<T>::~SpgemmPlan() = default;

template <class T>
void SpgemmPlan<T>::run(void* stream) {
  Impl& p = *impl_;
  const auto h = static_cast<CUstream>(stream);
  if (!p.structured) {
    p.launch_symbolic(h);
    p.size_c(h);  // waits for the stream
  }
  p.launch_numeric(h);
}

template <class T>
void SpgemmPlan<T>::values_changed(std::span<const T> a_values, std::span<const T> b_values) {
  Impl& p = *impl_;
  if (static_cast<int64_t>(a_values.size()) != p.a_nnz || static_cast<int64_t>(b_values.size()) != p.b_nnz)
    throw UsageError(fmt::format("SpgemmPlan::values_changed: the plan's A has {} and B {} nonzeros, got {} and {} "
                                 "values (only the values may change)",
                                 p.a_nnz, p.b_nnz, a_values.size(), b_values.size()));
  DBS_CU(cuCtxSynchronize());  // every stream done with the old values (the last run's may be gone)
  p.a_val = upload(a_values);
  p.b_val = upload(b_values);
}

template <class T>
bool SpgemmPlan<T>::structure_known() const { return impl_->structured; }
template <class T>
int32_t SpgemmPlan<T>::rows() const { return impl_->rows; }
template <class T>
int32_t SpgemmPlan<T>::cols() const { return impl_->cols; }
template <class T>
int64_t SpgemmPlan<T>::nnz() const { return impl_->nnz; }

namespace {
void require_structure(bool structured, const char* what) {
  if (!structured) throw UsageError(fmt::format("SpgemmPlan::{}: C is known after the first run()", what));
}
}  // namespace

template <class T>
uint64_t SpgemmPlan<T>::row_ptr() const {
  require_structure(impl_->structured, "row_ptr");
  return impl_->c_ptr.ptr();
}
template <class T>
uint64_t SpgemmPlan<T>::col_idx() const {
  require_structure(impl_->structured, "col_idx");
  return impl_->c_col.ptr();
}
template <class T>
uint64_t SpgemmPlan<T>::values() const {
  require_structure(impl_->structured, "values");
  return impl_->c_val.ptr();
}

template <class T>
CsrMatrix<T> SpgemmPlan<T>::download() const {
  const Impl& p = *impl_;
  require_structure(p.structured, "download");
  DBS_CU(cuCtxSynchronize());  // the runs done, on whichever stream (it may be gone by now)
  CsrMatrix<T> c;
  c.rows = p.rows;
  c.cols = p.cols;
  c.row_ptr = p.c_ptr.download();
  auto col = p.c_col.download();
  auto val = p.c_val.download();
  col.resize(static_cast<size_t>(p.nnz));
  val.resize(static_cast<size_t>(p.nnz));
  c.col_idx = std::move(col);
  c.values = std::move(val);
  return c;
}

template <class T>
const SpgemmConfig& SpgemmPlan<T>::config() const { return impl_->config; }
template <class T>
const SpgemmGrouping& SpgemmPlan<T>::grouping() const { return impl_->grouping; }
template <class T>
int64_t SpgemmPlan<T>::overflow_rows() const { return impl_->overflowed; }
template <class T>
int64_t SpgemmPlan<T>::global_slots() const { return impl_->global_slots; }

namespace {
template <class U>
int64_t bytes_of(const DeviceBuffer<U>& d) {
  return static_cast<int64_t>(d.size() * sizeof(U));
}
}  // namespace

template <class T>
int64_t SpgemmPlan<T>::device_bytes() const {
  const Impl& p = *impl_;
  int64_t n = bytes_of(p.a_ptr) + bytes_of(p.a_col) + bytes_of(p.a_val) + bytes_of(p.b_ptr) + bytes_of(p.b_col) +
              bytes_of(p.b_val) + bytes_of(p.global_rows_dev) + bytes_of(p.table_off) + bytes_of(p.table_keys) +
              bytes_of(p.table_vals) + bytes_of(p.row_len) + bytes_of(p.overflow) + bytes_of(p.c_ptr) +
              bytes_of(p.c_col) + bytes_of(p.c_val);
  for (const auto& g : p.group_rows) n += bytes_of(g);
  return n;
}

template <class T>
std::string SpgemmPlan<T>::explain() const {
  const Impl& p = *impl_;
  const SpgemmConfig& c = p.config;
  std::string out = fmt::format("spgemm {}x{} = A ({} nnz) * B ({} nnz), {}: IP {} (GFLOP {:.3f}), idle rows {}\n",
                                p.rows, p.cols, p.a_nnz, p.b_nnz, sizeof(T) == 4 ? "f32" : "f64",
                                spgemm_flops(p.ip) / 2, spgemm_flops(p.ip) * 1e-9, p.grouping.idle_rows);
  for (int g = 0; g < kSpgemmGroups; ++g) {
    const GroupKernels& k = p.kernels[g];
    const std::string where =
        g < 3 ? fmt::format("IP < {}, shared table {} slots, {} row(s) per block of {}", c.bound(g), c.table(g),
                            g == 0 ? c.block0 / c.lanes0 : 1, c.block(g))
              : fmt::format("IP >= {}, global tables, block {}", c.b2, c.block3);
    out += fmt::format("  group {}: {} rows, IP {} ({}); kernels {} / {}\n", g, p.grouping.count(g), p.grouping.ip[g],
                       where, k.symbolic ? k.symbolic_info.key : "-", k.numeric ? k.numeric_info.key : "-");
  }
  out += fmt::format("  global tables: {} rows ({} of group 3, {} that may overflow a shared table), {} slots; "
                     "overflow_to_global {}\n",
                     p.global_rows.size(), p.global_always, p.global_rows.size() - p.global_always, p.global_slots,
                     c.overflow_to_global);
  if (p.structured)
    out += fmt::format("  C: {} nnz; {} row(s) overflowed to a global table\n", p.nnz, p.overflowed);
  else
    out += "  C: not yet sized\n";
  out += fmt::format("  device: {} bytes held{}\n", device_bytes(), p.structured ? ", C included" : "");
  out += "  the first run() waits for its stream after the symbolic phase (row lengths read back, check_nnz_fits, "
         "prefix sum on the host, C allocated); later runs launch the numeric phase only, without a host sync\n";
  return out;
}

template <class T>
CsrMatrix<T> spgemm(Context& ctx, const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmOptions& options) {
  SpgemmPlan<T> plan = ctx.plan_spgemm(a, b, options);
  Stream s(ctx);
  plan.run(s.handle());
  return plan.download();
}

template class SpgemmPlan<float>;
template class SpgemmPlan<double>;
template SpgemmPlan<float> Context::plan_spgemm(const CsrMatrix<float>&, const CsrMatrix<float>&);
template SpgemmPlan<double> Context::plan_spgemm(const CsrMatrix<double>&, const CsrMatrix<double>&);
template SpgemmPlan<float> Context::plan_spgemm(const CsrMatrix<float>&, const CsrMatrix<float>&, const SpgemmOptions&);
template SpgemmPlan<double> Context::plan_spgemm(const CsrMatrix<double>&, const CsrMatrix<double>&,
                                                 const SpgemmOptions&);
template CsrMatrix<float> spgemm(Context&, const CsrMatrix<float>&, const CsrMatrix<float>&, const SpgemmOptions&);
template CsrMatrix<double> spgemm(Context&, const CsrMatrix<double>&, const CsrMatrix<double>&, const SpgemmOptions&);

}  // namespace dbsparse

// SDDMM plans (include/dbsparse/sddmm.hpp): the spec (sddmm_spec.cpp), A's pattern uploaded, the
// kernels loaded; run() is one launch.
#include "dbsparse/sddmm.hpp"

#include <span>
#include <type_traits>

#include <fmt/format.h>

#include "dbsparse/abi/sddmm.h"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/l1_carveout.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/sddmm/sddmm_spec.hpp"

namespace dbsparse {

using sddmm_detail::SddmmSpec;

struct SddmmPlan::Impl {
  SddmmSpec spec;
  DeviceBuffer<int32_t> col_idx, entry_row;  // entry_row: A's row of each entry
  DeviceBuffer<float> vals;                  // only when scaled
  CUfunction fn1 = nullptr, fn4 = nullptr;
  std::vector<KernelInfo> kernels;
};

SddmmPlan::SddmmPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SddmmPlan::SddmmPlan(SddmmPlan&&) noexcept = default;
SddmmPlan& SddmmPlan::operator=(SddmmPlan&&) noexcept = default;
SddmmPlan::~SddmmPlan() = default;

namespace {

CUfunction load(const Context& ctx, SddmmPlan::Impl& p, const codegen::SddmmKey& key) {
  const detail::LoadedKernel k = ctx.modules().get(codegen::make_source(key), ctx.device().arch());
  p.kernels.push_back(k.info);
  const DeviceInfo& d = ctx.device();
  // A gather kernel: the least shared carveout that keeps its occupancy, so L1 keeps more of Y.
  detail::prefer_l1(k.entry("sddmm"), key.warps * 32, 0, d.reserved_shared_per_block, d.shared_per_sm);
  return k.entry("sddmm");
}

}  // namespace

template <class T>
SddmmPlan SddmmPlan::build(Context& ctx, const CsrMatrix<T>& a, int k) {
  return build(ctx, a, k, SddmmOptions{});
}

template <class T>
SddmmPlan SddmmPlan::build(Context& ctx, const CsrMatrix<T>& a, int k, const SddmmOptions& opt) {
  if constexpr (!std::is_same_v<T, float>) {
    throw UsageError(
        "plan_sddmm: A must be a CsrMatrix<float> (there are no f64 SDDMM kernels): convert it with a.cast<float>(); "
        "for f16 or bf16 X, Y and out set SddmmOptions::dtype");
  } else {
    validate(a);
    const Config config = opt.config ? *opt.config
                                     : Config{"sddmm", config_to_json(SddmmConfig{}), ConfigSource::Default,
                                              "defaults (sddmm is not tuned)"};
    auto p = std::make_unique<Impl>();
    p->spec = sddmm_detail::sddmm_spec(a.rows, a.cols, a.nnz(), k, opt, config);
    ctx.make_current();
    require_device_bytes(fmt::format("plan_sddmm of a {} x {} pattern with {} entries", a.rows, a.cols, a.nnz()),
                         csr_device_bytes(a.rows, a.nnz(), (opt.scale_by_values ? 4 : 0) + 4));  // + the row table
    p->col_idx = DeviceBuffer<int32_t>(std::span<const int32_t>(a.col_idx));
    const std::vector<int32_t> rows = sddmm_detail::sddmm_entry_rows(a.row_ptr, a.nnz());
    if (!rows.empty()) p->entry_row = DeviceBuffer<int32_t>(std::span<const int32_t>(rows));
    if (opt.scale_by_values) p->vals = DeviceBuffer<float>(std::span<const float>(a.values));
    p->fn1 = load(ctx, *p, p->spec.key1);
    if (p->spec.vec4) p->fn4 = load(ctx, *p, p->spec.key4);
    return SddmmPlan(std::move(p));
  }
}

template SddmmPlan SddmmPlan::build(Context&, const CsrMatrix<float>&, int);
template SddmmPlan SddmmPlan::build(Context&, const CsrMatrix<double>&, int);
template SddmmPlan SddmmPlan::build(Context&, const CsrMatrix<float>&, int, const SddmmOptions&);
template SddmmPlan SddmmPlan::build(Context&, const CsrMatrix<double>&, int, const SddmmOptions&);

void SddmmPlan::run(uint64_t x, uint64_t y, uint64_t out, void* stream, float alpha) const {
  const Impl& p = *impl_;
  const SddmmSpec& s = p.spec;
  if (s.nnz == 0) return;
  if (!x || !y || !out) throw UsageError("SddmmPlan::run: X, Y and out must be device pointers");
  const uint64_t vec_bytes = 4 * static_cast<uint64_t>(spmm_value_bytes(s.dtype));
  const bool v4 = s.vec4 && x % vec_bytes == 0 && y % vec_bytes == 0;
  abi::SddmmArgs args{};
  args.col_idx = reinterpret_cast<const int32_t*>(p.col_idx.ptr());
  args.vals = s.scale ? reinterpret_cast<const float*>(p.vals.ptr()) : nullptr;
  args.entry_row = reinterpret_cast<const int32_t*>(p.entry_row.ptr());
  args.x = reinterpret_cast<const void*>(x);
  args.y = reinterpret_cast<const void*>(y);
  args.out = reinterpret_cast<void*>(out);
  args.nnz = s.nnz;
  args.rows = s.rows;
  args.k = s.k;
  args.tile = s.typed.tile;
  args.alpha = alpha;
  void* params[] = {&args};
  const codegen::SddmmKey& key = v4 ? s.key4 : s.key1;
  DBS_CU(cuLaunchKernel(v4 ? p.fn4 : p.fn1, v4 ? s.grid4 : s.grid1, 1, 1, static_cast<unsigned>(key.warps * 32), 1, 1,
                        0, static_cast<CUstream>(stream), params, nullptr));
}

namespace {
void check_sizes(const SddmmSpec& s, size_t x, size_t y, size_t out, const char* what) {
  const size_t want_x = static_cast<size_t>(s.rows) * static_cast<size_t>(s.k);
  const size_t want_y = static_cast<size_t>(s.cols) * static_cast<size_t>(s.k);
  const auto want_out = static_cast<size_t>(s.nnz);
  if (x != want_x || y != want_y || out != want_out)
    throw UsageError(fmt::format(
        "SddmmPlan::run: X has {} {} (need {} x {} = {}), Y has {} (need {} x {} = {}), out has {} (need nnz = {})", x,
        what, s.rows, s.k, want_x, y, s.cols, s.k, want_y, out, want_out));
}
}  // namespace

void SddmmPlan::run(const DeviceBuffer<float>& x, const DeviceBuffer<float>& y, DeviceBuffer<float>& out,
                    const Stream& stream, float alpha) const {
  if (impl_->spec.dtype != SpmmDtype::F32)
    throw UsageError(fmt::format("SddmmPlan::run: the plan is {}, so X, Y and out are uint16_t buffers, not float",
                                 to_string(impl_->spec.dtype)));
  check_sizes(impl_->spec, x.size(), y.size(), out.size(), "floats");
  run(x.ptr(), y.ptr(), out.ptr(), stream.handle(), alpha);
}

void SddmmPlan::run(const DeviceBuffer<uint16_t>& x, const DeviceBuffer<uint16_t>& y, DeviceBuffer<uint16_t>& out,
                    const Stream& stream, float alpha) const {
  if (impl_->spec.dtype == SpmmDtype::F32)
    throw UsageError("SddmmPlan::run: the plan is f32, so X, Y and out are float buffers, not uint16_t");
  check_sizes(impl_->spec, x.size(), y.size(), out.size(), to_string(impl_->spec.dtype));
  run(x.ptr(), y.ptr(), out.ptr(), stream.handle(), alpha);
}

int32_t SddmmPlan::rows() const { return impl_->spec.rows; }
int32_t SddmmPlan::cols() const { return impl_->spec.cols; }
int64_t SddmmPlan::nnz() const { return impl_->spec.nnz; }
int SddmmPlan::k() const { return impl_->spec.k; }
SpmmDtype SddmmPlan::dtype() const { return impl_->spec.dtype; }
bool SddmmPlan::scale_by_values() const { return impl_->spec.scale; }
const SddmmConfig& SddmmPlan::typed_config() const { return impl_->spec.typed; }
int64_t SddmmPlan::device_bytes() const {
  const Impl& p = *impl_;
  return static_cast<int64_t>((p.col_idx.size() + p.entry_row.size() + p.vals.size()) * 4);
}
const std::vector<KernelInfo>& SddmmPlan::kernels() const { return impl_->kernels; }

std::string SddmmPlan::explain() const {
  const SddmmSpec& s = impl_->spec;
  const int vb = spmm_value_bytes(s.dtype);
  std::string out = fmt::format("sddmm: {} x {}, {} entries, k = {}, {}{}; config {} ({})\n", s.rows, s.cols, s.nnz,
                                s.k, to_string(s.dtype), s.scale ? ", scaled by A's values" : "",
                                s.config.params.dump(), to_string(s.config.source));
  auto shape = [&](const codegen::SddmmKey& key, unsigned grid) {
    return fmt::format(
        "groups of {} lanes ({} a warp), {} values a load, X's row in {} registers a lane; {} blocks of {} warps",
        key.lanes, 32 / key.lanes, key.vec, key.vec * key.chunks, grid, key.warps);
  };
  out += fmt::format(
      "  entries split in tiles of {}: a group a tile (its first row from a table made at plan time), X's row "
      "loaded once per (row, tile)\n",
      s.typed.tile);
  if (s.vec4) out += "  aligned X and Y: " + shape(s.key4, s.grid4) + "\n";
  out += std::string(s.vec4 ? "  otherwise: " : "  ") + shape(s.key1, s.grid1) + "\n";
  // The least traffic a call can have: col_idx (and values), out, X and Y each read once.
  const int64_t floor =
      s.nnz * (4 + vb + (s.scale ? 4 : 0)) + (int64_t{s.rows} + s.cols) * s.k * vb + (int64_t{s.rows} + 1) * 4;
  out +=
      fmt::format("  memory floor {} bytes (each of X's and Y's rows once); device {} bytes\n", floor, device_bytes());
  for (const KernelInfo& k : impl_->kernels) out += fmt::format("  kernel {} ({})\n", k.key, k.origin);
  return out;
}

}  // namespace dbsparse

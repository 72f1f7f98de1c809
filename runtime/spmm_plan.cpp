// SpMM plans (include/dbsparse/spmm.hpp): BRP-SpMM (C = beta * C, the TC groups, the residual
// rows: up to three launches) or the CUDA-core CSR product (one launch).
#include "dbsparse/spmm.hpp"

#include <algorithm>
#include <chrono>
#include <type_traits>

#include <fmt/format.h>

#include "codegen/spmm_key.hpp"
#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/features.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/module_registry.hpp"

namespace dbsparse {

const char* to_string(SpmmPath p) {
  switch (p) {
    case SpmmPath::Auto: return "auto";
    case SpmmPath::Brp: return "brp";
    case SpmmPath::CsrCudaCore: return "csr-cuda-core";
  }
  return "?";
}

namespace {

// The TC kernel's warps: one per 8 columns of B, up to the slides' 4 (128 threads per group), so
// that narrow B does not leave warps of every group idle.
int brp_warps(int n) { return n <= 8 ? 1 : n <= 16 ? 2 : 4; }

// float4 lanes only once each of a warp's 32 lanes has 4 columns to take (n >= 128): below that,
// scalar lanes keep more of the warp busy. Also needs B and C 16-byte aligned (checked per run).
bool wants_vec4(int n) { return n % 4 == 0 && n >= 128; }

constexpr int kCsrWarps = 8;

template <class U>
DeviceBuffer<U> upload(const std::vector<U>& v) {
  return DeviceBuffer<U>(std::span<const U>(v));
}

template <class U>
const U* dev(const DeviceBuffer<U>& b) {
  return reinterpret_cast<const U*>(b.ptr());
}

}  // namespace

struct SpmmPlan::Impl {
  int32_t rows = 0, cols = 0;
  int64_t nnz = 0;
  int n = 1;
  SpmmPath asked = SpmmPath::Auto, path = SpmmPath::Brp;
  int f = 1, g = 4;
  Config config;      // as read (tuning DB or SpmmOptions::config)
  SpmmConfig typed;   // with SpmmOptions' explicit fields applied
  double auto_share = -1;  // brp_group_share, when Auto weighed it
  BrpStats stats;          // BRP path
  // The row kernels' CSR: the residual rows (BRP; row_id maps them to C's rows) or all of A (CSR).
  DeviceBuffer<int32_t> row_ptr, col_idx, row_id;
  DeviceBuffer<float> vals;
  int32_t csr_rows = 0;
  // The TC groups.
  DeviceBuffer<int32_t> window, old_col;
  DeviceBuffer<uint8_t> local_id;
  DeviceBuffer<float> group_vals;
  int32_t local_stride = 0, value_stride = 0, groups = 0;
  CUfunction tc = nullptr, scale = nullptr, rows1 = nullptr, rows4 = nullptr;
  int tc_warps = 4;
  unsigned scale_grid = 1;
  bool vec4 = false;
  std::vector<KernelInfo> kernels;
};

template <class T>
SpmmPlan Context::plan_spmm(const CsrMatrix<T>& a, int n_cols) {
  return plan_spmm(a, n_cols, SpmmOptions{});
}

template <class T>
SpmmPlan Context::plan_spmm(const CsrMatrix<T>& a, int n_cols, const SpmmOptions& opt) {
  if constexpr (!std::is_same_v<T, float>) {
    throw UsageError(
        "plan_spmm: A must be f32 (TF32 tensor cores and f32 CUDA cores; there are no f64 SpMM kernels): "
        "convert it with a.cast<float>()");
  } else {
    if (n_cols < 1 || n_cols > abi::kSpmmMaxCols)
      throw UsageError(fmt::format("plan_spmm: n_cols must be in 1 .. {}, got {}", abi::kSpmmMaxCols, n_cols));
    if (opt.f || opt.g) validate(BrpParams{opt.f.value_or(1), opt.g.value_or(1)});
    validate(a);
    make_current();
    auto p = std::make_unique<SpmmPlan::Impl>();
    // The config: SpmmOptions::config, else the tuning DB's; then the explicit options over it.
    p->config = opt.config ? *opt.config
                           : lookup_config(info_.record().fingerprint, structure_fingerprint(a),
                                           config_info<SpmmConfig>(), "", [&] { return compute_features(a); });
    p->typed = config_from_json<SpmmConfig>(p->config.params);
    p->config.params = config_to_json(p->typed);
    if (opt.f) p->typed.f = *opt.f;
    if (opt.g) p->typed.g = *opt.g;
    if (opt.path == SpmmPath::Brp) p->typed.path = "brp";
    if (opt.path == SpmmPath::CsrCudaCore) p->typed.path = "csr";
    p->typed.check();
    p->rows = a.rows;
    p->cols = a.cols;
    p->nnz = a.nnz();
    p->n = n_cols;
    p->f = p->typed.f;
    p->g = p->typed.g;
    p->asked = p->typed.path == "brp" ? SpmmPath::Brp : p->typed.path == "csr" ? SpmmPath::CsrCudaCore : SpmmPath::Auto;
    p->path = p->asked;
    if (p->asked == SpmmPath::Auto) {
      p->auto_share = brp_group_share(a, p->f, p->g);
      p->path = p->auto_share >= p->typed.min_tc_share ? SpmmPath::Brp : SpmmPath::CsrCudaCore;
    }
    p->vec4 = wants_vec4(n_cols);
    const std::string arch = info_.arch();
    auto load = [&](const codegen::SpmmKey& key) {
      auto loaded = modules_->get(codegen::make_source(key), arch);
      p->kernels.push_back(loaded.info);
      return loaded.fns;
    };
    if (p->path == SpmmPath::CsrCudaCore) {
      p->row_ptr = upload(a.row_ptr);
      p->col_idx = upload(a.col_idx);
      p->vals = upload(a.values);
      p->csr_rows = a.rows;
      // The scalar kernel always: it also serves B or C that are not 16-byte aligned.
      p->rows1 = load(codegen::SpmmKey{codegen::SpmmKernelPath::Csr, 1, 4, kCsrWarps, 1}).at(0);
      if (p->vec4) p->rows4 = load(codegen::SpmmKey{codegen::SpmmKernelPath::Csr, 1, 4, kCsrWarps, 4}).at(0);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      const BrpMatrix<float> m = csr_to_brp(a, BrpParams{p->f, p->g});
      p->stats = brp_stats(m);
      p->stats.convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      p->window = upload(m.group_window_id);
      p->old_col = upload(m.old_col_id);
      p->local_id = upload(m.local_id);
      p->group_vals = upload(m.values);
      p->local_stride = m.local_stride;
      p->value_stride = m.value_stride;
      p->groups = static_cast<int32_t>(m.groups());  // check_brp_counts kept it in int32
      p->row_ptr = upload(m.res_row_offset);
      p->col_idx = upload(m.res_col_id);
      p->vals = upload(m.res_values);
      p->row_id = upload(m.res_rows_id);
      p->csr_rows = static_cast<int32_t>(m.res_rows_id.size());
      p->tc_warps = brp_warps(n_cols);
      const auto fns = load(codegen::SpmmKey{codegen::SpmmKernelPath::Brp, p->f, p->g, p->tc_warps, 1});
      p->tc = fns.at(0);
      p->rows1 = fns.at(1);
      p->rows4 = fns.at(2);
      p->scale = fns.at(3);
      // A grid-stride pass over C: enough blocks to fill every SM, no more.
      const int64_t total = int64_t{a.rows} * n_cols;
      const int64_t threads = abi::kSpmmRowWarps * 32;
      p->scale_grid = static_cast<unsigned>(
          std::clamp<int64_t>((total + threads - 1) / threads, 1, int64_t{std::max(info_.sm_count, 1)} * 8));
    }
    return SpmmPlan(std::move(p));
  }
}

SpmmPlan::SpmmPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SpmmPlan::SpmmPlan(SpmmPlan&&) noexcept = default;
SpmmPlan& SpmmPlan::operator=(SpmmPlan&&) noexcept = default;
SpmmPlan::~SpmmPlan() = default;

void SpmmPlan::run(const DeviceBuffer<float>& b, DeviceBuffer<float>& c, const Stream& stream, float alpha,
                   float beta) const {
  const Impl& p = *impl_;
  const size_t want_b = static_cast<size_t>(p.cols) * static_cast<size_t>(p.n);
  const size_t want_c = static_cast<size_t>(p.rows) * static_cast<size_t>(p.n);
  if (b.size() != want_b || c.size() != want_c)
    throw UsageError(fmt::format("SpmmPlan::run: B has {} floats (need {} x {} = {}), C has {} (need {} x {} = {})",
                                 b.size(), p.cols, p.n, want_b, c.size(), p.rows, p.n, want_c));
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
  args.vals = dev(p.vals);
  args.row_id = p.path == SpmmPath::Brp ? dev(p.row_id) : nullptr;
  args.group_window = dev(p.window);
  args.old_col = dev(p.old_col);
  args.local_id = dev(p.local_id);
  args.group_vals = dev(p.group_vals);
  args.b = reinterpret_cast<const float*>(b);
  args.c = reinterpret_cast<float*>(c);
  args.rows = p.csr_rows;
  args.m = p.rows;
  args.n = p.n;
  args.local_stride = p.local_stride;
  args.value_stride = p.value_stride;
  args.alpha = alpha;
  args.beta = beta;
  void* params[] = {&args};
  const CUfunction rows_fn = p.vec4 && b % 16 == 0 && c % 16 == 0 ? p.rows4 : p.rows1;
  if (p.path == SpmmPath::CsrCudaCore) {
    DBS_CU(cuLaunchKernel(rows_fn, static_cast<unsigned>((int64_t{p.csr_rows} + kCsrWarps - 1) / kCsrWarps), 1, 1,
                          kCsrWarps * 32, 1, 1, 0, h, params, nullptr));
    return;
  }
  // The TC groups and the residual rows add into C, so C is scaled first (beta == 1: nothing to do).
  if (beta != 1.0f)
    DBS_CU(cuLaunchKernel(p.scale, p.scale_grid, 1, 1, abi::kSpmmRowWarps * 32, 1, 1, 0, h, params, nullptr));
  if (p.groups > 0)
    DBS_CU(cuLaunchKernel(p.tc, static_cast<unsigned>(p.groups), 1, 1, p.tc_warps * 32, 1, 1, 0, h, params, nullptr));
  if (p.csr_rows > 0)
    DBS_CU(cuLaunchKernel(rows_fn,
                          static_cast<unsigned>((int64_t{p.csr_rows} + abi::kSpmmRowWarps - 1) / abi::kSpmmRowWarps),
                          1, 1, abi::kSpmmRowWarps * 32, 1, 1, 0, h, params, nullptr));
}

int32_t SpmmPlan::rows() const { return impl_->rows; }
int32_t SpmmPlan::cols() const { return impl_->cols; }
int SpmmPlan::n_cols() const { return impl_->n; }
SpmmPath SpmmPlan::path() const { return impl_->path; }
int SpmmPlan::f() const { return impl_->f; }
int SpmmPlan::g() const { return impl_->g; }
double SpmmPlan::tc_share() const { return impl_->path == SpmmPath::Brp ? impl_->stats.tc_share : 0.0; }
const std::vector<KernelInfo>& SpmmPlan::kernels() const { return impl_->kernels; }
const Config& SpmmPlan::config() const { return impl_->config; }
const SpmmConfig& SpmmPlan::typed_config() const { return impl_->typed; }

int64_t SpmmPlan::device_bytes() const {
  const Impl& p = *impl_;
  return static_cast<int64_t>((p.row_ptr.size() + p.col_idx.size() + p.row_id.size() + p.window.size() +
                               p.old_col.size()) * 4 +
                              (p.vals.size() + p.group_vals.size()) * 4 + p.local_id.size());
}

std::string SpmmPlan::explain() const {
  const Impl& p = *impl_;
  const double th = p.typed.min_tc_share;
  std::string why = p.asked == SpmmPath::Auto
                        ? fmt::format("auto: TC share at f = {}, g = {} is {:.3f} {} min_tc_share {}", p.f, p.g,
                                      p.auto_share, p.auto_share >= th ? ">=" : "<", th)
                        : "asked for";
  std::string out = fmt::format("spmm {}x{}, {} nonzeros, n = {}: path {} ({})\n", p.rows, p.cols, p.nnz, p.n,
                                to_string(p.path), why);
  out += fmt::format("  config ({}): {}{}; used: {}\n", to_string(p.config.source), p.config.params.dump(),
                     p.config.note.empty() ? "" : " — " + p.config.note, config_to_json(p.typed).dump());
  if (p.path == SpmmPath::Brp) {
    const BrpStats& s = p.stats;
    out += fmt::format(
        "  BRP f = {}, g = {}: {} TC groups ({:.1f}% of the nonzeros, TF32 tensor cores, {} warps per group), {} "
        "residual rows ({} nonzeros, f32 CUDA cores)\n",
        p.f, p.g, s.groups, 100.0 * s.tc_share, p.tc_warps, s.residual_rows, s.residual_nnz);
    out += fmt::format(
        "  converted on the host by csr_to_brp in {:.1f} ms and uploaded (the GPU conversion is a later step); "
        "device {} bytes, {:.3f}x CSR\n",
        s.convert_ms, device_bytes(), s.bytes_csr ? double(s.bytes) / double(s.bytes_csr) : 0.0);
  } else {
    out += fmt::format("  CSR on f32 CUDA cores, a warp per row; device {} bytes\n", device_bytes());
  }
  out += fmt::format("  columns per lane: {} (float4 needs n % 4 == 0, n >= 128 and 16-byte aligned B and C)\n",
                     p.vec4 ? "4 where B and C are aligned, else 1" : "1");
  for (const KernelInfo& k : p.kernels) out += fmt::format("  kernel {} ({})\n", k.key, k.origin);
  return out;
}

template SpmmPlan Context::plan_spmm(const CsrMatrix<float>&, int);
template SpmmPlan Context::plan_spmm(const CsrMatrix<double>&, int);
template SpmmPlan Context::plan_spmm(const CsrMatrix<float>&, int, const SpmmOptions&);
template SpmmPlan Context::plan_spmm(const CsrMatrix<double>&, int, const SpmmOptions&);

}  // namespace dbsparse

#include "dbsparse/spmv.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "codegen/keys/spmv_key.hpp"
#include "dbsparse/abi/spmv.h"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/features.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/l1_carveout.hpp"
#include "runtime/gpu/device_csr_view.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/spmv/spmv_column_order.hpp"
#include "runtime/spmv/spmv_spec.hpp"
#include "runtime/spmv/spmv_strategy.hpp"

namespace dbsparse {

namespace {
// The launches gather x: each prefers the least shared carveout that keeps its occupancy, so L1
// keeps more of x (DBSPARSE_L1_CARVEOUT=max-l1; runtime/gpu/l1_carveout.hpp). Every SpMV launch
// asks for no dynamic shared memory. Returns the largest share asked for (percent), or -1 under
// the driver's policy.
template <class Launches>
int prefer_l1_most(const Launches& launches, const DeviceInfo& d) {
  int most = -1;
  for (const auto& l : launches)
    most = std::max(most, detail::prefer_l1(static_cast<CUfunction>(l.fn), static_cast<int>(l.block), 0,
                                            d.reserved_shared_per_block, d.shared_per_sm));
  return most;
}
}  // namespace

template <class T>
SpmvPlan<T> SpmvPlan<T>::build(Context& ctx, const CsrMatrix<T>& a) {
  return build(ctx, a, SpmvOptions{});
}

template <class T>
SpmvPlan<T> SpmvPlan<T>::build(Context& ctx, const CsrMatrix<T>& a, const Config& config) {
  return build(ctx, a, SpmvOptions{&config, ""});
}

namespace {
// The caller's reorder, read through SpmvConfig's own field (its choices, its UsageError naming
// the key), so the allowed values are written once.
void check_spmv_options(const SpmvOptions& options) {
  if (!options.reorder.empty()) (void)config_from_json<SpmvConfig>(nlohmann::json{{"reorder", options.reorder}});
}
}  // namespace

Config apply_spmv_options(Config looked_up, const SpmvOptions& options) {
  check_spmv_options(options);
  Config c = options.config ? *options.config : std::move(looked_up);
  if (options.reorder.empty()) return c;
  c.params["reorder"] = options.reorder;
  c.note += std::string(c.note.empty() ? "" : "; ") + "reorder " + options.reorder + " from the caller";
  return c;
}

template <class T>
SpmvPlan<T> SpmvPlan<T>::build(Context& ctx, const CsrMatrix<T>& a, const SpmvOptions& options) {
  check_spmv_options(options);  // before any pass over A
  auto fp = structure_fingerprint(a);
  Config looked_up = options.config ? Config{}
                                    : lookup_config(ctx.device().record().fingerprint, fp, config_info<SpmvConfig>(),
                                                    "", [&] { return compute_features(a); });
  return build_impl(ctx, a, apply_spmv_options(std::move(looked_up), options), std::move(fp));
}

namespace {

constexpr int kClassBins = abi::kSpmvClassBins;

// A device address as the typed pointer the ABI structs hold.
template <class P>
P* device_ptr(uint64_t p) {
  return reinterpret_cast<P*>(static_cast<uintptr_t>(p));
}

// The classifier kernel and the block size its key compiled it for.
struct ClassifyKernel {
  CUfunction fn;
  int block;
};

// The classifier's bounds for these bins: a row goes to the first bin whose bound it is within.
abi::SpmvClassifyBounds classify_bounds(const std::vector<int64_t>& max_len) {
  abi::SpmvClassifyBounds bounds{};
  for (size_t b = 0; b < max_len.size(); ++b)
    bounds.max_len[b] = static_cast<int32_t>(std::min<int64_t>(max_len[b], INT32_MAX));
  bounds.nbins = static_cast<int32_t>(max_len.size());
  return bounds;
}

// What the classifier found: the bins after folding, and the long rows (ascending).
struct Classified {
  SpmvBins bins;
  std::vector<int32_t> long_rows;
};

// The plan phase's GPU pass (host syncs are allowed here, never in run): count rows per bin, fold
// (fold_spmv_bins, on the host), then list each bin's rows into `lists` unless one bin takes every
// row.
Classified classify_rows(ClassifyKernel classify, int32_t rows, int64_t nnz, const DeviceBuffer<int32_t>& row_ptr,
                         const SpmvLayout& layout, DeviceBuffer<int32_t>& lists) {
  const size_t nbins = layout.bins.size();
  if (nbins > static_cast<size_t>(abi::kSpmvClassifyMaxBins))
    throw UsageError(
        fmt::format("spmv: {} classified bins, the classifier has room for {}", nbins, abi::kSpmvClassifyMaxBins));
  std::vector<int64_t> bounds_len(nbins);
  for (size_t b = 0; b < nbins; ++b) bounds_len[b] = layout.bins[b].max_len;
  abi::SpmvClassifyBounds bounds = classify_bounds(bounds_len);
  DeviceBuffer<abi::SpmvBinCount> counts(abi::kSpmvClassifyMaxBins);
  counts.fill_bytes(0);
  int n = rows;
  CUdeviceptr rp = row_ptr.ptr(), cp = counts.ptr(), none = 0;
  const unsigned block = static_cast<unsigned>(classify.block);
  const unsigned grid = static_cast<unsigned>((rows + block - 1) / block);
  void* count_args[] = {&n, &rp, &bounds, &cp, &none, &none};
  DBS_CU(cuLaunchKernel(classify.fn, grid, 1, 1, block, 1, 1, 0, nullptr, count_args, nullptr));
  const auto got = counts.download();  // synchronous: waits for the pass
  std::vector<SpmvBinCount> per_bin(nbins);
  for (size_t b = 0; b < nbins; ++b) per_bin[b] = {static_cast<int64_t>(got[b].rows), static_cast<int64_t>(got[b].nnz)};
  Classified c{fold_spmv_bins(layout, per_bin, nnz), {}};
  if (!c.bins.lists()) return c;
  bounds = classify_bounds(c.bins.max_len);
  std::vector<int32_t> cursor(abi::kSpmvClassifyMaxBins, 0);
  for (size_t b = 0; b < nbins; ++b) cursor[b] = static_cast<int32_t>(c.bins.off[b]);
  DeviceBuffer<int32_t> cur{std::span<const int32_t>(cursor)};
  lists = DeviceBuffer<int32_t>(static_cast<size_t>(rows));
  CUdeviceptr cu = cur.ptr(), li = lists.ptr();
  void* list_args[] = {&n, &rp, &bounds, &cp, &cu, &li};
  DBS_CU(cuLaunchKernel(classify.fn, grid, 1, 1, block, 1, 1, 0, nullptr, list_args, nullptr));
  DBS_CU(cuCtxSynchronize());
  const size_t last = nbins - 1;
  if (c.bins.rows[last] > 0) {
    std::vector<int32_t> tail(static_cast<size_t>(c.bins.rows[last]));
    DBS_CU(cuMemcpyDtoH(tail.data(), lists.ptr() + static_cast<uint64_t>(c.bins.off[last]) * 4, tail.size() * 4));
    std::sort(tail.begin(), tail.end());  // deterministic order for the chunk list
    c.long_rows = std::move(tail);
  }
  return c;
}

}  // namespace

namespace detail {

// SpmvPlan::build_impl's stages: the host decisions (make_spmv_spec, with the statistics the
// classifier and the column counts give), the device side of the plan, and its explain text.
struct SpmvPlanBuilder {
  // The column order (SpmvConfig::reorder) on the host, and A's arrays on the device in it.
  template <class T>
  static SpmvOrderChoice upload_matrix(SpmvPlan<T>& plan, const CsrMatrix<T>& a, SpmvPlanTimes& times) {
    const SpmvShape shape{a.rows, a.cols, a.nnz()};
    plan.row_ptr_ = DeviceBuffer<int32_t>(std::span<const int32_t>(a.row_ptr));
    // One count of the columns serves auto's feature and the order; its time is the order's cost.
    const auto t0 = std::chrono::steady_clock::now();
    const auto ms_since = [&] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    std::vector<int32_t> counts;
    if (spmv_needs_column_counts(plan.typed_, shape)) counts = spmv_column_counts(a.cols, a.col_idx);
    const SpmvOrderChoice order = choose_spmv_order(plan.typed_, shape, counts);
    if (order.feature) plan.reorder_ms_ = times.feature_ms = ms_since();
    if (order.by_degree && a.cols > 0) {
      const SpmvColumnOrder columns = spmv_degree_column_order(counts, a.col_idx);
      plan.reorder_ms_ = times.order_ms = ms_since();
      plan.col_idx_ = DeviceBuffer<int32_t>(std::span<const int32_t>(columns.col_idx));
      plan.col_order_ = DeviceBuffer<int32_t>(std::span<const int32_t>(columns.order));
      plan.x_order_ = DeviceBuffer<T>(static_cast<size_t>(a.cols));
    } else {
      plan.col_idx_ = DeviceBuffer<int32_t>(std::span<const int32_t>(a.col_idx));
    }
    plan.values_ = DeviceBuffer<T>(std::span<const T>(a.values));
    return order;
  }

  // The bins and the long rows: the classifier's pass for a classified layout, else one bin.
  template <class T>
  static Classified classify(Context& ctx, SpmvPlan<T>& plan, const CsrMatrix<T>& a, const SpmvLayout& layout) {
    const SpmvShape shape{a.rows, a.cols, a.nnz()};
    if (!layout.classified) {
      Classified c{unclassified_spmv_bins(layout, shape), {}};
      if (layout.bins[0].key.strategy == codegen::SpmvStrategy::LongRow) {
        c.long_rows.resize(static_cast<size_t>(a.rows));
        for (int32_t r = 0; r < a.rows; ++r) c.long_rows[r] = r;
      }
      return c;
    }
    if (a.rows == 0) return Classified{empty_spmv_bins(layout), {}};
    const auto key = codegen::spmv_classify_key();
    const auto loaded = ctx.modules().get(codegen::make_source(key), ctx.device().arch());
    return classify_rows(ClassifyKernel{loaded.entry("classify"), key.block_size}, a.rows, a.nnz(), plan.row_ptr_,
                         layout, plan.row_lists_);
  }

  // The long rows' chunks on the device, with a partial sum each.
  template <class T>
  static void upload_long_rows(SpmvPlan<T>& plan, const SpmvLongRows& l) {
    if (l.rows.empty()) return;
    plan.long_rows_ = DeviceBuffer<int32_t>(std::span<const int32_t>(l.rows));
    plan.chunk_ptr_ = DeviceBuffer<int32_t>(std::span<const int32_t>(l.chunk_ptr));
    // The plan keeps chunks as int32 words (SpmvPlan::chunks_); SpmvChunk is four of them.
    static_assert(sizeof(abi::SpmvChunk) == 4 * sizeof(int32_t));
    std::vector<int32_t> words(4 * l.chunks.size());
    std::memcpy(words.data(), l.chunks.data(), words.size() * sizeof(int32_t));
    plan.chunks_ = DeviceBuffer<int32_t>(std::span<const int32_t>(words));
    plan.partial_ = DeviceBuffer<T>(l.chunks.size());
  }

  // The spec's kernels loaded and its launches bound to them; returns the L1 line.
  template <class T>
  static std::string materialize(Context& ctx, SpmvPlan<T>& plan, const SpmvSpec& spec) {
    using Kind = typename SpmvPlan<T>::LaunchKind;
    static_assert(static_cast<int>(Kind::Gather) == static_cast<int>(SpmvLaunchKind::Gather) &&
                  static_cast<int>(Kind::Rows) == static_cast<int>(SpmvLaunchKind::Rows) &&
                  static_cast<int>(Kind::LongPartial) == static_cast<int>(SpmvLaunchKind::LongPartial) &&
                  static_cast<int>(Kind::LongFinalize) == static_cast<int>(SpmvLaunchKind::LongFinalize) &&
                  static_cast<int>(Kind::Classified) == static_cast<int>(SpmvLaunchKind::Classified));
    std::vector<detail::LoadedKernel> loaded;
    for (const auto& key : spec.kernels) {
      loaded.push_back(ctx.modules().get(codegen::make_source(key), ctx.device().arch()));
      plan.kernels_.push_back(loaded.back().info);
    }
    for (const SpmvLaunchSpec& l : spec.launches) {
      const uint64_t list = l.rows_from == SpmvRowSource::BinList
                                ? plan.row_lists_.ptr() + static_cast<uint64_t>(l.list_off) * 4
                            : l.rows_from == SpmvRowSource::LongRows ? plan.long_rows_.ptr()
                                                                     : 0;
      plan.launches_.push_back(
          {loaded[l.kernel].entry(l.entry), static_cast<Kind>(l.kind), l.grid, l.block, l.count, list});
    }
    if (!spec.fused.empty()) {
      plan.arrivals_ = DeviceBuffer<uint32_t>(static_cast<size_t>(std::max(spec.long_rows, 1)));
      plan.arrivals_.fill_bytes(0);
      plan.fused_ = spec.fused;
    }
    return spmv_l1_text(prefer_l1_most(plan.launches_, ctx.device()));
  }

  // The config's layout, or for a classified config on a small matrix its one-kernel path
  // (SpmvConfig::fill_threads), decided from A's longest row.
  template <class T>
  static SpmvLayout choose_layout(Context& ctx, const SpmvConfig& cfg, const CsrMatrix<T>& a) {
    SpmvLayout layout = choose_spmv_layout(cfg, a.rows, a.nnz(), codegen::value_type_of<T>());
    const DeviceInfo& d = ctx.device();
    const int64_t resident = int64_t{d.sm_count} * d.threads_per_sm;
    // The longest row is only looked for where the path can be taken at all.
    if (!layout.classified || int64_t{a.rows} * 2 > spmv_fill_threads(cfg, resident)) return layout;
    int64_t max_len = 0;
    for (int32_t r = 0; r < a.rows; ++r) max_len = std::max<int64_t>(max_len, a.row_ptr[r + 1] - a.row_ptr[r]);
    const int lanes = spmv_fill_lanes(cfg, a.rows, a.nnz(), max_len, codegen::value_type_of<T>(), resident);
    if (lanes == 0) return layout;
    return spmv_fill_layout(cfg, codegen::value_type_of<T>(), lanes, spmv_fill_threads(cfg, resident), max_len);
  }

  template <class T>
  static SpmvPlan<T> build(Context& ctx, const CsrMatrix<T>& a, const Config& config, std::string fingerprint) {
    SpmvPlan<T> plan;
    plan.rows_ = a.rows;
    plan.cols_ = a.cols;
    plan.nnz_ = a.nnz();
    plan.matrix_fp_ = std::move(fingerprint);
    plan.config_ = config;
    // Keys a config leaves out take SpmvConfig's defaults; wrong kinds, values out of range and
    // unknown keys are UsageErrors naming the key.
    plan.typed_ = config_from_json<SpmvConfig>(config.params);
    plan.config_.params = config_to_json(plan.typed_);
    const SpmvShape shape{a.rows, a.cols, a.nnz()};
    // Problem -> keys: the config decides the variants; the keys are all the JIT sees.
    const SpmvLayout layout = choose_layout(ctx, plan.typed_, a);
    SpmvPlanTimes times;
    const SpmvOrderChoice order = upload_matrix(plan, a, times);
    Classified c = classify(ctx, plan, a, layout);
    const SpmvLongRows long_rows = split_spmv_long_rows(a.row_ptr, std::move(c.long_rows), layout.longrow_chunk);
    upload_long_rows(plan, long_rows);
    const SpmvSpec spec =
        make_spmv_spec(plan.typed_, shape, layout, order, std::move(c.bins),
                       static_cast<int32_t>(long_rows.rows.size()), static_cast<int32_t>(long_rows.chunks.size()));
    const std::string l1 = materialize(ctx, plan, spec);
    plan.layout_text_ = explain_spmv_spec(spec, times) + l1;
    return plan;
  }
};

}  // namespace detail

template <class T>
SpmvPlan<T> SpmvPlan<T>::build_impl(Context& ctx, const CsrMatrix<T>& a, const Config& config,
                                    std::string fingerprint) {
  ctx.make_current();
  require_device_bytes(
      fmt::format("plan_spmv of a {} x {} matrix with {} nonzeros (A, at least)", a.rows, a.cols, a.nnz()),
      csr_device_bytes(a.rows, a.nnz(), sizeof(T)));
  return detail::SpmvPlanBuilder::build(ctx, a, config, std::move(fingerprint));
}
template <class T>
SpmvPlan<T> SpmvPlan<T>::build(Context& ctx, const DeviceCsrView64<T>& a, const Config* config) {
  using codegen::SpmvStrategy;
  ctx.make_current();
  validate(a, "plan_spmv (64-bit offsets)");
  // The kernels index x and y by the caller's arrays: checked first.
  detail::check_device_csr(ctx, "plan_spmv (64-bit offsets)", "A", detail::arrays_of(a), false);
  SpmvPlan<T> plan;
  plan.rows_ = a.rows;
  plan.cols_ = a.cols;
  plan.nnz_ = a.nnz;
  plan.matrix_fp_ = "device view (not fingerprinted)";
  plan.config_ = config ? *config : Config{"spmv", config_to_json(SpmvConfig{}), ConfigSource::Default, "device view"};
  plan.typed_ = config_from_json<SpmvConfig>(plan.config_.params);
  plan.config_.params = config_to_json(plan.typed_);
  SpmvConfig one = plan.typed_;
  if (one.strategy == "longrow")
    throw UsageError("plan_spmv (64-bit offsets): strategy longrow is not available; scalar, vector, block or uniform");
  // auto takes none here: the column counts would need A on the host.
  if (one.reorder == "degree")
    throw UsageError("plan_spmv (64-bit offsets): reorder degree needs A on the host (a CsrMatrix)");
  const bool took_uniform = one.strategy == "classified";
  if (took_uniform) one.strategy = "uniform";
  codegen::SpmvKey key = choose_spmv_key(one, a.rows, a.nnz, codegen::value_type_of<T>());
  if (key.strategy == SpmvStrategy::LongRow) key = codegen::SpmvKey{key.value, SpmvStrategy::Block, one.block_size};
  key.offsets64 = true;
  auto loaded = ctx.modules().get(codegen::make_source(key), ctx.device().arch());
  plan.kernels_.push_back(loaded.info);
  plan.view_row_ptr_ = reinterpret_cast<uintptr_t>(a.row_ptr);
  plan.view_col_idx_ = reinterpret_cast<uintptr_t>(a.col_idx);
  plan.view_values_ = reinterpret_cast<uintptr_t>(a.values);
  if (a.rows > 0)
    plan.launches_.push_back({loaded.entry("rows"), SpmvPlan<T>::LaunchKind::Rows,
                              static_cast<unsigned>(spmv_grid(key, a.rows)), static_cast<unsigned>(key.block_size),
                              a.rows, 0});
  plan.layout_text_ =
      fmt::format("  64-bit row offsets, the caller's device arrays: one launch of {} for every row{}\n",
                  key.to_string(),
                  std::string(took_uniform ? " (classified takes the uniform choice here)" : "") +
                      (one.window_max_len > 0 ? " (window_max_len not applied)" : "")) +
      spmv_l1_text(prefer_l1_most(plan.launches_, ctx.device()));
  return plan;
}

template <class T>
void SpmvPlan<T>::run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream, T alpha, T beta) const {
  if (x.size() != static_cast<size_t>(cols_) || y.size() != static_cast<size_t>(rows_))
    throw UsageError(fmt::format("SpmvPlan::run: x has {} elements (need {}), y has {} (need {})", x.size(), cols_,
                                 y.size(), rows_));
  run(x.ptr(), y.ptr(), stream.handle(), alpha, beta);
}

template <class T>
void SpmvPlan<T>::run(uint64_t x, uint64_t y, void* stream, T alpha, T beta) const {
  CUdeviceptr rp = view_row_ptr_ ? view_row_ptr_ : row_ptr_.ptr(), ci = view_row_ptr_ ? view_col_idx_ : col_idx_.ptr(),
              va = view_row_ptr_ ? view_values_ : values_.ptr();
  CUdeviceptr xp = x, yp = y, ch = chunks_.ptr(), pa = partial_.ptr(), cptr = chunk_ptr_.ptr();
  CUdeviceptr order = col_order_.ptr(), xo = x_order_.ptr();
  for (const Launch& l : launches_) {
    if (l.kind == LaunchKind::Gather) {  // first: the row kernels below read x in the column order
      int32_t n = l.count;
      void* gather_args[] = {&n, &order, &xp, &xo};
      DBS_CU(cuLaunchKernel(static_cast<CUfunction>(l.fn), l.grid, 1, 1, l.block, 1, 1, 0,
                            static_cast<CUstream>(stream), gather_args, nullptr));
      xp = xo;
      continue;
    }
    int32_t count = l.count;
    CUdeviceptr list = l.row_list;
    abi::SpmvClassifiedArgs<T> fused{device_ptr<const int32_t>(rp),
                                     device_ptr<const int32_t>(ci),
                                     device_ptr<const T>(va),
                                     device_ptr<const T>(xp),
                                     device_ptr<T>(yp),
                                     device_ptr<const int32_t>(row_lists_.ptr()),
                                     device_ptr<const abi::SpmvChunk>(ch),
                                     device_ptr<const int32_t>(cptr),
                                     device_ptr<T>(pa),
                                     device_ptr<uint32_t>(arrivals_.ptr()),
                                     {},
                                     {},
                                     {},
                                     alpha,
                                     beta};
    if (l.kind == LaunchKind::Classified)
      for (int k = 0; k < kClassBins; ++k)
        fused.list_off[k] = fused_[k], fused.count[k] = fused_[kClassBins + k],
        fused.block_end[k] = fused_[2 * kClassBins + k];
    void* rows_args[] = {&count, &list, &rp, &ci, &va, &xp, &yp, &alpha, &beta};
    void* partial_args[] = {&count, &ch, &ci, &va, &xp, &pa};
    void* finalize_args[] = {&count, &list, &cptr, &pa, &yp, &alpha, &beta};
    void* fused_args[] = {&fused};
    void** args = l.kind == LaunchKind::Rows          ? rows_args
                  : l.kind == LaunchKind::LongPartial ? partial_args
                  : l.kind == LaunchKind::Classified  ? fused_args
                                                      : finalize_args;
    DBS_CU(cuLaunchKernel(static_cast<CUfunction>(l.fn), l.grid, 1, 1, l.block, 1, 1, 0, static_cast<CUstream>(stream),
                          args, nullptr));
  }
}

template <class T>
std::string SpmvPlan<T>::explain() const {
  std::string keys;
  for (const auto& k : kernels_)
    keys += fmt::format("  kernel: {} (binary from {}: {:.2f} ms; module load {:.2f} ms)\n", k.key, k.origin,
                        k.acquire_ms, k.load_ms);
  return fmt::format("spmv plan: {} x {}, nnz {}\n  matrix fingerprint: {}\n  config ({}): {}{}\n{}{}", rows_, cols_,
                     nnz_, matrix_fp_, to_string(config_.source), config_.params.dump(),
                     config_.note.empty() ? "" : "  [" + config_.note + "]", layout_text_, keys);
}

template class SpmvPlan<float>;
template class SpmvPlan<double>;

}  // namespace dbsparse

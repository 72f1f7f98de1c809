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
#include "runtime/spmv/spmv_strategy.hpp"

namespace dbsparse {

namespace {
// The launches gather x: each prefers the least shared carveout that keeps its occupancy, so L1
// keeps more of x (DBSPARSE_L1_CARVEOUT=max-l1; runtime/gpu/l1_carveout.hpp). Every SpMV launch
// asks for no dynamic shared memory. Returns the explain line, or nothing under the driver policy.
template <class Launches>
std::string prefer_l1_text(const Launches& launches, const DeviceInfo& d) {
  int most = -1;
  for (const auto& l : launches)
    most = std::max(most, detail::prefer_l1(static_cast<CUfunction>(l.fn), static_cast<int>(l.block), 0,
                                            d.reserved_shared_per_block, d.shared_per_sm));
  return most < 0 ? std::string()
                  : fmt::format(
                        "  L1: each launch prefers the least shared carveout that keeps its occupancy "
                        "(DBSPARSE_L1_CARVEOUT=max-l1), at most {}% of the SM's shared memory\n",
                        most);
}
}  // namespace

template <class T>
SpmvPlan<T> Context::plan_spmv(const CsrMatrix<T>& a) {
  return plan_spmv(a, SpmvOptions{});
}

template <class T>
SpmvPlan<T> Context::plan_spmv(const CsrMatrix<T>& a, const Config& config) {
  return plan_spmv(a, SpmvOptions{&config, ""});
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
SpmvPlan<T> Context::plan_spmv(const CsrMatrix<T>& a, const SpmvOptions& options) {
  check_spmv_options(options);  // before any pass over A
  auto fp = structure_fingerprint(a);
  Config looked_up = options.config ? Config{}
                                    : lookup_config(info_.record().fingerprint, fp, config_info<SpmvConfig>(), "",
                                                    [&] { return compute_features(a); });
  return build_spmv(a, apply_spmv_options(std::move(looked_up), options), std::move(fp));
}

namespace {

constexpr int kClassBins = abi::kSpmvClassBins;

// A device address as the typed pointer the ABI structs hold.
template <class P>
P* device_ptr(uint64_t p) {
  return reinterpret_cast<P*>(static_cast<uintptr_t>(p));
}

// Chunks of at most `chunk` entries for each listed row (slot: its index in `rows`); a row with
// no entries gets one empty chunk, so y = beta*y is still written.
void build_chunks(const std::vector<int32_t>& row_ptr, const std::vector<int32_t>& rows, int64_t chunk,
                  std::vector<abi::SpmvChunk>& chunks, std::vector<int32_t>& chunk_ptr) {
  chunk_ptr.assign(1, 0);
  for (size_t s = 0; s < rows.size(); ++s) {
    const int32_t r = rows[s], first = row_ptr[r], end = row_ptr[r + 1];
    int64_t j = first;
    do {
      const int64_t e = std::min<int64_t>(end, j + chunk);
      chunks.push_back({r, static_cast<int32_t>(j), static_cast<int32_t>(e), static_cast<int32_t>(s)});
      j = e;
    } while (j < end);
    chunk_ptr.push_back(static_cast<int32_t>(chunks.size()));
  }
  if (chunks.size() > static_cast<size_t>(INT32_MAX)) throw UsageError("spmv: too many long-row chunks");
}

// What the classifier found: rows and nonzeros per bin after folding, where each bin's rows start
// in the row lists (-1: no lists, every row in one bin), and the long rows themselves.
struct Classified {
  std::vector<int64_t> rows, nnz, off, max_len;
  std::vector<int32_t> long_rows;
};

// The classifier kernel and the block size its key compiled it for.
struct ClassifyKernel {
  CUfunction fn;
  int block;
};

// The plan phase's GPU pass (host syncs are allowed here, never in run): count rows per bin,
// fold thin bins, then list each bin's rows into `lists` unless one bin takes every row.

template <class T>
Classified classify_rows(ClassifyKernel classify, const CsrMatrix<T>& a, const DeviceBuffer<int32_t>& row_ptr,
                         const SpmvLayout& layout, DeviceBuffer<int32_t>& lists) {
  const size_t nbins = layout.bins.size();
  Classified c{std::vector<int64_t>(nbins, 0),
               std::vector<int64_t>(nbins, 0),
               std::vector<int64_t>(nbins, -1),
               std::vector<int64_t>(nbins),
               {}};
  for (size_t b = 0; b < nbins; ++b) c.max_len[b] = layout.bins[b].max_len;
  if (nbins > static_cast<size_t>(abi::kSpmvClassifyMaxBins))
    throw UsageError(
        fmt::format("spmv: {} classified bins, the classifier has room for {}", nbins, abi::kSpmvClassifyMaxBins));
  abi::SpmvClassifyBounds bounds{};
  auto set_bounds = [&] {
    for (size_t b = 0; b < nbins; ++b)
      bounds.max_len[b] = static_cast<int32_t>(std::min<int64_t>(c.max_len[b], INT32_MAX));
    bounds.nbins = static_cast<int32_t>(nbins);
  };
  set_bounds();
  DeviceBuffer<abi::SpmvBinCount> counts(abi::kSpmvClassifyMaxBins);
  counts.fill_bytes(0);
  int rows = a.rows;
  CUdeviceptr rp = row_ptr.ptr(), cp = counts.ptr(), none = 0;
  const unsigned block = static_cast<unsigned>(classify.block);
  const unsigned grid = static_cast<unsigned>((a.rows + block - 1) / block);
  void* count_args[] = {&rows, &rp, &bounds, &cp, &none, &none};
  DBS_CU(cuLaunchKernel(classify.fn, grid, 1, 1, block, 1, 1, 0, nullptr, count_args, nullptr));
  auto got = counts.download();  // synchronous: waits for the pass
  for (size_t b = 0; b < nbins; ++b)
    c.rows[b] = static_cast<int64_t>(got[b].rows), c.nnz[b] = static_cast<int64_t>(got[b].nnz);
  // Fold thin row-kernel bins (not block, not long rows) into the next wider one.
  // Bins a window takes (layout.window) stay as they are: their rows run from no list, and a fold
  // would move some into a listed bin above the window, to run twice.
  for (size_t b = 0; b + 2 < nbins; ++b) {
    if (c.rows[b] == 0 || layout.in_window(b) ||
        static_cast<double>(c.nnz[b]) >= layout.fold_share * static_cast<double>(a.nnz()))
      continue;
    c.rows[b + 1] += c.rows[b];
    c.nnz[b + 1] += c.nnz[b];
    c.rows[b] = c.nnz[b] = 0;
    c.max_len[b] = b ? c.max_len[b - 1] : -1;
  }
  const size_t last = nbins - 1;
  // One row kernel over every row: no lists. Not with a window, which is asked for to serve the
  // short rows itself (a matrix of one row length compares the two ways this way).
  if (layout.window == 0 && std::count_if(c.rows.begin(), c.rows.end(), [](int64_t r) { return r > 0; }) == 1 &&
      c.rows[last] == 0)
    return c;
  set_bounds();
  std::vector<int32_t> cursor(abi::kSpmvClassifyMaxBins, 0);
  for (int64_t b = 0, off = 0; b < static_cast<int64_t>(nbins); off += c.rows[b], ++b)
    c.off[b] = off, cursor[b] = static_cast<int32_t>(off);
  DeviceBuffer<int32_t> cur{std::span<const int32_t>(cursor)};
  lists = DeviceBuffer<int32_t>(static_cast<size_t>(a.rows));
  CUdeviceptr cu = cur.ptr(), li = lists.ptr();
  void* list_args[] = {&rows, &rp, &bounds, &cp, &cu, &li};
  DBS_CU(cuLaunchKernel(classify.fn, grid, 1, 1, block, 1, 1, 0, nullptr, list_args, nullptr));
  DBS_CU(cuCtxSynchronize());
  if (c.rows[last] > 0) {
    std::vector<int32_t> tail(static_cast<size_t>(c.rows[last]));
    DBS_CU(cuMemcpyDtoH(tail.data(), lists.ptr() + static_cast<uint64_t>(c.off[last]) * 4, tail.size() * 4));
    std::sort(tail.begin(), tail.end());  // deterministic order for the chunk list
    c.long_rows = std::move(tail);
  }
  return c;
}

}  // namespace

template <class T>
SpmvPlan<T> Context::build_spmv(const CsrMatrix<T>& a, const Config& config, std::string fingerprint) {
  using codegen::SpmvStrategy;
  using Kind = typename SpmvPlan<T>::LaunchKind;
  make_current();
  require_device_bytes(
      fmt::format("plan_spmv of a {} x {} matrix with {} nonzeros (A, at least)", a.rows, a.cols, a.nnz()),
      csr_device_bytes(a.rows, a.nnz(), sizeof(T)));
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
  // Problem -> keys: the config decides the variants; the keys are all the JIT sees.
  const SpmvLayout layout = choose_spmv_layout(plan.typed_, a.rows, a.nnz(), codegen::value_type_of<T>());
  plan.row_ptr_ = DeviceBuffer<int32_t>(std::span<const int32_t>(a.row_ptr));
  const size_t nbins = layout.bins.size();
  auto get = [&](const codegen::SpmvKey& key) {
    auto loaded = modules_->get(codegen::make_source(key), info_.arch());
    plan.kernels_.push_back(loaded.info);
    return loaded;
  };
  std::string order_text;
  bool by_degree = plan.typed_.reorder == "degree";
  // One count of the columns serves auto's feature and the order; its time is the order's cost.
  const auto t0 = std::chrono::steady_clock::now();
  const auto ms_since = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<int32_t> counts;
  // auto's feature only past reorder_min_cols (a short x sits in L1 whatever its order; the feature
  // costs a pass over A's entries) and with at least 4 entries a column: the gather moves 12 bytes
  // a column each call (f32) against 8 an entry, so a sparser A cannot win back its own gather
  // (and a wide A with few entries never counts its columns on the host).
  const bool feature =
      plan.typed_.reorder == "auto" && a.cols >= plan.typed_.reorder_min_cols && a.nnz() >= 4 * int64_t{a.cols};
  if ((by_degree || feature) && a.cols > 0) counts = spmv_column_counts(a.cols, a.col_idx);
  if (plan.typed_.reorder == "auto") {
    const double share = feature ? top_count_shares(counts, a.nnz(), {plan.typed_.reorder_hub_columns}).front() : 0.0;
    by_degree = feature && share >= plan.typed_.reorder_min_hub_share;
    if (feature) plan.reorder_ms_ = ms_since();  // one reading: the explain line prints this value
    order_text =
        feature ? fmt::format(
                      "  reorder auto: the {} most frequent columns hold {:.1f}% of the entries (degree from "
                      "{:.1f}%), {} columns (degree from {}): {} ({:.1f} ms on the host)\n",
                      plan.typed_.reorder_hub_columns, 100 * share, 100 * plan.typed_.reorder_min_hub_share, a.cols,
                      plan.typed_.reorder_min_cols, by_degree ? "degree" : "none", plan.reorder_ms_)
                : fmt::format(
                      "  reorder auto: {} columns (degree from {}), {:.1f} entries a column (degree from 4): none\n",
                      a.cols, plan.typed_.reorder_min_cols, a.cols > 0 ? static_cast<double>(a.nnz()) / a.cols : 0.0);
  }
  if (by_degree && a.cols > 0) {
    const SpmvColumnOrder order = spmv_degree_column_order(counts, a.col_idx);
    plan.reorder_ms_ = ms_since();
    plan.col_idx_ = DeviceBuffer<int32_t>(std::span<const int32_t>(order.col_idx));
    plan.col_order_ = DeviceBuffer<int32_t>(std::span<const int32_t>(order.order));
    plan.x_order_ = DeviceBuffer<T>(static_cast<size_t>(a.cols));
    const codegen::SpmvKey gather{codegen::value_type_of<T>(), SpmvStrategy::Gather, 256};
    auto loaded = get(gather);
    plan.launches_.push_back(
        {loaded.fns.at(0), Kind::Gather, static_cast<unsigned>((int64_t{a.cols} + 255) / 256), 256, a.cols, 0});
    order_text += fmt::format(
        "  columns in degree order (built in {:.1f} ms on the host): x gathered into that order by {} each call, "
        "{} bytes read and written more a call; A, x and y in the user's order\n",
        plan.reorder_ms_, gather.to_string(), int64_t{a.cols} * (4 + 2 * static_cast<int64_t>(sizeof(T))));
  } else {
    plan.col_idx_ = DeviceBuffer<int32_t>(std::span<const int32_t>(a.col_idx));
  }
  plan.values_ = DeviceBuffer<T>(std::span<const T>(a.values));

  Classified c;
  if (!layout.classified) {
    c = Classified{{a.rows}, {a.nnz()}, {-1}, {layout.bins[0].max_len}, {}};
    if (layout.bins[0].key.strategy == SpmvStrategy::LongRow) {
      c.long_rows.resize(static_cast<size_t>(a.rows));
      for (int32_t r = 0; r < a.rows; ++r) c.long_rows[r] = r;
    }
  } else if (a.rows > 0) {
    const auto key = codegen::spmv_classify_key();
    auto classify = modules_->get(codegen::make_source(key), info_.arch());
    c = classify_rows(ClassifyKernel{classify.fns.at(0), key.block_size}, a, plan.row_ptr_, layout, plan.row_lists_);
  } else {
    c = Classified{std::vector<int64_t>(nbins, 0),
                   std::vector<int64_t>(nbins, 0),
                   std::vector<int64_t>(nbins, -1),
                   std::vector<int64_t>(nbins, 0),
                   {}};
  }

  std::vector<abi::SpmvChunk> chunks;
  std::vector<int32_t> chunk_ptr;
  if (!c.long_rows.empty()) {
    build_chunks(a.row_ptr, c.long_rows, layout.longrow_chunk, chunks, chunk_ptr);
    plan.long_rows_ = DeviceBuffer<int32_t>(std::span<const int32_t>(c.long_rows));
    plan.chunk_ptr_ = DeviceBuffer<int32_t>(std::span<const int32_t>(chunk_ptr));
    // The plan keeps chunks as int32 words (SpmvPlan::chunks_); SpmvChunk is four of them.
    static_assert(sizeof(abi::SpmvChunk) == 4 * sizeof(int32_t));
    std::vector<int32_t> words(4 * chunks.size());
    std::memcpy(words.data(), chunks.data(), words.size() * sizeof(int32_t));
    plan.chunks_ = DeviceBuffer<int32_t>(std::span<const int32_t>(words));
    plan.partial_ = DeviceBuffer<T>(chunks.size());
  }
  const auto nchunks = static_cast<int32_t>(chunks.size());
  const auto nlong = static_cast<int32_t>(c.long_rows.size());

  std::string text;
  if (layout.classified)
    for (size_t b = 0; b < nbins; ++b)
      if (c.rows[b] > 0)
        text += fmt::format("  bin {} (rows of length <= {}): {} rows, {} nonzeros{}\n", b,
                            b + 1 == nbins ? std::string("any") : std::to_string(c.max_len[b]), c.rows[b], c.nnz[b],
                            b + 1 == nbins ? fmt::format(", {} chunks of <= {}", nchunks, layout.longrow_chunk) : "");
  const bool lists = c.off[0] >= 0;
  if (layout.classified && lists && layout.fuse_bins) {
    // Every bin in one launch. Grid order: long-row chunks, block rows, then the vector and scalar
    // bins (heavy thread blocks start first).
    auto loaded = get(layout.fused_key);
    plan.arrivals_ = DeviceBuffer<uint32_t>(static_cast<size_t>(std::max(nlong, 1)));
    plan.arrivals_.fill_bytes(0);
    if (nbins != kClassBins) throw UsageError("spmv: the one-launch kernel expects 7 classified bins");
    plan.fused_.assign(3 * kClassBins, 0);
    int64_t end = 0, window_rows = 0;
    const size_t long_bin = abi::kSpmvLongRowBin, block_bin = abi::kSpmvBlockBin;
    for (int slot = 0; slot < kClassBins; ++slot) {
      const size_t b = long_bin - static_cast<size_t>(slot);
      const auto& key = layout.bins[b].key;
      // A window's bins launch nothing from their lists; the scalar bin's blocks take every row
      // instead, 32 a warp, and serve those no longer than the window.
      const bool windowed = layout.in_window(b);
      if (windowed) window_rows += c.rows[b];
      const int64_t rows_b = windowed ? (b == size_t{abi::kSpmvScalarBin} ? int64_t{a.rows} : 0) : c.rows[b];
      const int64_t blocks = b == long_bin ? nchunks : b == block_bin ? rows_b : spmv_grid(key, rows_b);
      end += blocks;
      plan.fused_[b] = static_cast<int32_t>(c.off[b]);
      plan.fused_[kClassBins + b] = static_cast<int32_t>(b == long_bin ? nchunks : rows_b);
      plan.fused_[2 * kClassBins + slot] = static_cast<int32_t>(end);
    }
    if (layout.window > 0)
      text += fmt::format(
          "  window: the {} rows of length <= {} in memory order, 32 a warp, in the scalar bin's {} "
          "thread blocks\n",
          window_rows, layout.window, spmv_grid(layout.bins[0].key, a.rows));
    if (end > INT32_MAX) throw UsageError("spmv: classified grid past 2^31 blocks");
    plan.launches_.push_back({loaded.fns.at(0), Kind::Classified, static_cast<unsigned>(end),
                              static_cast<unsigned>(layout.fused_key.block_size), 0, 0});
    text += fmt::format("  -> one launch of {} ({} thread blocks)\n", layout.fused_key.to_string(), end);
  } else {
    for (size_t b = 0; b < nbins; ++b) {
      const auto& key = layout.bins[b].key;
      if (c.rows[b] == 0 || key.strategy == SpmvStrategy::LongRow) continue;
      auto loaded = get(key);
      const uint64_t list = lists ? plan.row_lists_.ptr() + static_cast<uint64_t>(c.off[b]) * 4 : 0;
      plan.launches_.push_back({loaded.fns.at(0), Kind::Rows, static_cast<unsigned>(spmv_grid(key, c.rows[b])),
                                static_cast<unsigned>(key.block_size), static_cast<int32_t>(c.rows[b]), list});
      if (layout.classified) text += fmt::format("  -> bin {}: {}\n", b, key.to_string());
    }
    if (nlong > 0) {
      const auto& key = layout.bins.back().key;
      auto loaded = get(key);
      plan.launches_.push_back({loaded.fns.at(0), Kind::LongPartial, static_cast<unsigned>(nchunks),
                                static_cast<unsigned>(key.block_size), nchunks, 0});
      plan.launches_.push_back({loaded.fns.at(1), Kind::LongFinalize, static_cast<unsigned>((nlong + 255) / 256), 256,
                                nlong, plan.long_rows_.ptr()});
      if (layout.classified) text += fmt::format("  -> long rows: {} + finalize\n", key.to_string());
    }
  }
  if (plan.kernels_.empty()) get(layout.bins[0].key);        // 0 x n: nothing launches, but report the kernel
  if (plan.typed_.window_max_len > 0 && layout.window == 0)  // asked for, yet not in the kernel: say why
    text += fmt::format("  window_max_len {} not applied: {}\n", plan.typed_.window_max_len,
                        !layout.classified  ? "the strategy is not classified"
                        : !layout.fuse_bins ? "fuse_bins 0 (one launch per bin)"
                                            : fmt::format("below the scalar bin's bound, {}", layout.bins[0].max_len));
  plan.layout_text_ =
      order_text +
      (layout.classified ? fmt::format("  classified, {} launch(es) per run:\n{}", plan.launches_.size(), text)
                         : text) +
      prefer_l1_text(plan.launches_, info_);
  return plan;
}

template <class T>
SpmvPlan<T> Context::plan_spmv(const DeviceCsrView64<T>& a, const Config* config) {
  using codegen::SpmvStrategy;
  make_current();
  validate(a, "plan_spmv (64-bit offsets)");
  // The kernels index x and y by the caller's arrays: checked first.
  detail::check_device_csr(*this, "plan_spmv (64-bit offsets)", "A", detail::arrays_of(a), false);
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
  auto loaded = modules_->get(codegen::make_source(key), info_.arch());
  plan.kernels_.push_back(loaded.info);
  plan.view_row_ptr_ = reinterpret_cast<uintptr_t>(a.row_ptr);
  plan.view_col_idx_ = reinterpret_cast<uintptr_t>(a.col_idx);
  plan.view_values_ = reinterpret_cast<uintptr_t>(a.values);
  if (a.rows > 0)
    plan.launches_.push_back({loaded.fns.at(0), SpmvPlan<T>::LaunchKind::Rows,
                              static_cast<unsigned>(spmv_grid(key, a.rows)), static_cast<unsigned>(key.block_size),
                              a.rows, 0});
  plan.layout_text_ =
      fmt::format("  64-bit row offsets, the caller's device arrays: one launch of {} for every row{}\n",
                  key.to_string(),
                  std::string(took_uniform ? " (classified takes the uniform choice here)" : "") +
                      (one.window_max_len > 0 ? " (window_max_len not applied)" : "")) +
      prefer_l1_text(plan.launches_, info_);
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
template SpmvPlan<float> Context::plan_spmv(const CsrMatrix<float>&);
template SpmvPlan<double> Context::plan_spmv(const CsrMatrix<double>&);
template SpmvPlan<float> Context::plan_spmv(const CsrMatrix<float>&, const Config&);
template SpmvPlan<double> Context::plan_spmv(const CsrMatrix<double>&, const Config&);
template SpmvPlan<float> Context::plan_spmv(const CsrMatrix<float>&, const SpmvOptions&);
template SpmvPlan<double> Context::plan_spmv(const CsrMatrix<double>&, const SpmvOptions&);
template SpmvPlan<float> Context::plan_spmv(const DeviceCsrView64<float>&, const Config*);
template SpmvPlan<double> Context::plan_spmv(const DeviceCsrView64<double>&, const Config*);

}  // namespace dbsparse

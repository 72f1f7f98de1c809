#include "runtime/spmv/spmv_spec.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "runtime/spmv/spmv_column_order.hpp"

namespace dbsparse {
namespace {

constexpr int kClassBins = abi::kSpmvClassBins;
constexpr unsigned kGatherBlock = 256;    // spmv.gather.<type>.b256, one column a thread
constexpr unsigned kFinalizeBlock = 256;  // spmv_longrow_finalize: one long row a thread

}  // namespace

bool spmv_needs_column_counts(const SpmvConfig& cfg, const SpmvShape& a) {
  const bool feature = cfg.reorder == "auto" && a.cols >= cfg.reorder_min_cols && a.nnz >= 4 * int64_t{a.cols};
  return (cfg.reorder == "degree" || feature) && a.cols > 0;
}

SpmvOrderChoice choose_spmv_order(const SpmvConfig& cfg, const SpmvShape& a, const std::vector<int32_t>& counts) {
  SpmvOrderChoice o;
  o.by_degree = cfg.reorder == "degree";
  if (cfg.reorder != "auto") return o;
  o.automatic = true;
  o.feature = a.cols >= cfg.reorder_min_cols && a.nnz >= 4 * int64_t{a.cols};
  o.hub_share = o.feature ? top_count_shares(counts, a.nnz, {cfg.reorder_hub_columns}).front() : 0.0;
  o.by_degree = o.feature && o.hub_share >= cfg.reorder_min_hub_share;
  return o;
}

SpmvBins fold_spmv_bins(const SpmvLayout& layout, const std::vector<SpmvBinCount>& counts, int64_t nnz) {
  const size_t nbins = layout.bins.size();
  if (counts.size() != nbins) throw UsageError(fmt::format("spmv: {} bin counts for {} bins", counts.size(), nbins));
  SpmvBins c{std::vector<int64_t>(nbins), std::vector<int64_t>(nbins), std::vector<int64_t>(nbins, -1),
             std::vector<int64_t>(nbins)};
  for (size_t b = 0; b < nbins; ++b)
    c.rows[b] = counts[b].rows, c.nnz[b] = counts[b].nnz, c.max_len[b] = layout.bins[b].max_len;
  // Bins a window takes (layout.window) stay as they are: their rows run from no list, and a fold
  // would move some into a listed bin above the window, to run twice.
  for (size_t b = 0; b + 2 < nbins; ++b) {
    if (c.rows[b] == 0 || layout.in_window(b) ||
        static_cast<double>(c.nnz[b]) >= layout.fold_share * static_cast<double>(nnz))
      continue;
    c.rows[b + 1] += c.rows[b];
    c.nnz[b + 1] += c.nnz[b];
    c.rows[b] = c.nnz[b] = 0;
    c.max_len[b] = b ? c.max_len[b - 1] : -1;
  }
  // One row kernel over every row: no lists. Not with a window, which is asked for to serve the
  // short rows itself (a matrix of one row length compares the two ways this way).
  const size_t last = nbins - 1;
  if (layout.window == 0 && std::count_if(c.rows.begin(), c.rows.end(), [](int64_t r) { return r > 0; }) == 1 &&
      c.rows[last] == 0)
    return c;
  for (int64_t b = 0, off = 0; b < static_cast<int64_t>(nbins); off += c.rows[b], ++b) c.off[b] = off;
  return c;
}

SpmvBins unclassified_spmv_bins(const SpmvLayout& layout, const SpmvShape& a) {
  return SpmvBins{{a.rows}, {a.nnz}, {-1}, {layout.bins[0].max_len}};
}

SpmvBins empty_spmv_bins(const SpmvLayout& layout) {
  const size_t n = layout.bins.size();
  return SpmvBins{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), std::vector<int64_t>(n, -1),
                  std::vector<int64_t>(n, 0)};
}

SpmvLongRows split_spmv_long_rows(const std::vector<int32_t>& row_ptr, std::vector<int32_t> rows, int64_t chunk) {
  SpmvLongRows out;
  out.rows = std::move(rows);
  out.chunk_ptr.assign(1, 0);
  for (size_t s = 0; s < out.rows.size(); ++s) {
    const int32_t r = out.rows[s], first = row_ptr[r], end = row_ptr[r + 1];
    int64_t j = first;
    do {
      const int64_t e = std::min<int64_t>(end, j + chunk);
      out.chunks.push_back({r, static_cast<int32_t>(j), static_cast<int32_t>(e), static_cast<int32_t>(s)});
      j = e;
    } while (j < end);
    out.chunk_ptr.push_back(static_cast<int32_t>(out.chunks.size()));
  }
  if (out.chunks.size() > static_cast<size_t>(INT32_MAX)) throw UsageError("spmv: too many long-row chunks");
  return out;
}

namespace {

// The index of `key` in the spec's kernels, added at the end on its first use.
size_t kernel_index(SpmvSpec& s, const codegen::SpmvKey& key) {
  s.kernels.push_back(key);
  return s.kernels.size() - 1;
}

// Every bin in one launch. Grid order: long-row chunks, block rows, then the vector and scalar
// bins (heavy thread blocks start first).
void add_fused_launch(SpmvSpec& s) {
  const SpmvLayout& layout = s.layout;
  const size_t kernel = kernel_index(s, layout.fused_key);
  if (layout.bins.size() != kClassBins) throw UsageError("spmv: the one-launch kernel expects 7 classified bins");
  s.fused.assign(3 * kClassBins, 0);
  int64_t end = 0;
  const size_t long_bin = abi::kSpmvLongRowBin, block_bin = abi::kSpmvBlockBin;
  for (int slot = 0; slot < kClassBins; ++slot) {
    const size_t b = long_bin - static_cast<size_t>(slot);
    const auto& key = layout.bins[b].key;
    // A window's bins launch nothing from their lists; the scalar bin's blocks take every row
    // instead, 32 a warp, and serve those no longer than the window.
    const bool windowed = layout.in_window(b);
    if (windowed) s.window_rows += s.bins.rows[b];
    const int64_t rows_b = windowed ? (b == size_t{abi::kSpmvScalarBin} ? int64_t{s.shape.rows} : 0) : s.bins.rows[b];
    const int64_t blocks = b == long_bin ? s.chunks : b == block_bin ? rows_b : spmv_grid(key, rows_b);
    end += blocks;
    s.fused[b] = static_cast<int32_t>(s.bins.off[b]);
    s.fused[kClassBins + b] = static_cast<int32_t>(b == long_bin ? s.chunks : rows_b);
    s.fused[2 * kClassBins + slot] = static_cast<int32_t>(end);
  }
  if (end > INT32_MAX) throw UsageError("spmv: classified grid past 2^31 blocks");
  s.fused_blocks = end;
  s.launches.push_back({SpmvLaunchKind::Classified, kernel, "classified", static_cast<unsigned>(end),
                        static_cast<unsigned>(layout.fused_key.block_size), 0, SpmvRowSource::None, 0});
}

// One launch per non-empty row-kernel bin, then the long rows' partial sums and their finalize.
void add_bin_launches(SpmvSpec& s) {
  const SpmvLayout& layout = s.layout;
  const bool lists = s.bins.lists();
  for (size_t b = 0; b < layout.bins.size(); ++b) {
    const auto& key = layout.bins[b].key;
    if (s.bins.rows[b] == 0 || key.strategy == codegen::SpmvStrategy::LongRow) continue;
    s.launches.push_back({SpmvLaunchKind::Rows, kernel_index(s, key), "rows",
                          static_cast<unsigned>(spmv_grid(key, s.bins.rows[b])), static_cast<unsigned>(key.block_size),
                          static_cast<int32_t>(s.bins.rows[b]), lists ? SpmvRowSource::BinList : SpmvRowSource::None,
                          lists ? s.bins.off[b] : 0, static_cast<int>(b)});
  }
  if (s.long_rows > 0) {
    const auto& key = layout.bins.back().key;
    const size_t kernel = kernel_index(s, key);
    s.launches.push_back({SpmvLaunchKind::LongPartial, kernel, "partial", static_cast<unsigned>(s.chunks),
                          static_cast<unsigned>(key.block_size), s.chunks, SpmvRowSource::None, 0});
    s.launches.push_back({SpmvLaunchKind::LongFinalize, kernel, "finalize",
                          static_cast<unsigned>((s.long_rows + kFinalizeBlock - 1) / kFinalizeBlock), kFinalizeBlock,
                          s.long_rows, SpmvRowSource::LongRows, 0});
  }
}

}  // namespace

SpmvSpec make_spmv_spec(const SpmvConfig& config, const SpmvShape& shape, const SpmvLayout& layout,
                        const SpmvOrderChoice& order, SpmvBins bins, int32_t long_rows, int32_t chunks) {
  SpmvSpec s;
  s.shape = shape;
  s.config = config;
  s.layout = layout;
  s.order = order;
  s.bins = std::move(bins);
  s.long_rows = long_rows;
  s.chunks = chunks;
  if (order.by_degree && shape.cols > 0) {
    const codegen::SpmvKey gather{layout.bins[0].key.value, codegen::SpmvStrategy::Gather, kGatherBlock};
    s.launches.push_back({SpmvLaunchKind::Gather, kernel_index(s, gather), "gather",
                          static_cast<unsigned>((int64_t{shape.cols} + kGatherBlock - 1) / kGatherBlock), kGatherBlock,
                          shape.cols, SpmvRowSource::None, 0});
  }
  if (layout.classified && s.bins.lists() && layout.fuse_bins)
    add_fused_launch(s);
  else
    add_bin_launches(s);
  if (s.kernels.empty()) s.kernels.push_back(layout.bins[0].key);  // 0 x n: nothing launches, but report the kernel
  return s;
}

namespace {

std::string order_text(const SpmvSpec& s, const SpmvPlanTimes& t) {
  const SpmvConfig& c = s.config;
  const SpmvShape& a = s.shape;
  std::string text;
  if (s.order.automatic)
    text = s.order.feature
               ? fmt::format(
                     "  reorder auto: the {} most frequent columns hold {:.1f}% of the entries (degree from "
                     "{:.1f}%), {} columns (degree from {}): {} ({:.1f} ms on the host)\n",
                     c.reorder_hub_columns, 100 * s.order.hub_share, 100 * c.reorder_min_hub_share, a.cols,
                     c.reorder_min_cols, s.order.by_degree ? "degree" : "none", t.feature_ms)
               : fmt::format(
                     "  reorder auto: {} columns (degree from {}), {:.1f} entries a column (degree from 4): none\n",
                     a.cols, c.reorder_min_cols, a.cols > 0 ? static_cast<double>(a.nnz) / a.cols : 0.0);
  if (!s.launches.empty() && s.launches[0].kind == SpmvLaunchKind::Gather) {
    const int64_t value_bytes = s.kernels[0].value == codegen::ValueType::F64 ? 8 : 4;
    text += fmt::format(
        "  columns in degree order (built in {:.1f} ms on the host): x gathered into that order by {} each call, "
        "{} bytes read and written more a call; A, x and y in the user's order\n",
        t.order_ms, s.kernels[0].to_string(), int64_t{a.cols} * (4 + 2 * value_bytes));
  }
  return text;
}

std::string bins_text(const SpmvSpec& s) {
  std::string text;
  const size_t nbins = s.layout.bins.size();
  for (size_t b = 0; b < nbins; ++b)
    if (s.bins.rows[b] > 0)
      text += fmt::format("  bin {} (rows of length <= {}): {} rows, {} nonzeros{}\n", b,
                          b + 1 == nbins ? std::string("any") : std::to_string(s.bins.max_len[b]), s.bins.rows[b],
                          s.bins.nnz[b],
                          b + 1 == nbins ? fmt::format(", {} chunks of <= {}", s.chunks, s.layout.longrow_chunk) : "");
  return text;
}

std::string launches_text(const SpmvSpec& s) {
  const SpmvLayout& layout = s.layout;
  std::string text;
  for (const SpmvLaunchSpec& l : s.launches) {
    const std::string key = s.kernels[l.kernel].to_string();
    if (l.kind == SpmvLaunchKind::Classified) {
      if (layout.window > 0)
        text += fmt::format(
            "  window: the {} rows of length <= {} in memory order, 32 a warp, in the scalar bin's {} "
            "thread blocks\n",
            s.window_rows, layout.window, spmv_grid(layout.bins[0].key, s.shape.rows));
      text += fmt::format("  -> one launch of {} ({} thread blocks)\n", key, s.fused_blocks);
    } else if (l.kind == SpmvLaunchKind::Rows) {
      text += fmt::format("  -> bin {}: {}\n", l.bin, key);
    } else if (l.kind == SpmvLaunchKind::LongPartial) {
      text += fmt::format("  -> long rows: {} + finalize\n", key);
    }
  }
  return text;
}

}  // namespace

std::string explain_spmv_spec(const SpmvSpec& s, const SpmvPlanTimes& times) {
  const SpmvLayout& layout = s.layout;
  std::string text = layout.classified ? bins_text(s) + launches_text(s) : std::string();
  if (layout.fill_lanes > 0)
    text += fmt::format(
        "  small matrix (fill_threads): no row past the widest vector bin (longest {}) and {} rows x {} lanes <= {} "
        "resident threads: one launch of {} for every row, no row lists\n",
        layout.fill_max_len, s.shape.rows, layout.fill_lanes, layout.fill_threads, layout.bins[0].key.to_string());
  if (s.config.window_max_len > 0 && layout.window == 0)  // asked for, yet not in the kernel: say why
    text += fmt::format("  window_max_len {} not applied: {}\n", s.config.window_max_len,
                        layout.fill_lanes > 0 ? "the small-matrix path runs one vector kernel"
                        : !layout.classified  ? "the strategy is not classified"
                        : !layout.fuse_bins   ? "fuse_bins 0 (one launch per bin)"
                                            : fmt::format("below the scalar bin's bound, {}", layout.bins[0].max_len));
  return order_text(s, times) +
         (layout.classified ? fmt::format("  classified, {} launch(es) per run:\n{}", s.launches.size(), text) : text);
}

std::string spmv_l1_text(int most) {
  return most < 0 ? std::string()
                  : fmt::format(
                        "  L1: each launch prefers the least shared carveout that keeps its occupancy "
                        "(DBSPARSE_L1_CARVEOUT=max-l1), at most {}% of the SM's shared memory\n",
                        most);
}

}  // namespace dbsparse

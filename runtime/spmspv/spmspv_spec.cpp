#include "runtime/spmspv/spmspv_spec.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace dbsparse::detail {
namespace {

// Problem -> key: direction, value type, semiring, the pull COO walk and the block types present.
codegen::SpmspvKey spmspv_key(const SpmspvConfig& cfg, SpmspvDirection direction, Semiring semiring,
                              codegen::ValueType value, const DbStats& storage) {
  codegen::SpmspvKey key;
  key.direction = static_cast<codegen::Direction>(static_cast<int>(direction));
  key.value = value;
  key.semiring = semiring;
  key.pull_coo = cfg.pull_coo == "warp" ? codegen::PullCoo::Warp : codegen::PullCoo::Lane;
  key.types = 0;
  for (int t = 0; t < kBlockTypes; ++t)
    if (storage.blocks_by_type[t] > 0) key.types |= static_cast<uint8_t>(1u << t);
  return key;
}

// The most entries of A in one 16-column block.
template <class T>
int64_t max_colblock_entries(const CsrMatrix<T>& a) {
  std::vector<int64_t> per_block((static_cast<size_t>(a.cols) + 15) / 16 + 1, 0);
  for (const int32_t c : a.col_idx) ++per_block[static_cast<size_t>(c) >> 4];
  int64_t most = 0;
  for (const int64_t e : per_block) most = std::max(most, e);
  return most;
}

// The shape's counts from the converted format and its layout.
template <class T>
void count_format(SpmspvShape& s, const DbMatrix<T>& db, const DbLayout& layout) {
  s.block_rows = db.block_rows;
  s.block_cols = db.block_cols;
  s.blocks = db.blocks();
  s.residual_nnz = db.residual_nnz();
  s.block_nnz = db.nnz - s.residual_nnz;
  s.block_segments = layout.block_segments;
  s.block_task_capacity = layout.block_task_capacity;
  s.residual_task_capacity = layout.residual_task_capacity;
  s.small_task_capacity = layout.small_task_capacity;
  s.stats.pull_segments = static_cast<int64_t>(layout.segments.size());
  s.stats.push_tasks_max = layout.block_task_capacity + layout.residual_task_capacity + layout.small_task_capacity;
}

// The direction thresholds the kernels compare, stored as they compare them (floats), so that
// explain() shows the thresholds actually used.
void set_thresholds(SpmspvShape& s, const SpmspvConfig& cfg) {
  const double nnz_per_block = s.blocks > 0 ? static_cast<double>(s.block_nnz) / static_cast<double>(s.blocks) : 1.0;
  s.stats.xb_threshold = static_cast<float>(cfg.th3_scale == "none" ? cfg.th3 : cfg.th3 / std::max(1.0, nnz_per_block));
  // Without the row view the residual cannot pull: a threshold above any density.
  s.stats.residual_push_below = cfg.residual_pull == "off" ? 2.0 : static_cast<float>(cfg.residual_push_below);
}

}  // namespace

template <class T>
SpmspvSpec<T> spmspv_spec(const CsrMatrix<T>& a, const SpmspvConfig& cfg, SpmspvDirection direction, Semiring semiring,
                          const SpmspvDeviceFacts& device) {
  SpmspvSpec<T> spec;
  SpmspvShape& s = spec.shape;
  s.rows = a.rows;
  s.cols = a.cols;
  s.nnz = a.nnz();
  const auto t0 = std::chrono::steady_clock::now();
  spec.db = csr_to_db(a, cfg.thresholds());
  // Pull segments (blocks, then residual) and the push lists' capacities; the statistics count them.
  DbLayout layout = make_db_layout(spec.db);
  s.stats.storage = db_stats(spec.db, layout);
  s.stats.storage.convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  count_format(s, spec.db, layout);
  set_thresholds(s, cfg);
  s.key = spmspv_key(cfg, direction, semiring, codegen::value_type_of<T>(), s.stats.storage);
  s.max_colblock_entries = max_colblock_entries(a);
  s.direction = direction;
  s.semiring = semiring;
  s.sm_count = static_cast<unsigned>(std::max(1, device.sm_count));
  s.pdl = cfg.pdl != 0 && device.cc_major >= 9;
  const int64_t threads = abi::kWarps * 32;
  s.prep_grid = static_cast<unsigned>(
      std::clamp<int64_t>((int64_t{s.block_cols} + threads - 1) / threads, 1, int64_t{device.sm_count} * 4));
  spec.segments = std::move(layout.segments);
  if (spec.segments.empty()) spec.segments.push_back({0, 0, 0, 0});  // a valid pointer; count 0
  return spec;
}

SpmspvHint spmspv_direction_hint(const SpmspvShape& shape, uint32_t x_nnz, uint32_t x_nonempty) {
  // The same float expressions as the device's, so that a count at a threshold goes the same way.
  const bool blocks_push = static_cast<float>(x_nonempty) <
                           static_cast<float>(shape.stats.xb_threshold) * static_cast<float>(shape.block_cols);
  const bool residual_push =
      static_cast<float>(x_nnz) < static_cast<float>(shape.stats.residual_push_below) * static_cast<float>(shape.cols);
  if (blocks_push && residual_push) return SpmspvHint::Push;
  const bool pull_only_residual_pushes = shape.stats.pull_segments <= shape.block_segments;
  if (!blocks_push && residual_push == pull_only_residual_pushes) return SpmspvHint::Pull;
  return SpmspvHint::None;
}

unsigned spmspv_full_compute_grid(int compute_blocks_per_sm, int occupancy, unsigned sm_count) {
  const int per_sm = compute_blocks_per_sm > 0 ? std::min(occupancy, compute_blocks_per_sm) : occupancy;
  return static_cast<unsigned>(std::max(1, per_sm)) * sm_count;
}

unsigned spmspv_compute_grid_for(int64_t x_nnz, int occupancy, unsigned sm_count) {
  const int per_sm = x_nnz <= 128 ? 1 : x_nnz <= 1024 ? 2 : x_nnz <= 4096 ? 4 : occupancy;
  return static_cast<unsigned>(std::min(per_sm, occupancy)) * sm_count;
}

std::string spmspv_explain(const SpmspvShape& s, const Config& config, const KernelInfo& kernel) {
  return fmt::format(
      "spmspv plan ({}): {} x {}, nnz {}, {} blocks + {} residual entries, {} pull segments, up to {} push tasks; "
      "push while xb < {:.4g}\n"
      "  device bytes {} (format, segments, workspace)\n"
      "  config ({}): {}{}\n  kernel: {} (binary from {}: {:.2f} ms; module load {:.2f} ms)\n{}",
      to_string(s.semiring), s.rows, s.cols, s.nnz, s.blocks, s.residual_nnz, s.stats.pull_segments,
      s.stats.push_tasks_max, s.stats.xb_threshold, s.stats.device_bytes, to_string(config.source),
      config.params.dump(), config.note.empty() ? "" : "  [" + config.note + "]", kernel.key, kernel.origin,
      kernel.acquire_ms, kernel.load_ms, s.stats.storage.to_text());
}

template SpmspvSpec<float> spmspv_spec(const CsrMatrix<float>&, const SpmspvConfig&, SpmspvDirection, Semiring,
                                       const SpmspvDeviceFacts&);
template SpmspvSpec<double> spmspv_spec(const CsrMatrix<double>&, const SpmspvConfig&, SpmspvDirection, Semiring,
                                        const SpmspvDeviceFacts&);

}  // namespace dbsparse::detail

// Hash SpGEMM's analysis and C's sizing on the GPU (runtime/spgemm/spgemm_gpu_analysis.hpp).
#include "runtime/spgemm/spgemm_gpu_analysis.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "codegen/keys/spgemm_key.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse::detail {
namespace {

using abi::SpgemmStats;

// Not tuned: these kernels read each row's pointers once or twice and are far from the phases' cost.
constexpr int kBlock = 256;
constexpr int kScanTile = kBlock * 4;  // kSpgemmScanItems rows a thread (templates/spgemm/spgemm_analysis.cuh)
// B's columns are checked by the analysis grid striding over them; a grid of at least this many
// blocks, so that an A of few rows does not leave a long B to a handful of threads.
constexpr int64_t kCheckBlocks = 1024;
constexpr size_t kStatsOnesAt = 136;  // the all-ones tail of SpgemmStats (first_bad_b, first_bad_a)
static_assert(offsetof(SpgemmStats, first_bad_b) == kStatsOnesAt);

unsigned blocks_for(int64_t n, int per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

template <class U>
std::vector<U> download_at(uint64_t base, int64_t first, int64_t n) {
  std::vector<U> out(static_cast<size_t>(n));
  if (n > 0) DBS_CU(cuMemcpyDtoH(out.data(), base + static_cast<uint64_t>(first) * sizeof(U), out.size() * sizeof(U)));
  return out;
}

}  // namespace

SpgemmGpuAnalysis::SpgemmGpuAnalysis(Context& ctx, const SpgemmOperands& ops, const SpgemmConfig& c, CUstream h)
    : rows_(ops.rows), ops_(ops), rule_(spgemm_group_rule(c, ops.b_cols)), stats_dev_(1, ctx.pool_on(h)) {
  stats_.first_bad_b = std::numeric_limits<uint64_t>::max();
  stats_.first_bad_a = std::numeric_limits<uint32_t>::max();
  if (ops.rows == 0) return;
  if (ops.a_nnz == 0) {  // every row idle: nothing to launch
    stats_.idle = ops.rows;
    return;
  }
  const auto k = ctx.modules().get(codegen::make_source(codegen::SpgemmAnalysisKey{kBlock}), ctx.device().arch());
  analyse_ = k.entry("analyse_rows");
  scatter_ = k.entry("scatter_rows");
  tile_sums_ = k.entry("tile_sums");
  scan_tiles_ = k.entry("scan_tiles");
  row_ptr_ = k.entry("row_ptr");
  compact_ = k.entry("compact_rows");
  // From the context's pool, on h: a fresh product allocates a dozen buffers, and a cuMemAlloc
  // each would cost a fair share of a small product (docs/decisions/spgemm-pool-allocations.md).
  const PoolSlot pool = ctx.pool_on(h);
  code_ = DeviceBuffer<int8_t>(static_cast<size_t>(ops.rows), pool);
  tile_sum_ = DeviceBuffer<int64_t>(blocks_for(ops.rows, kScanTile), pool);
  ip_row_ = DeviceBuffer<int32_t>(static_cast<size_t>(ops.rows), pool);

  uint64_t st = stats_dev_.ptr(), code = code_.ptr(), ip_row = ip_row_.ptr(), ap = ops.a_ptr, ac = ops.a_col,
           bp = ops.b_ptr, bc = ops.b_col;
  DBS_CU(cuMemsetD8Async(st, 0, kStatsOnesAt, h));
  DBS_CU(cuMemsetD8Async(st + kStatsOnesAt, 0xff, sizeof(SpgemmStats) - kStatsOnesAt, h));
  abi::SpgemmGroupRule rule = rule_;
  int rows = ops.rows, a_cols = ops.a_cols;
  long long a_nnz = ops.a_nnz, b_nnz = ops.b_nnz;
  {
    void* params[] = {&ap, &ac, &rows, &a_cols, &a_nnz, &bp, &bc, &b_nnz, &rule, &code, &ip_row, &st};
    const unsigned grid =
        std::max(blocks_for(rows, kBlock), blocks_for(std::min(ops.b_nnz, kCheckBlocks * kBlock), kBlock));
    DBS_CU(cuLaunchKernel(analyse_, grid, 1, 1, kBlock, 1, 1, 0, h, params, nullptr));
  }
  read_stats(h);  // the first of the two waits of a fresh product
  check_inputs(ops);
  if (products() == 0) return;

  const int64_t n0 = count(0), n1 = count(1), n2 = count(2);
  lists_ = DeviceBuffer<int32_t>(static_cast<size_t>(std::max<int64_t>(n0 + n1 + n2, 1)), pool);
  global_list_ = DeviceBuffer<int32_t>(static_cast<size_t>(std::max(global_rows(), 1)), pool);
  tables_ = DeviceBuffer<abi::SpgemmTable>(static_cast<size_t>(std::max(global_rows(), 1)), pool);
}

void SpgemmGpuAnalysis::place_rows(CUstream h) {
  if (placed_) return;
  placed_ = true;
  if (products() == 0) return;
  int rows = rows_, off1 = static_cast<int>(count(0)), off2 = static_cast<int>(count(0) + count(1)),
      n3 = stats_.rows[abi::kSpgemmGlobalGroup];
  uint64_t code = code_.ptr(), ap = ops_.a_ptr, ac = ops_.a_col, bp = ops_.b_ptr, list = lists_.ptr(),
           glist = global_list_.ptr(), tables = tables_.ptr(), st = stats_dev_.ptr();
  void* params[] = {&code, &rows, &ap, &ac, &bp, &rule_, &off1, &off2, &n3, &list, &glist, &tables, &st};
  DBS_CU(cuLaunchKernel(scatter_, blocks_for(rows, kBlock), 1, 1, kBlock, 1, 1, 0, h, params, nullptr));
}

void SpgemmGpuAnalysis::read_stats(CUstream h) {
  DBS_CU(cuStreamSynchronize(h));
  stats_ = stats_dev_.download().at(0);
}

void SpgemmGpuAnalysis::check_inputs(const SpgemmOperands& ops) const {
  // Error paths only: what names the culprit is downloaded here, after the fact.
  if (stats_.bad_ptr & 1)
    throw UsageError(fmt::format("spgemm: A's row_ptr must start at 0 and end at nnz(A) = {}", ops.a_nnz));
  if (stats_.bad_ptr & 2)
    throw UsageError(fmt::format("spgemm: B's row_ptr must start at 0 and end at nnz(B) = {}", ops.b_nnz));
  if (stats_.first_bad_a != std::numeric_limits<uint32_t>::max()) {
    const int32_t i = static_cast<int32_t>(stats_.first_bad_a);
    const auto ptr = download_at<int32_t>(ops.a_ptr, i, 2);
    for (int32_t k : download_at<int32_t>(ops.a_col, ptr[0], ptr[1] - ptr[0]))
      if (k < 0 || k >= ops.a_cols)
        throw UsageError(fmt::format("spgemm: row {} of A has column {}, outside [0, {})", i, k, ops.a_cols));
    throw std::logic_error(fmt::format("spgemm analysis: row {} of A was flagged but has no bad column", i));
  }
  if (stats_.first_bad_b != std::numeric_limits<uint64_t>::max()) {
    const auto q = static_cast<int64_t>(stats_.first_bad_b);
    const auto ptr = download_at<int32_t>(ops.b_ptr, 0, int64_t{ops.a_cols} + 1);
    const auto row = std::upper_bound(ptr.begin(), ptr.end(), q) - ptr.begin() - 1;
    throw UsageError(fmt::format("spgemm: row {} of B has column {}, outside [0, {})", row,
                                 download_at<int32_t>(ops.b_col, q, 1).at(0), ops.b_cols));
  }
}

int64_t SpgemmGpuAnalysis::products() const {
  int64_t s = 0;
  for (int64_t ip : stats_.ip) s += ip;
  return s;
}

uint64_t SpgemmGpuAnalysis::group_list(int group) const {
  if (count(group) == 0) return 0;
  int64_t off = 0;
  for (int g = 0; g < group; ++g) off += count(g);
  return lists_.ptr() + static_cast<uint64_t>(off) * sizeof(int32_t);
}

int64_t SpgemmGpuAnalysis::size_c(uint64_t row_len, uint64_t overflow, uint64_t c_ptr, CUstream h) {
  if (products() == 0) {
    DBS_CU(cuMemsetD32Async(c_ptr, 0, static_cast<size_t>(rows_) + 1, h));
    stats_.nnz = 0;
    return 0;
  }
  scan_rows(row_len, overflow, c_ptr, h);
  read_stats(h);  // the second wait
  if (stats_.nnz > std::numeric_limits<int32_t>::max()) {
    const auto len = download_at<int32_t>(row_len, 0, rows_);
    check_nnz_fits(len);  // throws, naming the row
    throw std::logic_error(
        fmt::format("spgemm: the GPU counted nnz(C) = {}, the host {}", stats_.nnz, check_nnz_fits(len)));
  }
  return stats_.nnz;
}

// Row lengths to row pointers (stats' nnz the total, overflowed the flagged rows), not waited for.
void SpgemmGpuAnalysis::scan_rows(uint64_t row_len, uint64_t overflow, uint64_t out_ptr, CUstream h) {
  int rows = rows_, tiles = static_cast<int>(blocks_for(rows_, kScanTile));
  uint64_t ts = tile_sum_.ptr(), st = stats_dev_.ptr();
  // Zeroed again: a run after a failed sizing (nnz(C) too large) counts afresh.
  DBS_CU(cuMemsetD32Async(st + offsetof(SpgemmStats, overflowed), 0, 1, h));
  void* sums[] = {&row_len, &overflow, &rows, &ts, &st};
  DBS_CU(cuLaunchKernel(tile_sums_, static_cast<unsigned>(tiles), 1, 1, kBlock, 1, 1, 0, h, sums, nullptr));
  void* scan[] = {&ts, &tiles, &st};
  DBS_CU(cuLaunchKernel(scan_tiles_, 1, 1, 1, kBlock, 1, 1, 0, h, scan, nullptr));
  void* ptr[] = {&row_len, &rows, &ts, &out_ptr};
  DBS_CU(cuLaunchKernel(row_ptr_, static_cast<unsigned>(tiles), 1, 1, kBlock, 1, 1, 0, h, ptr, nullptr));
}

void scan_lengths(Context& ctx, uint64_t row_len, int32_t rows, uint64_t out_ptr, CUstream h) {
  if (rows == 0) {
    DBS_CU(cuMemsetD32Async(out_ptr, 0, 1, h));
    return;
  }
  const auto k = ctx.modules().get(codegen::make_source(codegen::SpgemmAnalysisKey{kBlock}), ctx.device().arch());
  const PoolSlot pool = ctx.pool_on(h);
  int tiles = static_cast<int>(blocks_for(rows, kScanTile));
  DeviceBuffer<int64_t> tile_sum(static_cast<size_t>(tiles), pool);
  DeviceBuffer<SpgemmStats> stats(1, pool);  // scan_tiles writes its nnz; nothing reads it
  uint64_t ts = tile_sum.ptr(), st = stats.ptr(), no_overflow = 0;
  void* sums[] = {&row_len, &no_overflow, &rows, &ts, &st};
  DBS_CU(cuLaunchKernel(k.entry("tile_sums"), static_cast<unsigned>(tiles), 1, 1, kBlock, 1, 1, 0, h, sums, nullptr));
  void* scan[] = {&ts, &tiles, &st};
  DBS_CU(cuLaunchKernel(k.entry("scan_tiles"), 1, 1, 1, kBlock, 1, 1, 0, h, scan, nullptr));
  void* ptr[] = {&row_len, &rows, &ts, &out_ptr};
  DBS_CU(cuLaunchKernel(k.entry("row_ptr"), static_cast<unsigned>(tiles), 1, 1, kBlock, 1, 1, 0, h, ptr, nullptr));
  tile_sum.release(h);
  stats.release(h);
}

void SpgemmGpuAnalysis::ip_offsets(uint64_t overflow, uint64_t ip_ptr, CUstream h) {
  if (products() > std::numeric_limits<int32_t>::max())
    throw std::logic_error(fmt::format("spgemm: a one-pass first run over {} products (int32 offsets)", products()));
  scan_rows(ip_row_.ptr(), overflow, ip_ptr, h);
}

void SpgemmGpuAnalysis::compact(uint64_t ip_ptr, uint64_t c_ptr, uint64_t from_col, uint64_t from_val, uint64_t c_col,
                                uint64_t c_val, int val_bytes, CUstream h) {
  if (stats_.nnz == 0) return;
  int rows = rows_;
  int nnz = static_cast<int>(stats_.nnz);
  void* params[] = {&rows, &nnz, &ip_ptr, &c_ptr, &from_col, &from_val, &c_col, &c_val, &val_bytes};
  // A warp per 256 of C's entries (kSpgemmCompactPerWarp in spgemm_compact_rows).
  constexpr int64_t kEntriesPerBlock = kBlock / 32 * 256;
  DBS_CU(cuLaunchKernel(compact_, static_cast<unsigned>((stats_.nnz + kEntriesPerBlock - 1) / kEntriesPerBlock), 1, 1,
                        kBlock, 1, 1, 0, h, params, nullptr));
}

SpgemmGrouping SpgemmGpuAnalysis::grouping() const {
  if (!placed_) throw std::logic_error("SpgemmGpuAnalysis::grouping before place_rows");
  SpgemmGrouping g;
  g.idle_rows = stats_.idle;
  for (int q = 0; q < kSpgemmGroups; ++q) g.ip[q] = stats_.ip[q];
  if (products() == 0) return g;
  // Only the listed prefix: the rest of lists_ was never written.
  int64_t listed = 0;
  for (int q = 0; q < abi::kSpgemmGlobalGroup; ++q) listed += count(q);
  const std::vector<int32_t> lists = download_at<int32_t>(lists_.ptr(), 0, listed);
  int64_t off = 0;
  for (int q = 0; q < abi::kSpgemmGlobalGroup; ++q) {
    g.rows[q].assign(lists.begin() + off, lists.begin() + off + count(q));
    off += count(q);
  }
  g.rows[abi::kSpgemmGlobalGroup] = download_at<int32_t>(global_list_.ptr(), 0, count(abi::kSpgemmGlobalGroup));
  for (auto& r : g.rows) std::sort(r.begin(), r.end());
  return g;
}

int64_t SpgemmGpuAnalysis::device_bytes() const {
  return static_cast<int64_t>(stats_dev_.size() * sizeof(SpgemmStats) + code_.size() +
                              (lists_.size() + global_list_.size() + ip_row_.size()) * sizeof(int32_t) +
                              tables_.size() * sizeof(abi::SpgemmTable) + tile_sum_.size() * sizeof(int64_t));
}

}  // namespace dbsparse::detail

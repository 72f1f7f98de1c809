// SpMV's device calibration (DeviceProfile::calibrations, measured once by `dbtune` or `dbsparse
// profile --measure`): how many entries a lane of the vector kernels should take before the rows get
// a wider lane group on this card. The built-in lane_entries were fitted on one card; another
// wants other widths (docs/decisions/spmv-defaults.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "dbsparse/spmv.hpp"
#include "runtime/gpu/event_timing.hpp"
#include "runtime/spmv/spmv_strategy.hpp"

namespace dbsparse {
namespace {

constexpr int kWidths[] = {2, 4, 8, 16, 32};
// Rows of `mean` random columns each, at least as many rows as the device holds threads (where the
// small-matrix path gives way to these widths), two copies in turn past the L2 of today's cards.
constexpr int64_t kNnz = int64_t{1} << 22;
constexpr int kCopies = 2, kCalls = 8, kRuns = 7;

template <class T>
CsrMatrix<T> uniform_rows(int64_t rows, int mean, uint32_t seed) {
  CsrMatrix<T> a;
  a.rows = a.cols = static_cast<int32_t>(rows);
  a.row_ptr.resize(static_cast<size_t>(rows) + 1);
  a.col_idx.resize(static_cast<size_t>(rows * mean));
  a.values.assign(a.col_idx.size(), T(1));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> col(0, a.cols - 1);
  for (int64_t r = 0; r <= rows; ++r) a.row_ptr[static_cast<size_t>(r)] = static_cast<int32_t>(r * mean);
  for (int64_t r = 0; r < rows; ++r) {
    auto* row = a.col_idx.data() + r * mean;
    for (int k = 0; k < mean; ++k) row[k] = col(rng);
    std::sort(row, row + mean);
  }
  return a;
}

// The vector kernel's time per call at each width of kWidths on rows of `mean` entries.
template <class T>
std::vector<double> width_times(Context& ctx, const Stream& s, int mean, int64_t resident) {
  const int64_t rows = std::max(kNnz / mean, resident);
  const CsrMatrix<T> a = uniform_rows<T>(rows, mean, 7u + static_cast<uint32_t>(mean));
  DeviceBuffer<T> x{std::vector<T>(static_cast<size_t>(a.cols), T(1))};
  DeviceBuffer<T> y(static_cast<size_t>(a.rows));
  std::vector<double> out;
  for (int lanes : kWidths) {
    const Config c{"spmv",
                   {{"strategy", "vector"}, {"lanes", lanes}, {"fill_threads", 0}, {"reorder", "none"}},
                   ConfigSource::Explicit,
                   "calibration"};
    std::vector<SpmvPlan<T>> plans;
    for (int k = 0; k < kCopies; ++k) plans.push_back(SpmvPlan<T>::build(ctx, a, c));
    out.push_back(detail::median_event_us(s, kRuns,
                                          [&] {
                                            for (int i = 0; i < kCalls; ++i) plans[i % kCopies].run(x, y, s);
                                          }) /
                  kCalls);
  }
  return out;
}

template <class T>
void calibrate_precision(Context& ctx, const Stream& s, DeviceProfile& device, const char* name,
                         const std::function<void(const std::string&)>& progress) {
  const std::vector<int> means = {8, 16, 32};
  const int64_t resident = int64_t{ctx.device().sm_count} * std::max(ctx.device().threads_per_sm, 1);
  std::vector<std::vector<double>> times;
  for (int mean : means) times.push_back(width_times<T>(ctx, s, mean, resident));
  const int e = spmv_best_lane_entries(means, std::vector<int>(std::begin(kWidths), std::end(kWidths)), times);
  if (e > 0) device.calibrations[fmt::format("spmv.lane_entries_{}", name)] = e;
  if (progress) {
    std::string text;
    for (size_t m = 0; m < means.size(); ++m)
      text += fmt::format("{}mean {}: {:.1f}", m ? "; " : "", means[m], fmt::join(times[m], " / "));
    progress(fmt::format("spmv.lane_entries_{} = {} (us a call at 2 / 4 / 8 / 16 / 32 lanes, {})", name, e, text));
  }
}

}  // namespace

void calibrate_spmv(Context& ctx, DeviceProfile& device, const std::function<void(const std::string&)>& progress) {
  ctx.make_current();
  Stream s(ctx);
  calibrate_precision<float>(ctx, s, device, "f32", progress);
  calibrate_precision<double>(ctx, s, device, "f64", progress);
}

}  // namespace dbsparse

#pragma once
#include <cstdlib>
#include <string>
// Event timing on a stream, per METHOD.md: warm up, then the median over samples, each sample a
// batch of back-to-back calls between two events, inputs rotated so the L2 cannot serve them.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace dbsparse::tools {

struct TimingOptions {
  int warmup = 5;    // calls before the first timed sample
  int samples = 15;  // the median is taken over these
  int batch = 20;    // calls per sample, between two events
  // Each sample replays one CUDA graph holding the batch's calls (captured once), instead of
  // launching them on the stream: what a caller that captures its loop sees, with launch costs
  // mostly gone.
  bool graph = false;
  // Warm-up calls go on until this much host time has passed (at least `warmup` of them): after
  // the host work between two rows (plans built, results checked) the GPU sits idle and its
  // clocks fall; a small op's timed calls (~1 ms in all) would be over before they are back up.
  // $DBSPARSE_BENCH_WARMUP_MS overrides it (0: calls only). Last, so that positional
  // initialisers {warmup, samples, batch} keep their meaning.
  double warmup_ms = 2.0;
};

struct TimingResult {
  double median_us = 0, min_us = 0, max_us = 0;  // per call
  // The host's time to enqueue one call (median over the samples; 0 under graph replay). Near
  // median_us, the row measures the launch path, not the GPU.
  double host_us = 0;
  int samples = 0;
};

// opt.warmup_ms, or $DBSPARSE_BENCH_WARMUP_MS where set to a number in [0, 10000].
double effective_warmup_ms(const TimingOptions& opt);

// launch(i) enqueues the i-th call (callers rotate their input copies by i) on `stream`.
TimingResult time_on_stream(void* stream, const TimingOptions& opt, const std::function<void(int64_t)>& launch);

// check-auto's second look: the launchers' samples in turn (sample 1 of a, of b, of c, sample 2 of
// a, ...), rounds x opt.samples samples each, and each launcher's median per call. A first pass
// times each path once, at its own moment, and the least of many forced paths' noisy times is
// biased low against auto's one; paths timed in turn see the same clocks, caches and host. Under
// opt.graph, whole time_on_stream rounds in turn instead.
std::vector<double> time_interleaved(void* stream, const TimingOptions& opt,
                                     const std::vector<std::function<void(int64_t)>>& launches, int rounds);

// How many independent copies of a problem of `footprint` bytes keep the working set at least
// three times the L2, capped by `budget` bytes of device memory and by 64.
int rotation_copies(size_t footprint, int64_t l2_bytes, size_t budget);

// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written.
double measure_copy_bandwidth(void* stream, size_t bytes = size_t(1) << 30);

// Wall-clock timing of whole pipelines (fresh products, applications), which wait for their results.
using Clock = std::chrono::steady_clock;
// $DBSPARSE_BENCH_AUTO_LAST=1: benches that time auto beside forced paths time it after them, so
// that an order effect (clocks, caches warming over a matrix's rows) can be told from auto's cost.
inline bool auto_timed_last() {
  const char* v = std::getenv("DBSPARSE_BENCH_AUTO_LAST");
  return v && std::string(v) == "1";
}

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
template <class F>
double wall_ms(F&& f) {
  const auto t0 = Clock::now();
  f();
  return 1e3 * seconds_since(t0);
}
// `product` (which returns once the host has its result) up to `reps` times, stopping once
// `budget_s` has passed; the wall times in ms.
template <class F>
std::vector<double> time_products(int reps, double budget_s, F&& product) {
  std::vector<double> ms;
  const auto t0 = Clock::now();
  for (int i = 0; i < std::max(reps, 1); ++i) {
    ms.push_back(wall_ms(product));
    if (seconds_since(t0) > budget_s) break;
  }
  return ms;
}

}  // namespace dbsparse::tools

#include "tools/bench/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/cuda_graph.hpp"
#include "runtime/gpu/cuda_driver.hpp"

namespace dbsparse::tools {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

double effective_warmup_ms(const TimingOptions& opt) {
  const char* env = std::getenv("DBSPARSE_BENCH_WARMUP_MS");
  if (env && *env) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end && *end == '\0' && v >= 0 && v <= 10000) return v;
  }
  return opt.warmup_ms;
}

namespace {

// opt.warmup calls, and more until effective_warmup_ms of host time has passed; `call` counts on.
void warm_up(void* stream, const TimingOptions& opt, const std::function<void(int64_t)>& launch, int64_t& call) {
  const auto t0 = std::chrono::steady_clock::now();
  const double settle_ms = effective_warmup_ms(opt);
  for (int i = 0; i < opt.warmup ||
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < settle_ms;
       ++i) {
    launch(call++);
    // Every 64 calls, wait for them: the host must not queue more than the GPU runs in the time.
    if (i % 64 == 63) DBS_CU(cuStreamSynchronize(static_cast<CUstream>(stream)));
  }
}

}  // namespace

TimingResult time_on_stream(void* stream, const TimingOptions& opt, const std::function<void(int64_t)>& launch) {
  int64_t call = 0;
  warm_up(stream, opt, launch, call);
  std::vector<Event> starts(opt.samples), stops(opt.samples);
  std::vector<double> host(opt.samples, 0.0);
  if (opt.graph) {
    // The batch's calls captured from the stream into one graph (dbsparse::CudaGraph).
    const CudaGraph g = CudaGraph::capture(stream, [&] {
      for (int b = 0; b < opt.batch; ++b) launch(call++);
    });
    g.replay(stream);  // the first replay uploads the graph
    for (int s = 0; s < opt.samples; ++s) {
      starts[s].record(stream);
      g.replay(stream);
      stops[s].record(stream);
    }
    for (int s = 0; s < opt.samples; ++s) stops[s].synchronize();
  } else {
    for (int s = 0; s < opt.samples; ++s) {
      starts[s].record(stream);
      const auto h0 = std::chrono::steady_clock::now();
      for (int b = 0; b < opt.batch; ++b) launch(call++);
      host[s] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() / opt.batch;
      stops[s].record(stream);
    }
  }
  std::vector<double> per_call;
  for (int s = 0; s < opt.samples; ++s) {
    stops[s].synchronize();
    per_call.push_back(1000.0 * stops[s].elapsed_ms_since(starts[s]) / opt.batch);
  }
  std::sort(per_call.begin(), per_call.end());
  TimingResult r;
  r.samples = opt.samples;
  r.min_us = per_call.front();
  r.max_us = per_call.back();
  r.median_us = median_of(per_call);
  r.host_us = median_of(host);
  return r;
}

std::vector<double> time_interleaved(void* stream, const TimingOptions& opt,
                                     const std::vector<std::function<void(int64_t)>>& launches, int rounds) {
  const size_t k_count = launches.size();
  if (opt.graph) {  // graphs are captured per launcher: whole rounds in turn
    std::vector<std::vector<double>> per(k_count);
    for (int r = 0; r < rounds; ++r)
      for (size_t k = 0; k < k_count; ++k) per[k].push_back(time_on_stream(stream, opt, launches[k]).median_us);
    std::vector<double> out;
    for (auto& v : per) out.push_back(median_of(v));
    return out;
  }
  std::vector<int64_t> call(k_count, 0);
  for (size_t k = 0; k < k_count; ++k) warm_up(stream, opt, launches[k], call[k]);
  // Sample by sample, each launcher's batch in turn: a slow spell of the host or the GPU lands on
  // neighbouring samples of every launcher alike, and the medians leave it out.
  const int n = std::max(1, rounds) * opt.samples;
  const size_t total = k_count * static_cast<size_t>(n);
  std::vector<Event> starts(total), stops(total);  // [sample * k_count + k]
  for (int s = 0; s < n; ++s)
    for (size_t k = 0; k < k_count; ++k) {
      starts[s * k_count + k].record(stream);
      for (int b = 0; b < opt.batch; ++b) launches[k](call[k]++);
      stops[s * k_count + k].record(stream);
    }
  std::vector<double> out;
  for (size_t k = 0; k < k_count; ++k) {
    std::vector<double> per_call;
    for (int s = 0; s < n; ++s) {
      const size_t e = s * k_count + k;
      stops[e].synchronize();
      per_call.push_back(1000.0 * stops[e].elapsed_ms_since(starts[e]) / opt.batch);
    }
    out.push_back(median_of(per_call));
  }
  return out;
}

int rotation_copies(size_t footprint, int64_t l2_bytes, size_t budget) {
  if (footprint == 0) return 1;
  size_t want = (3 * static_cast<size_t>(l2_bytes) + footprint - 1) / footprint;
  size_t fit = std::max<size_t>(1, budget / footprint);
  return static_cast<int>(std::clamp<size_t>(want, 1, std::min<size_t>(fit, 64)));
}

double measure_copy_bandwidth(void* stream, size_t bytes) {
  DeviceAllocation a(bytes), b(bytes);
  a.memset8(1);
  TimingOptions opt{2, 9, 3};
  auto r = time_on_stream(stream, opt, [&](int64_t i) {
    auto src = i % 2 ? a.ptr() : b.ptr(), dst = i % 2 ? b.ptr() : a.ptr();
    DBS_CU(cuMemcpyDtoDAsync(dst, src, bytes, static_cast<CUstream>(stream)));
  });
  return 2.0 * static_cast<double>(bytes) / (r.median_us * 1e3);
}

}  // namespace dbsparse::tools

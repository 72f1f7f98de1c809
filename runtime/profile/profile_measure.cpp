// measure_device_profile (include/dbsparse/device_profile.hpp): the probe kernels
// (templates/common/device_probe.cuh) timed with events, each figure the median of several runs.
#include <algorithm>
#include <ctime>
#include <vector>

#include <fmt/format.h>

#include "codegen/keys/probe_key.hpp"
#include "dbsparse/context.hpp"
#include "dbsparse/device_profile.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/event_timing.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse {
namespace {

constexpr int kRuns = 7;  // timed runs of each probe; the median is kept

// The median time, in microseconds, of kRuns runs of launch() (after one untimed run).
template <class F>
double time_us(const Stream& s, F&& launch) {
  return detail::median_event_us(s, kRuns, launch);
}

struct Probes {
  CUfunction copy, read, empty, atomic_chain, grid_barrier;
};

void launch(CUfunction f, unsigned grid, unsigned block, const Stream& s, void** params) {
  DBS_CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, static_cast<CUstream>(s.handle()), params, nullptr));
}

// Device memory: a copy between two buffers of four L2s each (at least 256 MiB), bytes read and
// written counted.
double copy_bandwidth(const Probes& k, const DeviceInfo& d, const Stream& s) {
  const size_t bytes = std::max<size_t>(size_t{256} << 20, static_cast<size_t>(d.l2_bytes) * 4) / 16 * 16;
  DeviceAllocation in(bytes), out(bytes);
  in.memset8(0);
  uint64_t pi = in.ptr(), po = out.ptr();
  long long n = static_cast<long long>(bytes / 16);
  void* params[] = {&pi, &po, &n};
  const unsigned grid = static_cast<unsigned>(d.sm_count) * 8;
  const double us = time_us(s, [&] { launch(k.copy, grid, 256, s, params); });
  return 2.0 * static_cast<double>(bytes) / (us * 1e-6);
}

// The L2: a buffer of a quarter of it, read 32 times in one launch.
double l2_read_bandwidth(const Probes& k, const DeviceInfo& d, const Stream& s) {
  const size_t bytes = std::max<size_t>(size_t{1} << 20, static_cast<size_t>(d.l2_bytes) / 4) / 16 * 16;
  DeviceAllocation in(bytes), sink(16);
  in.memset8(0);
  uint64_t pi = in.ptr(), ps = sink.ptr();
  long long n = static_cast<long long>(bytes / 16);
  int reps = 32;
  void* params[] = {&pi, &n, &reps, &ps};
  const unsigned grid = static_cast<unsigned>(d.sm_count) * 8;
  const double us = time_us(s, [&] { launch(k.read, grid, 256, s, params); });
  return static_cast<double>(bytes) * reps / (us * 1e-6);
}

double launch_us(const Probes& k, const Stream& s) {
  constexpr int kLaunches = 200;
  void* params[] = {nullptr};
  return time_us(s,
                 [&] {
                   for (int i = 0; i < kLaunches; ++i) launch(k.empty, 1, 32, s, params);
                 }) /
         kLaunches;
}

double atomic_ns(const Probes& k, const Stream& s) {
  DeviceBuffer<unsigned> word(2);
  word.fill_bytes(0);
  uint64_t pw = word.ptr(), po = word.ptr() + 4;
  int count = 4096;
  void* params[] = {&pw, &count, &po};
  return time_us(s, [&] { launch(k.atomic_chain, 1, 1, s, params); }) * 1e3 / count;
}

// A full grid (every block an SM holds) through `count` barriers, less one launch.
double grid_barrier_us(const Probes& k, const DeviceInfo& d, const Stream& s, double launch) {
  int per_sm = 0;
  DBS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.grid_barrier, 256, 0));
  const unsigned grid = static_cast<unsigned>(std::max(per_sm, 1) * d.sm_count);
  DeviceBuffer<unsigned> state(2);
  state.fill_bytes(0);
  uint64_t pa = state.ptr(), pg = state.ptr() + 4;
  int count = 256;
  void* params[] = {&pa, &pg, &count};
  const double us = time_us(s, [&] {
    DBS_CU(
        cuLaunchCooperativeKernel(k.grid_barrier, grid, 1, 1, 256, 1, 1, 0, static_cast<CUstream>(s.handle()), params));
  });
  return std::max(0.0, us - launch) / count;
}

}  // namespace

DeviceProfile measure_device_profile(Context& ctx) {
  ctx.make_current();
  const DeviceInfo& d = ctx.device();
  const auto loaded = ctx.modules().get(codegen::make_source(codegen::ProbeKey{}), d.arch());
  const Probes k{loaded.entry("copy"), loaded.entry("read"), loaded.entry("empty"), loaded.entry("atomic_chain"),
                 loaded.entry("grid_barrier")};
  Stream s(ctx);
  DeviceProfile p;
  p.source = ProfileSource::Measured;
  p.device_fp = d.record().fingerprint;
  p.sm_count = d.sm_count;
  p.l2_bytes = d.l2_bytes;
  p.shared_per_sm = d.shared_per_sm;
  p.copy_bytes_per_s = copy_bandwidth(k, d, s);
  p.l2_read_bytes_per_s = l2_read_bandwidth(k, d, s);
  p.launch_us = launch_us(k, s);
  p.atomic_ns = atomic_ns(k, s);
  p.grid_barrier_us = grid_barrier_us(k, d, s, p.launch_us);
  p.measured_at = static_cast<int64_t>(std::time(nullptr));
  char date[32] = {};
  const std::time_t now = static_cast<std::time_t>(p.measured_at);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  p.note = fmt::format("measured {} on {}", date, d.name);
  return p;
}

}  // namespace dbsparse

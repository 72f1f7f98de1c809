#pragma once
// The fixed cost of a call: an op's smallest calls timed by the same harness as an
// empty kernel's launch, each by stream launches and by one CUDA graph replay a batch, so that
// every `dbsparse bench` run prints how far a call sits above an empty launch.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/context.hpp"
#include "tools/bench/timing.hpp"

namespace dbsparse::tools {

// One of an op's smallest calls: what it is, and its launch on the bench's stream (owning
// whatever it needs: plans, buffers).
struct FixedCostCall {
  std::string what;
  std::function<void(int64_t)> launch;
  double per = 1;  // the times reported are a call's over this (a BFS's levels: the cost a level)
};

// A device buffer of n copies of v, shared by the calls that launch on it.
template <class T>
std::shared_ptr<DeviceBuffer<T>> filled(size_t n, T v) {
  return std::make_shared<DeviceBuffer<T>>(std::vector<T>(n, v));
}

// An op's first call as a user makes it: the input is ready; plan() plans (config look-up,
// analysis, upload, kernels from the cache or NVRTC) and returns the call, which launches on the
// stream the first call was made for.
struct FirstCall {
  std::string what;
  std::function<std::function<void()>()> plan;
};

// Times the empty kernel and each call (stream launches, then graph replays), prints one line
// each, and returns {"empty_kernel": {...}, "calls": [...]}, times in us a call.
nlohmann::json fixed_cost_section(Context& ctx, const Stream& stream, const TimingOptions& timing,
                                  const std::vector<FixedCostCall>& calls);

}  // namespace dbsparse::tools

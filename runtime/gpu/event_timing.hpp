#pragma once
// Device time of a piece of work, for the library's own measurements (the device profile, the ops'
// calibrations): events around each run on one stream, the median kept. Benchmarks have their
// own harness (tools/bench/timing.hpp).
#include <algorithm>
#include <vector>

#include "dbsparse/context.hpp"

namespace dbsparse::detail {

// The median, in microseconds, of `runs` runs of launch() on s, each between two events, after one
// untimed run (module loads, first touches).
template <class F>
double median_event_us(const Stream& s, int runs, F&& launch) {
  Event a, b;
  launch();
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    a.record(s);
    launch();
    b.record(s);
    b.synchronize();
    t.push_back(double{b.elapsed_ms_since(a)} * 1e3);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace dbsparse::detail

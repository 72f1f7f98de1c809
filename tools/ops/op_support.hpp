#pragma once
// What the ops' registry entries share: turning a candidate's failure into its trial status,
// the tuner's timing, and the bench's walk over a suite.
#include <functional>
#include <string>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/io.hpp"
#include "tools/bench/bench_spmv.hpp"
#include "tools/bench/timing.hpp"
#include "tuner/search.hpp"

namespace dbsparse::tools {

inline constexpr int kObjectiveXCopies = 4;  // x rotated across an objective's timed calls

// Runs `body`, turning the failures a candidate may hit into its trial status: the search records
// the row and goes on.
template <class F>
tuner::Measurement guarded(F&& body) {
  try {
    return body();
  } catch (const CompileError& e) {
    return {TrialStatus::CompileFailed, 0, e.what()};
  } catch (const CudaError& e) {
    return {TrialStatus::LaunchFailed, 0, e.what()};
  } catch (const UsageError& e) {
    return {TrialStatus::Skipped, 0, e.what()};
  }
}

inline TimingOptions objective_timing(int samples) { return TimingOptions{2, samples < 1 ? 1 : samples, 10}; }

// Loads each matrix in turn (one in memory at a time) and reports progress on stderr.
void for_each_matrix(const std::vector<std::string>& specs,
                     const std::function<void(const NamedMatrix&, bool generated)>& bench);

// How the kernels were obtained: the JIT cost a user pays once per process, one line per key.
void print_jit(const std::vector<const BenchRow*>& rows);

}  // namespace dbsparse::tools

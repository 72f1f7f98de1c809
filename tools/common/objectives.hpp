#pragma once
// What a tuning candidate costs on the GPU, per op: plan with the candidate config (JIT through
// the kernel cache, the op's own conversion timed apart as a one-time cost), check against the
// CPU reference, then time with CUDA events (warm-up, median of samples, x rotated).
#include <memory>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/io.hpp"
#include "tuner/search.hpp"

namespace dbsparse::tools {

// SpMSpV's time is the geometric mean over these x densities (one config for all of them:
// the DB format is converted once per matrix, whatever x turns out to be).
inline constexpr double kSpmspvTuneDensities[] = {0.1, 0.01, 0.001};

// Builds the op's objective for one matrix. Holds the inputs and the CPU references. spmv: the
// geometric mean of its f32 and f64 times; spmspv (f32): the geometric mean over `densities`
// (empty: kSpmspvTuneDensities).
std::unique_ptr<tuner::Objective> make_objective(Context& ctx, const std::string& op, const NamedMatrix& m,
                                                 const std::vector<double>& densities = {});

}  // namespace dbsparse::tools

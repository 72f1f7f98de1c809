#pragma once
// The SpMV search until the generic tuner lands: every candidate of the op's search space is
// checked against the CPU reference, timed, and stored as a trial; the best becomes the config.
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/tuning_db.hpp"
#include "tools/common/timing.hpp"

namespace dbsparse::tools {

struct SpmvTuneResult {
  std::string matrix;
  nlohmann::json best;
  double best_us = 0, default_us = 0;
  int trials = 0, failed = 0, reused = 0;
};

SpmvTuneResult tune_spmv(Context& ctx, TuningDb& db, const NamedMatrix& m, const std::string& matrix_fp,
                         const TimingOptions& timing);
void print_spmv_tune_table(const std::vector<SpmvTuneResult>& results);

}  // namespace dbsparse::tools

#pragma once
// `bench spmm --reduce mean,max,min`: SpMM's reductions (SpmmOptions::reduce) timed beside the sum,
// each checked against a CPU reference of the reduction first. cuSPARSE has no such reduction, so
// the yardstick is the same run's sum on the CSR path.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/matrix.hpp"
#include "dbsparse/spmm.hpp"
#include "dbsparse/tuning_db.hpp"
#include "tools/bench/timing.hpp"

namespace dbsparse::tools {

// A's reductions at width n in `dtype`: per reduction a plan (`config` when given, else the tuning
// DB's), its C checked (max / min against the exact products, mean against sum |a||b| / length, at
// f32's 1e-5 or 16 bits' 1e-2), then timed (max / min with run_arg writing the winning entries).
// One line printed each; returns one record each: reduce, us, over_sum (the sum's CSR time over
// this one), error, tolerance, correct.
nlohmann::json bench_spmm_reductions(Context& ctx, const Stream& stream, const CsrMatrix<float>& a, SpmmDtype dtype,
                                     int n, const std::vector<std::string>& reduces, const TimingOptions& timing,
                                     const Config* config, double sum_csr_us);

}  // namespace dbsparse::tools

#pragma once
// SpMM's plan-time trial (SpmmOptions::trial_ms): auto's tensor-core path against the CSR path,
// timed on A where the tuning DB has no recorded outcome for this matrix, device and width.
#include <functional>
#include <string>

#include "dbsparse/spmm.hpp"
#include "runtime/spmm/spmm_spec.hpp"

namespace dbsparse::spmm_detail {

using SpmmMake = std::function<SpmmPlan(SpmmSpec)>;
using SpmmNote = std::function<void(SpmmPlan&, std::string)>;

// The plan of `chosen` (auto's tensor-core spec) or of csr_spec(): the DB's recorded outcome, else
// the faster of the two timed within the budget (trial_budget_ms(trial_ms, nnz); none: `chosen`).
// note(plan, text) leaves what decided in the plan's explain.
SpmmPlan auto_by_trial(Context& ctx, const std::string& matrix_fp, int64_t nnz, double trial_ms, SpmmSpec chosen,
                       const std::function<SpmmSpec()>& csr_spec, const SpmmMake& make, const SpmmNote& note);

}  // namespace dbsparse::spmm_detail

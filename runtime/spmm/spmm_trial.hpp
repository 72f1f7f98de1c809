#pragma once
// SpMM's plan-time trial (SpmmOptions::trial_ms): auto's tensor-core path against the CSR path,
// or auto's degree order on the CSR path against A's own order, timed on A where the tuning DB has no recorded outcome for this matrix, device and width.
#include <functional>
#include <string>

#include "dbsparse/spmm.hpp"
#include "runtime/spmm/spmm_spec.hpp"

namespace dbsparse::spmm_detail {

using SpmmMake = std::function<SpmmPlan(SpmmSpec)>;
using SpmmNote = std::function<void(SpmmPlan&, std::string)>;

// A trial's two candidates: auto's spec and the alternative it is weighed against, each with the
// name the tuning DB records (the tensor-core path against "csr-cuda-core"; the CSR path in the
// degree order that reorder auto took, "csr-degree", against A's own order, "csr-none").
struct SpmmTrialPair {
  SpmmSpec chosen;
  std::string chosen_name;
  std::function<SpmmSpec()> alternative;
  std::string alternative_name;
};

// The plan of the chosen spec or of the alternative: the DB's recorded outcome (when it names
// either), else the faster of the two timed within the budget (trial_budget_ms(trial_ms, nnz);
// none: the chosen one). note(plan, text) leaves what decided in the plan's explain.
SpmmPlan auto_by_trial(Context& ctx, const std::string& matrix_fp, int64_t nnz, double trial_ms, SpmmTrialPair pair,
                       const SpmmMake& make, const SpmmNote& note);

}  // namespace dbsparse::spmm_detail

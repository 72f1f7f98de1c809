#pragma once
// Plan-time trials: where a plan's model cannot tell its top candidates apart, the plan times them
// on the real input, within a small budget, and the tuning DB keeps the outcome (PlanChoice) so
// that the next plan of the same matrix on the same device takes it without timing.
#include <functional>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse::detail {

// The default trial policy: on for problems of at least this many nonzeros, with this budget of
// device time (a caller's PlanTrials can turn it on for smaller ones, off, or give another budget).
inline constexpr int64_t kTrialMinNnz = 100000;
inline constexpr double kTrialDefaultMs = 20.0;

// The budget, in ms, a plan of nnz entries may spend on a trial: 0 for none. asked < 0: the
// default policy; 0: off; > 0: that budget whatever the size. $DBSPARSE_PLAN_TRIALS=0 turns the
// default policy off (benchmarks of the model alone).
double trial_budget_ms(double asked, int64_t nnz);

struct TrialRun {
  std::string name;
  std::function<void(void* stream)> run;  // enqueues one call
};

struct TrialResult {
  std::vector<double> us;  // per candidate, the median; +inf where it was not timed
  size_t best = 0;
  double spent_ms = 0;   // device time the trial took, warm-ups included
  bool complete = true;  // false: the first call alone passed the budget, nothing was compared
};

// Times each candidate on its own stream: a warm-up call, then up to 5 timed calls, stopping early
// when the budget is spent (each candidate gets at least its warm-up and one timed call). Where
// the first candidate's warm-up alone passes the budget, the trial stops there (complete = false,
// best = 0): a problem that large would pay several budgets for one comparison.
TrialResult time_candidates(Context& ctx, const std::vector<TrialRun>& runs, double budget_ms);

// The outcome as a PlanChoice for (this device, matrix, op, setting), times in detail["us"].
PlanChoice trial_choice(const Context& ctx, const std::string& matrix_fp, const std::string& op,
                        const std::string& setting, const std::vector<TrialRun>& runs, const TrialResult& r);

// One line for explain: the candidates' times and the winner.
std::string trial_text(const std::vector<TrialRun>& runs, const TrialResult& r);

}  // namespace dbsparse::detail

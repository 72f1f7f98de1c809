// The plan-time trials' budget policy (runtime/gpu/plan_trial.hpp): who gets a trial and how long.
#include <doctest/doctest.h>

#include <cstdlib>

#include "runtime/gpu/plan_trial.hpp"

using dbsparse::detail::kTrialDefaultMs;
using dbsparse::detail::kTrialMinNnz;
using dbsparse::detail::trial_budget_ms;

TEST_CASE("PlanTrialBudgetFollowsSizeAndAsk") {
  unsetenv("DBSPARSE_PLAN_TRIALS");
  CHECK(trial_budget_ms(-1, kTrialMinNnz) == kTrialDefaultMs);  // the default: large enough
  CHECK(trial_budget_ms(-1, kTrialMinNnz - 1) == 0);            // below the size: off
  CHECK(trial_budget_ms(0, 10 * kTrialMinNnz) == 0);            // off when told
  CHECK(trial_budget_ms(5, 10) == 5);                           // asked: any size, that budget
  setenv("DBSPARSE_PLAN_TRIALS", "0", 1);
  CHECK(trial_budget_ms(-1, 10 * kTrialMinNnz) == 0);  // the variable turns the default off...
  CHECK(trial_budget_ms(7, 10) == 7);                  // ...but not an explicit ask
  unsetenv("DBSPARSE_PLAN_TRIALS");
}

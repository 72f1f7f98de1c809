// dbtune's ETA (tools/dbtune/eta.hpp): bounded by what --total leaves, refined by the tuning's own
// pace, blind to the time spent before tuning began.
#include <doctest/doctest.h>

#include "tools/dbtune/eta.hpp"

using namespace dbsparse::tools;

TEST_CASE("DbtuneEtaBeforeAnyUnitIsTheBudgetsBoundedByTotal") {
  // 40 units of weight 1 at 2 s each would be 80 s; --total leaves 60 s: 60.
  CHECK(dbtune_eta_s({.weight = 40, .total_left_s = 60, .unit_budget_s = 2, .units_left = 40}) == doctest::Approx(60));
  // Plenty of --total: the budgets, 80 s.
  CHECK(dbtune_eta_s({.weight = 40, .total_left_s = 500, .unit_budget_s = 2, .units_left = 40}) == doctest::Approx(80));
}

TEST_CASE("DbtuneEtaFollowsThePaceOfTuningNotTheKernelPass") {
  // 10 of 40 weight done in 15 s of tuning: 1.5 s a unit, 45 s left by pace; a long kernel pass
  // before tuning only shrinks total_left, which still allows 60 s.
  CHECK(dbtune_eta_s({.tuning_elapsed_s = 15,
                      .weight_done = 10,
                      .weight = 40,
                      .total_left_s = 60,
                      .unit_budget_s = 2,
                      .units_left = 30}) == doctest::Approx(45));
  // A pace past what --total leaves is capped there.
  CHECK(dbtune_eta_s({.tuning_elapsed_s = 50,
                      .weight_done = 10,
                      .weight = 40,
                      .total_left_s = 30,
                      .unit_budget_s = 2,
                      .units_left = 30}) == doctest::Approx(30));
}

TEST_CASE("DbtuneEtaPastTotalIsEachUnitsFloor") {
  // --total spent: every unit left still gets kUnitFloorS.
  CHECK(dbtune_eta_s({.tuning_elapsed_s = 100,
                      .weight_done = 10,
                      .weight = 20,
                      .total_left_s = -5,
                      .unit_budget_s = 2,
                      .units_left = 10}) == doctest::Approx(10 * kUnitFloorS));
  CHECK(dbtune_eta_s({.weight_done = 5, .weight = 5, .total_left_s = 10, .unit_budget_s = 2}) == doctest::Approx(0));
}

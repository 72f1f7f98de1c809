// dbtune's ETA and unit budgets (tools/dbtune/eta.hpp): each unit's time outside its search, as
// measured or, before any unit, the prior, is set aside from what --total leaves; the searches'
// part is bounded by the rest and refined by their own pace (blind to the time before tuning began).
#include <doctest/doctest.h>

#include "tools/dbtune/eta.hpp"

using namespace dbsparse::tools;

TEST_CASE("DbtuneEtaBeforeAnyUnitIsTheBudgetsBoundedByTotalPlusThePrior") {
  // 40 units of weight 1 at 2 s each would be 80 s; --total leaves 60 s, of which the prior sets
  // 40 x 1.2 s aside: the searches get the other 12 s, the ETA is --total.
  CHECK(dbtune_eta_s({.weight = 40, .total_left_s = 60, .unit_budget_s = 2, .units_left = 40}) == doctest::Approx(60));
  // Too little --total for the prior's overhead: the units' floors on top of it.
  CHECK(dbtune_eta_s({.weight = 40, .total_left_s = 30, .unit_budget_s = 2, .units_left = 40}) ==
        doctest::Approx(40 * kUnitFloorS + 40 * kUnitOverheadPriorS));
  // Plenty of --total: the budgets, 80 s.
  CHECK(
      dbtune_eta_s({.weight = 40, .total_left_s = 500, .unit_budget_s = 2, .units_left = 40, .overhead_prior_s = 0}) ==
      doctest::Approx(80));
}

TEST_CASE("DbtuneEtaFollowsThePaceOfTheSearchesAndTheMeasuredOverhead") {
  // 10 of 40 weight done in 15 s of tuning, 5 s of it outside the searches: 1 s of search a unit
  // (30 s left), 0.5 s of overhead a unit (15 s for the 30 left).
  CHECK(dbtune_eta_s({.tuning_elapsed_s = 15,
                      .weight_done = 10,
                      .weight = 40,
                      .total_left_s = 60,
                      .unit_budget_s = 2,
                      .units_left = 30,
                      .units_done = 10,
                      .overhead_done_s = 5}) == doctest::Approx(30 + 15));
  // A search pace past what --total leaves is capped there, less the overhead set aside (1 s a
  // unit for 30 units takes all 30 s): the units' floors; the overhead is not cut.
  CHECK(dbtune_eta_s({.tuning_elapsed_s = 50,
                      .weight_done = 10,
                      .weight = 40,
                      .total_left_s = 30,
                      .unit_budget_s = 2,
                      .units_left = 30,
                      .units_done = 10,
                      .overhead_done_s = 10}) == doctest::Approx(30 * kUnitFloorS + 30));
}

TEST_CASE("DbtuneUnitBudgetSetsTheRestsOverheadAsideFromTotal") {
  CHECK(dbtune_unit_overhead_s(0, 0) == doctest::Approx(kUnitOverheadPriorS));
  CHECK(dbtune_unit_overhead_s(12, 10) == doctest::Approx(1.2));
  // 100 s left, 20 units left at 1 s each: 80 s for the searches, this unit's share a quarter.
  CHECK(dbtune_unit_budget_s(100, 0.25, 50, 20, 1.0) == doctest::Approx(20));
  // ... capped by --budget, and never below the floor when the overhead takes it all.
  CHECK(dbtune_unit_budget_s(100, 0.25, 6, 20, 1.0) == doctest::Approx(6));
  CHECK(dbtune_unit_budget_s(10, 0.25, 6, 20, 1.0) == doctest::Approx(kUnitFloorS));
  CHECK(dbtune_unit_budget_s(-5, 0.25, 6, 20, 1.0) == doctest::Approx(kUnitFloorS));
}

TEST_CASE("DbtuneEtaPastTotalIsEachUnitsFloorAndItsOverhead") {
  // --total spent: every unit left still gets kUnitFloorS, and its overhead (0 measured here).
  CHECK(dbtune_eta_s({.tuning_elapsed_s = 100,
                      .weight_done = 10,
                      .weight = 20,
                      .total_left_s = -5,
                      .unit_budget_s = 2,
                      .units_left = 10,
                      .units_done = 10}) == doctest::Approx(10 * kUnitFloorS));
  CHECK(dbtune_eta_s({.weight_done = 5, .weight = 5, .total_left_s = 10, .unit_budget_s = 2, .units_done = 5}) ==
        doctest::Approx(0));
}

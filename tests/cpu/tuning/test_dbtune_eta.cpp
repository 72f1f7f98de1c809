// dbtune's ETA (tools/dbtune/eta.hpp): the searches' part, bounded by what --total leaves and
// refined by their own pace (blind to the time before tuning began), plus each unit's time outside
// its search, as measured or, before any unit, the prior.
#include <doctest/doctest.h>

#include "tools/dbtune/eta.hpp"

using namespace dbsparse::tools;

TEST_CASE("DbtuneEtaBeforeAnyUnitIsTheBudgetsBoundedByTotalPlusThePrior") {
  // 40 units of weight 1 at 2 s each would be 80 s; --total leaves 60 s: 60, and 40 units of
  // the prior's overhead on top.
  CHECK(dbtune_eta_s({.weight = 40, .total_left_s = 60, .unit_budget_s = 2, .units_left = 40}) ==
        doctest::Approx(60 + 40 * kUnitOverheadPriorS));
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
  // A search pace past what --total leaves is capped there; the overhead is not (no budget cuts it).
  CHECK(dbtune_eta_s({.tuning_elapsed_s = 50,
                      .weight_done = 10,
                      .weight = 40,
                      .total_left_s = 30,
                      .unit_budget_s = 2,
                      .units_left = 30,
                      .units_done = 10,
                      .overhead_done_s = 10}) == doctest::Approx(30 + 30));
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

#pragma once
// dbtune's ETA for its tuning phase: the searches' part plus each unit's time outside its search.
// The searches keep to --total (each unit's search budget is cut to what is left, down to a floor
// of kUnitFloorS a unit), so the time left in --total bounds that part, refined by the searches'
// own pace. What a unit spends besides its search (loading or generating the matrix, plan-time
// conversion, the kernels its first trials wait for) is not cut: it is counted apart, as
// measured over the units done, or before any is done as kUnitOverheadPriorS a unit.
#include <algorithm>
#include <cstddef>

namespace dbsparse::tools {

constexpr double kUnitFloorS = 0.2;  // the least budget a unit gets however late the run is
// A (matrix, op) unit's time past its search budget before any unit has been measured: the mean
// of a measured `dbtune --quick` run (the figures: docs/decisions/dbtune-eta.md).
constexpr double kUnitOverheadPriorS = 1.2;

struct EtaInput {
  double tuning_elapsed_s = 0;         // since the first unit started
  double weight_done = 0, weight = 0;  // budget units done and in all
  double total_left_s = 0;             // --total minus the run's time so far (may be negative)
  double unit_budget_s = 0;            // the budget a unit of weight 1 gets at most (--budget)
  size_t units_left = 0;               // (matrix, op) units not started
  size_t units_done = 0;               // (matrix, op) units finished
  double overhead_done_s = 0;          // the finished units' time past their search budgets
  double overhead_prior_s = kUnitOverheadPriorS;
};

inline double dbtune_eta_s(const EtaInput& in) {
  const double remaining = std::max(in.weight - in.weight_done, 0.0);
  const double most = std::max(in.total_left_s, kUnitFloorS * static_cast<double>(in.units_left));
  const double search_elapsed = std::max(in.tuning_elapsed_s - in.overhead_done_s, 0.0);
  const double pace = in.weight_done > 0 ? search_elapsed / in.weight_done * remaining : in.unit_budget_s * remaining;
  const double per_unit =
      in.units_done > 0 ? std::max(in.overhead_done_s, 0.0) / static_cast<double>(in.units_done) : in.overhead_prior_s;
  return std::clamp(pace, 0.0, most) + per_unit * static_cast<double>(in.units_left);
}

}  // namespace dbsparse::tools

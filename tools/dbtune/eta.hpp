#pragma once
// dbtune's ETA and unit budgets for its tuning phase. What a unit spends besides its search
// (loading or generating the matrix, plan-time conversion, the kernels its first trials wait for)
// cannot be cut: it is estimated as measured over the units done, or before any is done as
// kUnitOverheadPriorS a unit, and set aside from --total; the searches share the rest (each unit's
// search down to a floor of kUnitFloorS), so --total bounds the phase's wall clock.
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

// A unit's expected time past its search budget: the finished units' mean, or the prior.
inline double dbtune_unit_overhead_s(double overhead_done_s, size_t units_done, double prior_s = kUnitOverheadPriorS) {
  return units_done > 0 ? std::max(overhead_done_s, 0.0) / static_cast<double>(units_done) : prior_s;
}

// The next unit's search budget: its share of what --total leaves once every unit not yet done
// (this one included) has its expected time past the search set aside, so that --total bounds
// the tuning phase's wall clock and not only its searches; at least kUnitFloorS, at most cap_s.
inline double dbtune_unit_budget_s(double total_left_s, double share, double cap_s, size_t units_left,
                                   double unit_overhead_s) {
  const double for_search = total_left_s - unit_overhead_s * static_cast<double>(units_left);
  return std::clamp(for_search * share, kUnitFloorS, std::max(cap_s, kUnitFloorS));
}

inline double dbtune_eta_s(const EtaInput& in) {
  const double remaining = std::max(in.weight - in.weight_done, 0.0);
  const double most = std::max(in.total_left_s, kUnitFloorS * static_cast<double>(in.units_left));
  const double search_elapsed = std::max(in.tuning_elapsed_s - in.overhead_done_s, 0.0);
  const double pace = in.weight_done > 0 ? search_elapsed / in.weight_done * remaining : in.unit_budget_s * remaining;
  const double per_unit = dbtune_unit_overhead_s(in.overhead_done_s, in.units_done, in.overhead_prior_s);
  const double rest = per_unit * static_cast<double>(in.units_left);
  // The searches get what --total leaves after the rest's overhead (dbtune_unit_budget_s).
  return std::clamp(pace, 0.0, std::max(most - rest, kUnitFloorS * static_cast<double>(in.units_left))) + rest;
}

}  // namespace dbsparse::tools

#pragma once
// dbtune's ETA for its tuning phase. The run keeps to --total (each unit's budget is cut to what
// is left, down to a floor of kUnitFloorS a unit), so the time left in --total bounds the ETA; the
// pace of the units done so far, measured from the start of tuning (not of the run: the profile
// and the kernel pass before it say nothing of the pace), refines it.
#include <algorithm>
#include <cstddef>

namespace dbsparse::tools {

constexpr double kUnitFloorS = 0.2;  // the least budget a unit gets however late the run is

struct EtaInput {
  double tuning_elapsed_s = 0;         // since the first unit started
  double weight_done = 0, weight = 0;  // budget units done and in all
  double total_left_s = 0;             // --total minus the run's time so far (may be negative)
  double unit_budget_s = 0;            // the budget a unit of weight 1 gets at most (--budget)
  size_t units_left = 0;               // (matrix, op) units not started
};

inline double dbtune_eta_s(const EtaInput& in) {
  const double remaining = std::max(in.weight - in.weight_done, 0.0);
  const double most = std::max(in.total_left_s, kUnitFloorS * static_cast<double>(in.units_left));
  const double pace =
      in.weight_done > 0 ? in.tuning_elapsed_s / in.weight_done * remaining : in.unit_budget_s * remaining;
  return std::clamp(pace, 0.0, most);
}

}  // namespace dbsparse::tools

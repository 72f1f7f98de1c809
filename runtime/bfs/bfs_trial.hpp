#pragma once
// BFS's plan-time choice of its direction policy (docs/decisions/plan-trials.md): on graphs of at
// least the trial's size, the direction-optimising plan is timed against the push-only plan on the
// graph itself, the tuning DB keeping the outcome; below that size auto takes push only.
#include <functional>
#include <string>
#include <vector>

#include "dbsparse/bfs.hpp"
#include "dbsparse/graph.hpp"

namespace dbsparse::detail {

// The trial's second candidate: the push-only plan (its own search variant, which never weighs a
// pull).
inline constexpr const char* kBfsPushOnly = "push";

using BfsNote = std::function<void(BfsPlan&, std::string)>;

// The auto plan or push_plan(): the tuning DB's recorded outcome, else the faster of the two on
// BFSs from `sources` within the budget (trial_budget_ms(trial_ms, entries); none: the auto plan);
// note(plan, text) leaves what decided in its explain.
BfsPlan bfs_direction_by_trial(Context& ctx, BfsPlan auto_plan, const std::function<BfsPlan()>& push_plan,
                               const BfsNote& note, const std::string& matrix_fp, const std::vector<int32_t>& sources,
                               int64_t entries, double trial_ms);

// The trial's sources: up to kTrialSources vertices with out-edges (g: the push view), drawn by a
// fixed generator, as a user's searches start anywhere (a hub alone would favour pulling). Eight:
// on some graphs the direction policy's time varies several-fold from source to source while
// push's does not.
constexpr size_t kTrialSources = 8;
std::vector<int32_t> bfs_trial_sources(const PatternGraph& g);

// Auto on a graph below the trial's size, with nothing tuned or asked: push only. On such graphs
// the direction policy's per-level work costs more than its pulls save.
bool bfs_small_auto_takes_push(const BfsOptions& opt, const Config& config, int64_t entries);

}  // namespace dbsparse::detail

#include "runtime/bfs/bfs_trial.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/gpu/plan_trial.hpp"

namespace dbsparse::detail {

std::vector<int32_t> bfs_trial_sources(const PatternGraph& g) {
  std::vector<int32_t> out;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int tries = 0; tries < 256 && out.size() < kTrialSources && g.n > 0; ++tries) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const auto v = static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(g.n));
    if (g.row_ptr[v + 1] > g.row_ptr[v] && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

namespace {

// The push-only plan, built once the auto plan's memory is given back. A push plan built beside a
// live auto plan ran its searches slower than one built alone, with the same kernel and grid
// (docs/decisions/plan-trials.md): the kept plan is laid out as a push plan built on its own.
BfsPlan push_after_freeing(BfsPlan auto_plan, const std::function<BfsPlan()>& push_plan) {
  { BfsPlan drop = std::move(auto_plan); }
  return push_plan();
}

}  // namespace

bool bfs_small_auto_takes_push(const BfsOptions& opt, const Config& config, int64_t entries) {
  return opt.direction == BfsDirection::Auto && !opt.config && !opt.profile && opt.trial_ms < 0 &&
         config.source != ConfigSource::Tuned && entries < kTrialMinNnz;
}

BfsPlan bfs_direction_by_trial(Context& ctx, BfsPlan auto_plan, const std::function<BfsPlan()>& push_plan,
                               const BfsNote& note, const std::string& matrix_fp, const std::vector<int32_t>& sources,
                               int64_t entries, double trial_ms) {
  const std::string dev = ctx.device().record().fingerprint;
  if (auto rec = lookup_plan_choice(dev, matrix_fp, "bfs", "")) {
    if (rec->choice != kBfsPushOnly) {
      note(auto_plan, fmt::format("trial recorded in the tuning DB: {} ({})", rec->choice, rec->detail.dump()));
      return auto_plan;
    }
    BfsPlan kept = push_after_freeing(std::move(auto_plan), push_plan);
    note(kept, fmt::format("trial recorded in the tuning DB: {} ({})", rec->choice, rec->detail.dump()));
    return kept;
  }
  const double budget = trial_budget_ms(trial_ms, entries);
  if (budget <= 0 || sources.empty()) return auto_plan;
  BfsPlan push = push_plan();
  DeviceBuffer<int32_t> levels(static_cast<size_t>(std::max(auto_plan.stats().vertices, 1)));
  auto all_sources = [&](const BfsPlan& b, void* stream) {
    for (int32_t s : sources) b.run(s, levels.ptr(), 0, stream);
  };
  const std::vector<TrialRun> runs = {
      {"auto", [&](void* s) { all_sources(auto_plan, s); }},
      {kBfsPushOnly, [&](void* s) { all_sources(push, s); }},
  };
  const TrialResult r = time_candidates(ctx, runs, budget);
  if (!r.complete) {
    note(auto_plan,
         fmt::format("no trial: one round of searches took {:.1f} ms, past the {:.0f} ms budget", r.spent_ms, budget));
    return auto_plan;
  }
  std::string why;
  const bool recorded = record_plan_choice(trial_choice(ctx, matrix_fp, "bfs", "", runs, r), &why);
  const std::string text = fmt::format("plan-time trial over {} sources: {}{}", sources.size(), trial_text(runs, r),
                                       recorded ? "" : "; not recorded: " + why);
  if (r.best == 0) {
    note(auto_plan, text);
    return auto_plan;
  }
  { BfsPlan drop = std::move(push); }
  BfsPlan kept = push_after_freeing(std::move(auto_plan), push_plan);
  note(kept, text);
  return kept;
}

}  // namespace dbsparse::detail

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

// The trial's winner, noted: the auto plan, or a push-only plan built after both are freed.
BfsPlan keep_winner(bool push_wins, BfsPlan auto_plan, BfsPlan push, const std::function<BfsPlan()>& push_plan,
                    const BfsNote& note, const std::string& text) {
  if (!push_wins) {
    note(auto_plan, text);
    return auto_plan;
  }
  { BfsPlan drop = std::move(push); }
  BfsPlan kept = push_after_freeing(std::move(auto_plan), push_plan);
  note(kept, text);
  return kept;
}

// One search of `plan` from `source` on s, in ms of device time.
double search_ms(const BfsPlan& plan, int32_t source, DeviceBuffer<int32_t>& levels, const Stream& s) {
  Event a, b;
  a.record(s);
  plan.run(source, levels.ptr(), 0, s.handle());
  b.record(s);
  b.synchronize();
  return b.elapsed_ms_since(a);
}

// Searches too long for the trial's rounds: one search of each plan per source, in turn, while
// the next pair fits the budget (the auto plan's first search, already timed, opens it). The sums
// over the sources both plans searched decide.
struct Duel {
  int pairs = 0;
  double auto_ms = 0, push_ms = 0, spent_ms = 0;
};
Duel duel(const BfsPlan& auto_plan, const BfsPlan& push, const std::vector<int32_t>& sources, double first_auto_ms,
          DeviceBuffer<int32_t>& levels, const Stream& s, double budget) {
  Duel d;
  d.spent_ms = first_auto_ms;
  double next_auto = first_auto_ms;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (i > 0) {
      const double pair = d.pairs > 0 ? (d.auto_ms + d.push_ms) / d.pairs : 2 * first_auto_ms;
      if (d.spent_ms + pair > budget) break;
      next_auto = search_ms(auto_plan, sources[i], levels, s);
      d.spent_ms += next_auto;
    }
    const double p = search_ms(push, sources[i], levels, s);
    d.spent_ms += p;
    d.auto_ms += next_auto;
    d.push_ms += p;
    ++d.pairs;
  }
  return d;
}

// The duel's outcome, recorded and noted.
BfsPlan decide_by_duel(Context& ctx, BfsPlan auto_plan, BfsPlan push, const std::function<BfsPlan()>& push_plan,
                       const BfsNote& note, const std::string& matrix_fp, const std::vector<int32_t>& sources,
                       double first, DeviceBuffer<int32_t>& levels, const Stream& s, double budget) {
  const std::string dev = ctx.device().record().fingerprint;
  const Duel d = duel(auto_plan, push, sources, first, levels, s, budget);
  const bool push_wins = d.push_ms < d.auto_ms;
  PlanChoice c{dev, matrix_fp, "bfs", "", push_wins ? kBfsPushOnly : "auto", {}};
  c.detail = {{"sources", d.pairs},
              {"us", {{"auto", 1e3 * d.auto_ms}, {kBfsPushOnly, 1e3 * d.push_ms}}},
              {"spent_ms", d.spent_ms}};
  std::string why;
  const bool recorded = record_plan_choice(c, &why);
  return keep_winner(
      push_wins, std::move(auto_plan), std::move(push), push_plan, note,
      fmt::format("plan-time trial over {} source(s), one search each: auto {:.1f} us, push {:.1f} us -> {} "
                  "({:.1f} ms of trial){}",
                  d.pairs, 1e3 * d.auto_ms, 1e3 * d.push_ms, c.choice, d.spent_ms,
                  recorded ? "" : "; not recorded: " + why));
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
  DeviceBuffer<int32_t> levels(static_cast<size_t>(std::max(auto_plan.stats().vertices, 1)));
  ctx.make_current();
  const Stream probe_stream(ctx);
  // The auto plan's first search says whether the trial's rounds (a warm-up and a timed round of
  // both plans over every source, at the least) fit the budget; if not, the duel; if not even
  // one search of each fits, no trial.
  const double first = search_ms(auto_plan, sources[0], levels, probe_stream);
  if (2 * first > budget) {
    note(auto_plan, fmt::format("no trial: one search took {:.1f} ms, past half the {:.0f} ms budget", first, budget));
    return auto_plan;
  }
  BfsPlan push = push_plan();
  if (4 * first * static_cast<double>(sources.size()) > budget) {
    return decide_by_duel(ctx, std::move(auto_plan), std::move(push), push_plan, note, matrix_fp, sources, first,
                          levels, probe_stream, budget);
  }
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
  return keep_winner(r.best != 0, std::move(auto_plan), std::move(push), push_plan, note,
                     fmt::format("plan-time trial over {} sources: {}{}", sources.size(), trial_text(runs, r),
                                 recorded ? "" : "; not recorded: " + why));
}

}  // namespace dbsparse::detail

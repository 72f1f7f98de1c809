#include "runtime/spmm/spmm_trial.hpp"

#include <fmt/format.h>

#include "runtime/gpu/plan_trial.hpp"

namespace dbsparse::spmm_detail {
namespace {

// B and C of a trial (zeros: the kernels' time does not depend on the values) are left out above
// this many bytes; such a plan keeps auto's path untimed.
constexpr int64_t kTrialBufferBytes = int64_t{512} << 20;

}  // namespace

SpmmPlan auto_by_trial(Context& ctx, const std::string& matrix_fp, int64_t nnz, double trial_ms, SpmmTrialPair pair,
                       const SpmmMake& make, const SpmmNote& note) {
  SpmmSpec& chosen = pair.chosen;
  // Max and min run kernels of their own: their outcomes are recorded apart from the sum's (and
  // the mean's, which runs the sum's kernels).
  const std::string setting =
      fmt::format("n{}.{}{}", chosen.n, to_string(chosen.dtype),
                  extreme_kernel(chosen.reduce) ? std::string(".") + to_string(chosen.reduce) : std::string());
  const std::string dev = ctx.device().record().fingerprint;
  const auto rec = lookup_plan_choice(dev, matrix_fp, "spmm", setting);
  if (rec && (rec->choice == pair.chosen_name || rec->choice == pair.alternative_name)) {
    const std::string text = fmt::format("trial recorded in the tuning DB: {} ({})", rec->choice, rec->detail.dump());
    SpmmPlan p = rec->choice == pair.alternative_name ? make(pair.alternative()) : make(std::move(chosen));
    note(p, text);
    return p;
  }
  const int esize = spmm_value_bytes(chosen.dtype);
  const int64_t buffer_bytes = (int64_t{chosen.rows} + chosen.cols) * chosen.n * esize;
  const double budget = detail::trial_budget_ms(trial_ms, nnz);
  if (budget <= 0 || buffer_bytes > kTrialBufferBytes) {
    SpmmPlan p = make(std::move(chosen));
    if (budget > 0) note(p, fmt::format("no trial: B and C would take {} bytes", buffer_bytes));
    return p;
  }
  SpmmPlan first = make(std::move(chosen));
  SpmmPlan second = make(pair.alternative());
  DeviceAllocation b(static_cast<size_t>(int64_t{first.cols()} * first.n_cols() * esize) + 16),
      c(static_cast<size_t>(int64_t{first.rows()} * first.n_cols() * esize) + 16);
  b.memset8(0);
  c.memset8(0);
  const std::vector<detail::TrialRun> runs = {
      {pair.chosen_name, [&](void* s) { first.run(b.ptr(), c.ptr(), s); }},
      {pair.alternative_name, [&](void* s) { second.run(b.ptr(), c.ptr(), s); }},
  };
  const detail::TrialResult r = detail::time_candidates(ctx, runs, budget);
  if (!r.complete) {
    note(first, fmt::format("no trial: one call took {:.1f} ms, past the {:.0f} ms budget", r.spent_ms, budget));
    return first;
  }
  std::string why;
  const bool kept = record_plan_choice(detail::trial_choice(ctx, matrix_fp, "spmm", setting, runs, r), &why);
  const std::string text =
      fmt::format("plan-time trial: {}{}", detail::trial_text(runs, r), kept ? "" : "; not recorded: " + why);
  SpmmPlan& won = r.best == 0 ? first : second;
  note(won, text);
  return std::move(won);
}

}  // namespace dbsparse::spmm_detail

#include "runtime/gpu/plan_trial.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace dbsparse::detail {

double trial_budget_ms(double asked, int64_t nnz) {
  if (asked > 0) return asked;
  if (asked == 0) return 0;
  if (const char* env = std::getenv("DBSPARSE_PLAN_TRIALS"); env && std::string(env) == "0") return 0;
  return nnz >= kTrialMinNnz ? kTrialDefaultMs : 0;
}

TrialResult time_candidates(Context& ctx, const std::vector<TrialRun>& runs, double budget_ms) {
  ctx.make_current();
  Stream s(ctx);
  Event a, b;
  TrialResult r;
  r.us.assign(runs.size(), std::numeric_limits<double>::infinity());
  std::vector<std::vector<double>> t(runs.size());
  // Warm-ups and one timed call each, round-robin after that, so that a budget cut leaves every
  // candidate timed alike.
  for (int rep = 0; rep < 6; ++rep) {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (rep >= 2 && r.spent_ms >= budget_ms) break;
      a.record(s);
      runs[i].run(s.handle());
      b.record(s);
      b.synchronize();
      const double ms = b.elapsed_ms_since(a);
      r.spent_ms += ms;
      if (rep > 0) t[i].push_back(ms * 1e3);
      if (rep == 0 && i == 0 && r.spent_ms > budget_ms) {
        r.complete = false;
        return r;
      }
    }
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    auto& v = t[i];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    r.us[i] = v[v.size() / 2];
    if (r.us[i] < r.us[r.best]) r.best = i;
  }
  return r;
}

PlanChoice trial_choice(const Context& ctx, const std::string& matrix_fp, const std::string& op,
                        const std::string& setting, const std::vector<TrialRun>& runs, const TrialResult& r) {
  PlanChoice c;
  c.device_fp = ctx.device().record().fingerprint;
  c.matrix_fp = matrix_fp;
  c.op = op;
  c.setting = setting;
  c.choice = runs[r.best].name;
  nlohmann::json us = nlohmann::json::object();
  for (size_t i = 0; i < runs.size(); ++i)
    if (std::isfinite(r.us[i])) us[runs[i].name] = r.us[i];
  c.detail = {{"us", us}, {"spent_ms", r.spent_ms}};
  return c;
}

std::string trial_text(const std::vector<TrialRun>& runs, const TrialResult& r) {
  std::string out;
  for (size_t i = 0; i < runs.size(); ++i)
    out += fmt::format("{}{} {:.1f} us", out.empty() ? "" : ", ", runs[i].name, r.us[i]);
  return fmt::format("{} -> {} ({:.1f} ms of trial)", out, runs[r.best].name, r.spent_ms);
}

}  // namespace dbsparse::detail

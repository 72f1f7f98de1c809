#include "tools/bench/check_auto.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "tools/bench/stats.hpp"

namespace dbsparse::tools {

std::vector<AutoCheck> group_auto_checks(const std::string& op, const std::vector<TimedRow>& rows,
                                         const std::string& auto_impl,
                                         const std::function<bool(const std::string& impl)>& is_forced) {
  std::vector<AutoCheck> groups;
  std::map<std::pair<std::string, std::string>, size_t> index;  // (matrix, setting) -> groups
  std::vector<bool> auto_rechecked;                             // by group
  std::vector<std::vector<bool>> forced_rechecked;              // by group, as c.forced
  for (const auto& r : rows) {
    if (!(r.us > 0)) continue;
    const bool is_auto = r.impl == auto_impl;
    if (!is_auto && !is_forced(r.impl)) continue;
    auto [it, fresh] = index.try_emplace({r.matrix, r.setting}, groups.size());
    if (fresh) {
      groups.push_back(AutoCheck{op, r.matrix, r.setting});
      auto_rechecked.push_back(false);
      forced_rechecked.emplace_back();
    }
    AutoCheck& c = groups[it->second];
    if (is_auto) {
      c.auto_us = r.us;
      c.auto_choice = r.choice;
      auto_rechecked[it->second] = r.rechecked;
    } else {
      c.forced.emplace_back(r.impl, r.us);
      forced_rechecked[it->second].push_back(r.rechecked);
    }
  }
  std::vector<AutoCheck> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    AutoCheck& c = groups[g];
    if (auto_rechecked[g]) {  // only the rows of the same interleaved timing
      std::vector<std::pair<std::string, double>> kept;
      for (size_t i = 0; i < c.forced.size(); ++i)
        if (forced_rechecked[g][i]) kept.push_back(c.forced[i]);
      if (!kept.empty()) c.forced = std::move(kept);
    }
    if (!(c.auto_us > 0) || c.forced.empty()) continue;
    const auto best = std::min_element(c.forced.begin(), c.forced.end(),
                                       [](const auto& p, const auto& q) { return p.second < q.second; });
    c.best_name = best->first;
    c.best_us = best->second;
    c.ratio = c.best_us / c.auto_us;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<size_t> recheck_candidates(size_t auto_index, const std::vector<double>& us,
                                       const std::vector<bool>& forced, double margin) {
  if (auto_index >= us.size() || !(us[auto_index] > 0)) return {};
  double best = 0;
  for (size_t i = 0; i < us.size(); ++i)
    if (forced[i] && us[i] > 0 && (best == 0 || us[i] < best)) best = us[i];
  if (best == 0) return {};
  std::vector<size_t> out{auto_index};
  for (size_t i = 0; i < us.size(); ++i)
    if (i != auto_index && forced[i] && us[i] > 0 && us[i] <= margin * best) out.push_back(i);
  return out;
}

void sort_worst_first(std::vector<AutoCheck>& checks) {
  std::stable_sort(checks.begin(), checks.end(), [](const AutoCheck& p, const AutoCheck& q) {
    return std::tie(p.ratio, p.op, p.matrix, p.setting) < std::tie(q.ratio, q.op, q.matrix, q.setting);
  });
}

AutoCheckSummary summarize_auto_checks(const std::vector<AutoCheck>& checks) {
  AutoCheckSummary s;
  std::vector<double> ratios;
  for (const auto& c : checks) {
    ++s.pairs;
    if (c.ratio >= kAutoCheckWithin) ++s.within;
    ratios.push_back(c.ratio);
    if (!s.worst || c.ratio < s.worst->ratio) s.worst = &c;
  }
  s.share_within = s.pairs ? double(s.within) / double(s.pairs) : 0.0;
  s.geomean = geomean(ratios);
  return s;
}

namespace {

std::string clip(const std::string& s, size_t n) { return s.size() > n ? s.substr(0, n - 3) + "..." : s; }

// "push 10.0, pull 20.0": the forced paths' times in the order they ran.
std::string forced_list(const AutoCheck& c) {
  std::string out;
  for (const auto& [name, us] : c.forced) out += fmt::format("{}{} {:.1f}", out.empty() ? "" : ", ", name, us);
  return out;
}

}  // namespace

std::string auto_check_report(const std::vector<AutoCheck>& checks) {
  std::string out = fmt::format(
      "\ncheck-auto: auto against the best forced path in the same run (ratio = best forced us / auto us; "
      "< 1: auto is slower)\n{:<7} {:<36} {:<14} {:>10} {:<16} {:<24} {:>10} {:>6}  {}\n",
      "op", "matrix", "setting", "auto us", "auto took", "best forced", "best us", "ratio", "forced paths (us)");
  for (const auto& c : checks)
    out += fmt::format("{:<7} {:<36} {:<14} {:>10.1f} {:<16} {:<24} {:>10.1f} {:>6.3f}  {}\n", c.op, clip(c.matrix, 36),
                       c.setting, c.auto_us, clip(c.auto_choice, 16), clip(c.best_name, 24), c.best_us, c.ratio,
                       forced_list(c));
  const AutoCheckSummary s = summarize_auto_checks(checks);
  if (!s.worst) return out + "check-auto summary: no pair had both an auto row and a forced row\n";
  const AutoCheck& w = *s.worst;
  out += fmt::format(
      "check-auto summary: {} pairs, {} ({:.0f}%) with auto / best forced >= {:.2f}; worst {:.3f} ({} {}{}{}: auto "
      "{:.1f} us, {} {:.1f} us); geomean {:.3f}\n",
      s.pairs, s.within, 100.0 * s.share_within, kAutoCheckWithin, w.ratio, w.op, w.matrix,
      w.setting.empty() ? "" : " ", w.setting, w.auto_us, w.best_name, w.best_us, s.geomean);
  return out;
}

nlohmann::json auto_check_json(const std::vector<AutoCheck>& checks) {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& c : checks) {
    nlohmann::json forced = nlohmann::json::array();
    for (const auto& [name, us] : c.forced) forced.push_back({{"impl", name}, {"us", us}});
    pairs.push_back({{"op", c.op},
                     {"matrix", c.matrix},
                     {"setting", c.setting},
                     {"auto_us", c.auto_us},
                     {"auto_choice", c.auto_choice},
                     {"best_forced", c.best_name},
                     {"best_forced_us", c.best_us},
                     {"ratio", c.ratio},
                     {"forced", forced}});
  }
  const AutoCheckSummary s = summarize_auto_checks(checks);
  nlohmann::json summary = {
      {"pairs", s.pairs},           {"threshold", kAutoCheckWithin},
      {"within", s.within},         {"share_within", s.share_within},
      {"geomean_ratio", s.geomean}, {"ratio", "best forced us / auto us (1: auto as fast as the best; < 1: slower)"}};
  if (s.worst)
    summary["worst"] = {
        {"op", s.worst->op}, {"matrix", s.worst->matrix}, {"setting", s.worst->setting}, {"ratio", s.worst->ratio}};
  return {{"pairs", pairs}, {"summary", summary}};
}

}  // namespace dbsparse::tools

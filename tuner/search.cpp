#include "tuner/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

namespace dbsparse::tuner {
namespace {

class Runner {
 public:
  Runner(const Objective& o, const Recall& r, const Record& w, const SearchOptions& opt)
      : opt_(opt), objective_(o), recall_(r), record_(w) {
    if (!opt_.clock) {
      opt_.clock = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
      };
    }
    start_ = opt_.clock();
  }

  bool halted() {
    if (opt_.stop && opt_.stop())
      result.stopped = true;
    else if (opt_.clock() - start_ >= opt_.budget_s)
      result.out_of_budget = true;
    return result.stopped || result.out_of_budget;
  }

  // Time of `config` (infinity when it failed or could not be measured), first from the store,
  // else measured with `samples` and stored; `remeasure` races a survivor again with more samples.
  double time_of(const nlohmann::json& config, int samples, bool remeasure = false) {
    const std::string key = config.dump();
    if (!remeasure) {
      if (auto it = known_.find(key); it != known_.end()) return it->second;
      if (recall_) {
        if (auto m = recall_(config)) {
          ++result.recalled;
          recalled_.insert(key);
          return known_[key] = m->status == TrialStatus::Ok ? m->time_us : INFINITY;
        }
      }
    } else if (recalled_.count(key)) {
      return known_[key];  // stored by an earlier run: not measured again
    }
    if (halted()) return known_.count(key) ? known_[key] : INFINITY;
    Measurement m = objective_(config, samples);
    ++result.measured;
    if (m.status != TrialStatus::Ok) ++result.failed;
    if (record_) record_(config, m);
    if (opt_.progress)
      opt_.progress(fmt::format(
          "{} -> {}", key,
          m.status == TrialStatus::Ok ? fmt::format("{:.1f} us", m.time_us) : std::string(to_string(m.status))));
    return known_[key] = m.status == TrialStatus::Ok ? m.time_us : INFINITY;
  }

  // Successive halving over `cands`: returns the index of the fastest (or -1 if none ran).
  int race(const std::vector<nlohmann::json>& cands) {
    std::vector<int> alive(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) alive[i] = static_cast<int>(i);
    int samples = opt_.base_samples;
    for (int round = 0; round < opt_.rounds && !alive.empty(); ++round, samples *= 2) {
      for (int i : alive) time_of(cands[i], samples, round > 0);
      std::sort(alive.begin(), alive.end(), [&](int a, int b) { return known(cands[a]) < known(cands[b]); });
      alive.erase(std::remove_if(alive.begin(), alive.end(), [&](int i) { return !std::isfinite(known(cands[i])); }),
                  alive.end());
      if (alive.size() <= 1 || halted()) break;
      alive.resize((alive.size() + 1) / 2);
    }
    int best = -1;
    for (size_t i = 0; i < cands.size(); ++i)
      if (std::isfinite(known(cands[i])) && (best < 0 || known(cands[i]) < known(cands[best])))
        best = static_cast<int>(i);
    return best;
  }

  double known(const nlohmann::json& c) const {
    auto it = known_.find(c.dump());
    return it == known_.end() ? INFINITY : it->second;
  }

  SearchResult result;

 private:
  SearchOptions opt_;
  const Objective& objective_;
  const Recall& recall_;
  const Record& record_;
  double start_ = 0;
  std::map<std::string, double> known_;
  std::set<std::string> recalled_;
};

// Every constrained grid point, or nothing when there are more than `limit`.
std::vector<nlohmann::json> grid(const SearchSpace& s, double limit) {
  std::vector<nlohmann::json> out{s.defaults};
  for (const auto& p : s.params) {
    std::vector<nlohmann::json> next;
    for (const auto& base : out)
      for (const auto& v : p.values) {
        auto c = base;
        c[p.name] = v;
        next.push_back(std::move(c));
      }
    out = std::move(next);
    if (static_cast<double>(out.size()) > limit * 64) return {};  // far too big: do not build it
  }
  std::erase_if(out, [&](const nlohmann::json& c) { return !s.can_implement(c); });
  if (static_cast<double>(out.size()) > limit) return {};
  return out;
}

}  // namespace

SearchResult search(const SearchSpace& space, const Objective& objective, const Recall& recall, const Record& record,
                    const SearchOptions& options) {
  Runner r(objective, recall, record, options);
  const nlohmann::json defaults = space.complete(nlohmann::json::object());
  r.result.default_us = r.time_of(defaults, options.base_samples * 4);
  nlohmann::json current = defaults;
  double current_us = r.result.default_us;
  if (!space.seeds.empty()) {
    std::vector<nlohmann::json> cands{defaults};
    for (const auto& seed : space.seeds) {
      nlohmann::json c = space.complete(seed);
      if (c != defaults && space.can_implement(c)) cands.push_back(std::move(c));
    }
    const int i = cands.size() > 1 ? r.race(cands) : -1;
    if (i > 0 && r.known(cands[i]) < current_us * (1.0 - options.min_gain)) {
      current = cands[i];
      current_us = r.known(cands[i]);
    } else if (std::isfinite(r.known(current))) {
      current_us = r.known(current);
    }
  }

  if (auto all = grid(space, options.max_exhaustive); !all.empty()) {
    r.result.strategy = "exhaustive";
    const int i = r.race(all);
    if (i >= 0 && r.known(all[i]) < current_us) current = all[i], current_us = r.known(all[i]);
  } else {
    r.result.strategy = "coordinate descent";
    for (bool moved = true; moved && !r.halted();) {
      moved = false;
      for (const auto& p : space.params) {
        std::vector<nlohmann::json> cands{current};
        for (const auto& v : p.values) {
          if (current.at(p.name) == v) continue;
          auto c = current;
          c[p.name] = v;
          if (space.can_implement(c)) cands.push_back(std::move(c));
        }
        if (cands.size() == 1) continue;
        const int i = r.race(cands);
        if (i > 0 && r.known(cands[i]) < current_us * (1.0 - options.min_gain)) {
          current = cands[i];
          current_us = r.known(cands[i]);
          moved = true;
        } else if (std::isfinite(r.known(current))) {
          current_us = r.known(current);  // the race may have refined the current config's time
        }
        if (r.halted()) break;
      }
    }
  }
  r.result.best = current;
  r.result.best_us = current_us;
  return r.result;
}

}  // namespace dbsparse::tuner

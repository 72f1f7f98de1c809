#pragma once
// The generic search over an op's declared space (search_space.hpp). Pure: measuring, storing and
// the clock come in as callbacks, so the strategies are tested against synthetic objectives.
//   exhaustive   when the constrained grid has at most max_exhaustive points;
//   coordinate descent from the defaults otherwise: one parameter at a time, its candidates raced
//     by successive halving (all measured with few samples, the better half again with twice as
//     many, ...), the winner kept when it beats the current config by more than min_gain.
// Either strategy starts from the fastest of the defaults and the space's seeds (raced first).
// Every strategy stops at the time budget and resumes: a config with a stored trial is recalled,
// never measured again.
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dbsparse/tuning_db.hpp"
#include "tuner/search_space.hpp"

namespace dbsparse::tuner {

struct Measurement {
  TrialStatus status = TrialStatus::Ok;
  double time_us = 0;
  std::string detail;
};

using Objective = std::function<Measurement(const nlohmann::json& config, int samples)>;
using Recall = std::function<std::optional<Measurement>(const nlohmann::json& config)>;
using Record = std::function<void(const nlohmann::json& config, const Measurement& m)>;

struct SearchOptions {
  double budget_s = 60;           // per (matrix, op)
  double max_exhaustive = 24;     // grid points, after constraints
  int base_samples = 3;           // successive halving: samples in the first round
  int rounds = 3;                 // at most; the sample count doubles each round
  double min_gain = 0.01;         // coordinate descent moves only for more than 1%
  std::function<double()> clock;  // seconds; default: steady clock
  std::function<bool()> stop;     // e.g. Ctrl-C; checked before each measurement
  std::function<void(const std::string&)> progress;
};

struct SearchResult {
  std::string strategy;  // "exhaustive" or "coordinate descent"
  nlohmann::json best;   // complete config
  double best_us = 0, default_us = 0;
  int measured = 0, recalled = 0, failed = 0;
  bool out_of_budget = false, stopped = false;
};

SearchResult search(const SearchSpace& space, const Objective& objective, const Recall& recall, const Record& record,
                    const SearchOptions& options);

}  // namespace dbsparse::tuner

#pragma once
// Search spaces as data: each op declares its tunable parameters (candidate values, or a range
// with a log or linear grid), the constraints between them and its defaults in one place. The
// tuner walks the space; plans check a config against it (can_implement) before using it.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dbsparse::tuner {

struct ParamSpec {
  std::string name;
  std::vector<nlohmann::json> values;  // candidates in order (ranges are expanded into a grid)
  std::string doc;                     // what it controls, for help text and explain

  // A range [lo, hi] of `points` values, evenly spaced on a log or a linear scale; integers when
  // `integer` is set (duplicates after rounding are dropped).
  static ParamSpec range(std::string name, double lo, double hi, int points, bool log, bool integer,
                         std::string doc);
  static ParamSpec choice(std::string name, std::vector<nlohmann::json> values, std::string doc);
};

struct Constraint {
  std::string text;  // shown when a config breaks it, e.g. "th0 < th1"
  std::function<bool(const nlohmann::json& config)> holds;
};

struct SearchSpace {
  std::string op;
  std::vector<ParamSpec> params;
  std::vector<Constraint> constraints;
  nlohmann::json defaults;  // a complete config (default_params(op))

  // The defaults with `partial` laid over them.
  nlohmann::json complete(const nlohmann::json& partial) const;
  // True when every constraint holds; otherwise false with the broken one in *why.
  bool can_implement(const nlohmann::json& config, std::string* why = nullptr) const;
  // Points of the full grid (product of the candidate counts), constraints not applied.
  double size() const;
  const ParamSpec* find(const std::string& name) const;
};

// The declared space of a known op ("spmv", "spmspv"); throws UsageError for any other.
const SearchSpace& search_space(const std::string& op);
std::vector<std::string> tunable_ops();

}  // namespace dbsparse::tuner

#pragma once
// Search spaces as data: each op declares its tunable parameters (candidate values, or a range
// with a log or linear grid), the constraints between them and its defaults in its registry entry
// (tools/ops/<op>_op.cpp). The tuner walks the space and skips what cannot be implemented.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/op_config.hpp"

namespace dbsparse::tuner {

struct ParamSpec {
  std::string name;
  std::vector<nlohmann::json> values;  // candidates in order (ranges are expanded into a grid)
  std::string doc;                     // what it controls, for help text and explain

  // A range [lo, hi] of `points` values, evenly spaced on a log or a linear scale; integers when
  // `integer` is set (duplicates after rounding are dropped).
  static ParamSpec range(std::string name, double lo, double hi, int points, bool log, bool integer, std::string doc);
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
  nlohmann::json defaults;  // a complete config: the typed config's defaults
  // The typed config's own rules (kinds, ranges, rules between fields); throws UsageError.
  std::function<void(const nlohmann::json& config)> validate;
  // Partial configs laid over the defaults and raced with them before the grid or the descent,
  // which goes on from the fastest: moves of several parameters at once, which a descent one
  // parameter at a time cannot make (SpGEMM's group 0 taking rows of up to 127 products needs b0,
  // t0 and lanes0 together: docs/decisions/tuner-search-spaces.md).
  std::vector<nlohmann::json> seeds;

  // The defaults with `partial` laid over them.
  nlohmann::json complete(const nlohmann::json& partial) const;
  // True when the config validates and every constraint holds; otherwise false with why in *why.
  bool can_implement(const nlohmann::json& config, std::string* why = nullptr) const;
  // Points of the full grid (product of the candidate counts), constraints not applied.
  double size() const;
  const ParamSpec* find(const std::string& name) const;
};

// The constraint-free validation of a typed op config (include/dbsparse/op_config.hpp).
template <class Cfg>
std::function<void(const nlohmann::json&)> validate_as() {
  return [](const nlohmann::json& c) { (void)config_from_json<Cfg>(c); };
}

}  // namespace dbsparse::tuner

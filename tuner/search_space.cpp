#include "tuner/search_space.hpp"

#include <cmath>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse::tuner {

ParamSpec ParamSpec::range(std::string name, double lo, double hi, int points, bool log, bool integer,
                           std::string doc) {
  ParamSpec p{std::move(name), {}, std::move(doc)};
  for (int i = 0; i < points; ++i) {
    const double t = points == 1 ? 0.0 : static_cast<double>(i) / (points - 1);
    double v = log ? lo * std::pow(hi / lo, t) : lo + (hi - lo) * t;
    nlohmann::json j =
        integer ? nlohmann::json(static_cast<int64_t>(std::llround(v))) : nlohmann::json(std::round(v * 1e6) / 1e6);
    if (p.values.empty() || p.values.back() != j) p.values.push_back(j);
  }
  return p;
}

ParamSpec ParamSpec::choice(std::string name, std::vector<nlohmann::json> values, std::string doc) {
  return ParamSpec{std::move(name), std::move(values), std::move(doc)};
}

nlohmann::json SearchSpace::complete(const nlohmann::json& partial) const {
  nlohmann::json c = defaults;
  for (auto it = partial.begin(); it != partial.end(); ++it) c[it.key()] = it.value();
  return c;
}

bool SearchSpace::can_implement(const nlohmann::json& config, std::string* why) const {
  const nlohmann::json c = complete(config);
  if (validate) {
    try {
      validate(c);
    } catch (const UsageError& e) {
      if (why) *why = e.what();
      return false;
    }
  }
  for (const auto& k : constraints)
    if (!k.holds(c)) {
      if (why) *why = k.text;
      return false;
    }
  return true;
}

double SearchSpace::size() const {
  double n = 1;
  for (const auto& p : params) n *= static_cast<double>(p.values.size());
  return n;
}

const ParamSpec* SearchSpace::find(const std::string& name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace dbsparse::tuner

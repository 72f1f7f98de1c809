#include "tuner/search_space.hpp"

#include <cmath>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse::tuner {

ParamSpec ParamSpec::range(std::string name, double lo, double hi, int points, bool log, bool integer,
                           std::string doc) {
  ParamSpec p{std::move(name), {}, std::move(doc)};
  for (int i = 0; i < points; ++i) {
    const double t = points == 1 ? 0.0 : static_cast<double>(i) / (points - 1);
    double v = log ? lo * std::pow(hi / lo, t) : lo + (hi - lo) * t;
    nlohmann::json j = integer ? nlohmann::json(static_cast<int64_t>(std::llround(v)))
                               : nlohmann::json(std::round(v * 1e6) / 1e6);
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

namespace {

SearchSpace make_spmspv() {
  SearchSpace s{"spmspv", {}, {}, default_params("spmspv")};
  s.params = {
      ParamSpec::choice("th0", {8, 16, 32, 64}, "COO below this many nonzeros in a block"),
      ParamSpec::choice("th1", {64, 96, 128, 192}, "Dense above this many nonzeros in a block"),
      ParamSpec::choice("th2", {1.5, 2.0, 3.0, 4.0}, "skew ratio for ForceCSR / ForceCSC"),
      // Down to 0.0125: on small matrices with ~1 nonzero per block pull wins even at xb ~0.02
      // (dbtune, H200, 2026-11-29: the paper's th3 = 0.01 beat every tuned config on 6 of them).
      ParamSpec::range("th3", 0.0125, 3.2, 9, true, false,
                       "push while the x-block share < th3 / max(1, nonzeros per block)"),
  };
  s.constraints = {
      {"th0 < th1", [](const nlohmann::json& c) { return c.at("th0").get<double>() < c.at("th1").get<double>(); }},
      {"th1 <= 256", [](const nlohmann::json& c) { return c.at("th1").get<double>() <= 256; }},
      {"th2 >= 1", [](const nlohmann::json& c) { return c.at("th2").get<double>() >= 1; }},
      {"th3 > 0", [](const nlohmann::json& c) { return c.at("th3").get<double>() > 0; }},
  };
  return s;
}

SearchSpace make_spmv() {
  SearchSpace s{"spmv", {}, {}, default_params("spmv")};
  s.params = {
      ParamSpec::choice("strategy", {"classified", "uniform"}, "rows binned by length, or one strategy"),
      ParamSpec::choice("lane_entries_f32", {2, 4, 8, 16}, "f32: entries per lane before wider groups"),
      ParamSpec::choice("lane_entries_f64", {2, 4, 8}, "f64: entries per lane before wider groups"),
      ParamSpec::choice("block_size", {128, 256, 512}, "threads per block of every SpMV kernel"),
      ParamSpec::choice("v4_lanes", {16, 32}, "lanes of the widest vector bin"),
      ParamSpec::choice("block_max_len", {1024, 4096, 16384}, "longest row for one block per row"),
      ParamSpec::choice("longrow_chunk", {1024, 2048, 8192}, "entries per block of a split long row"),
      ParamSpec::choice("fold_share", {0.0, 0.02, 0.1}, "bins under this share of nonzeros join the next"),
  };
  auto lanes_grow = [](const nlohmann::json& c) {
    int prev = 0;
    for (int v = 1; v <= 4; ++v) {
      const int l = c.at(fmt::format("v{}_lanes", v)).get<int>();
      if (l <= prev) return false;
      prev = l;
    }
    return true;
  };
  s.constraints = {
      {"v1_lanes < v2_lanes < v3_lanes < v4_lanes", lanes_grow},
      {"block_max_len >= v4_lanes x lane_entries", [](const nlohmann::json& c) {
         const int64_t e = std::max(c.at("lane_entries_f32").get<int64_t>(), c.at("lane_entries_f64").get<int64_t>());
         return c.at("block_max_len").get<int64_t>() >= c.at("v4_lanes").get<int64_t>() * e;
       }},
      {"256 <= longrow_chunk", [](const nlohmann::json& c) { return c.at("longrow_chunk").get<int64_t>() >= 256; }},
  };
  return s;
}

}  // namespace

const SearchSpace& search_space(const std::string& op) {
  static const SearchSpace spmv = make_spmv(), spmspv = make_spmspv();
  if (op == "spmv") return spmv;
  if (op == "spmspv") return spmspv;
  throw UsageError(fmt::format("no search space for op '{}' (known: spmv, spmspv)", op));
}

std::vector<std::string> tunable_ops() { return {"spmv", "spmspv"}; }

}  // namespace dbsparse::tuner

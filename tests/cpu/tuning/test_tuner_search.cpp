// The generic search against deterministic synthetic objectives: it finds the optimum, keeps to
// its budget, resumes from stored trials without measuring them again, and records failures.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "dbsparse/error.hpp"
#include "tools/ops/registry.hpp"
#include "tuner/search.hpp"

using namespace dbsparse;
using namespace dbsparse::tuner;

namespace {

// Separable bowl over the spmspv space, lowest at th0=16, th1=96, th2=3, th3=0.8.
double bowl(const nlohmann::json& c) {
  const double th0 = c["th0"].get<double>(), th1 = c["th1"].get<double>(), th2 = c["th2"].get<double>();
  const double th3 = c["th3"].get<double>();
  return 100 + std::pow(std::log2(th0 / 16), 2) * 5 + std::pow((th1 - 96) / 32, 2) * 4 + std::pow(th2 - 3, 2) * 3 +
         std::pow(std::log2(th3 / 0.8), 2) * 6;
}

struct Store {
  std::map<std::string, Measurement> trials;
  Recall recall() {
    return [this](const nlohmann::json& c) -> std::optional<Measurement> {
      auto it = trials.find(c.dump());
      if (it == trials.end()) return std::nullopt;
      return it->second;
    };
  }
  Record record() {
    return [this](const nlohmann::json& c, const Measurement& m) { trials[c.dump()] = m; };
  }
};

}  // namespace

TEST_CASE("EveryRegisteredOpDeclaresItsSpaceDefaultsAndVariants") {
  for (const auto* op : dbsparse::tools::ops()) {
    CAPTURE(op->name);
    CHECK(op->space.op == op->name);
    CHECK(op->config.op == op->name);
    CHECK(op->space.defaults == op->config.defaults);  // one set of defaults, the typed config's
    CHECK(op->space.can_implement(op->space.defaults));
    CHECK(op->fixed_cost_calls);  // `bench` reports every op's fixed cost (issue 34)
    // Every searched parameter is a config key, and its default is one of its values, so the
    // search starts on the grid.
    for (const auto& p : op->space.params) {
      CAPTURE(p.name);
      REQUIRE(op->space.defaults.contains(p.name));
      CHECK(std::find(p.values.begin(), p.values.end(), op->space.defaults.at(p.name)) != p.values.end());
    }
    CHECK_FALSE(op->variants(false).empty());
    CHECK(op->variants(true).size() >= op->variants(false).size());
    CHECK(op->objective);
    CHECK(op->bench);
    CHECK(op->explain);
    CHECK(&dbsparse::tools::find_op(op->name) == op);
  }
  const auto& s = dbsparse::tools::find_op("spmspv").space;
  CHECK(s.find("th3") != nullptr);
  std::string why;
  CHECK_FALSE(s.can_implement({{"th0", 64}, {"th1", 64}}, &why));
  CHECK(why == "th0 < th1");  // a search-only constraint: the config itself allows th0 >= th1
  const auto& v = dbsparse::tools::find_op("spmv").space;
  CHECK_FALSE(v.can_implement({{"v4_lanes", 4}}, &why));  // narrower than v3 (8)
  CHECK(why.find("v4_lanes") != std::string::npos);
  CHECK_THROWS_WITH_AS(dbsparse::tools::find_op("nosuchop"), doctest::Contains("known: spmv, spmspv"), UsageError);
  auto r = ParamSpec::range("x", 1, 1000, 4, true, true, "");
  CHECK(r.values == std::vector<nlohmann::json>{1, 10, 100, 1000});
}

TEST_CASE("CoordinateDescentFindsTheOptimumOfASeparableObjective") {
  const auto& space = dbsparse::tools::find_op("spmspv").space;
  Store store;
  int calls = 0;
  Objective f = [&](const nlohmann::json& c, int) {
    ++calls;
    return Measurement{TrialStatus::Ok, bowl(c), ""};
  };
  SearchOptions opt;
  opt.budget_s = 1e9;
  auto r = search(space, f, store.recall(), store.record(), opt);
  CHECK(r.strategy == "coordinate descent");  // 4*4*4*7 points: past max_exhaustive
  CHECK(r.best["th0"] == 16);
  CHECK(r.best["th1"] == 96);
  CHECK(r.best["th2"] == 3.0);
  CHECK(r.best["th3"].get<double>() == doctest::Approx(0.8));
  CHECK(r.best_us == doctest::Approx(100));
  CHECK(r.default_us == doctest::Approx(bowl(space.defaults)));
  CHECK(r.measured == calls);
  CHECK(calls < 4 * 4 * 4 * 7);  // fewer than the grid
  CHECK_FALSE(r.out_of_budget);
}

TEST_CASE("SearchKeepsToItsBudgetAndResumesWithoutMeasuringAgain") {
  const auto& space = dbsparse::tools::find_op("spmspv").space;
  double now = 0;
  Objective f = [&](const nlohmann::json& c, int) {
    now += 1.0;  // every measurement costs one second of the fake clock
    return Measurement{TrialStatus::Ok, bowl(c), ""};
  };
  SearchOptions opt;
  opt.clock = [&] { return now; };
  opt.budget_s = 5;
  Store store;
  auto first = search(space, f, store.recall(), store.record(), opt);
  CHECK(first.out_of_budget);
  CHECK(first.measured <= 6);  // the measurement running when the budget ran out may finish

  // An uninterrupted run from scratch, for comparison.
  Store fresh;
  opt.budget_s = 1e9;
  auto whole = search(space, f, fresh.recall(), fresh.record(), opt);

  const size_t stored = store.trials.size();
  auto second = search(space, f, store.recall(), store.record(), opt);
  CHECK(second.recalled >= static_cast<int>(stored));
  CHECK(store.trials.size() == fresh.trials.size());  // the same configs, each measured once
  CHECK(second.best == whole.best);
}

TEST_CASE("ExhaustiveSearchOnASmallSpaceAndFailuresAreRecorded") {
  SearchSpace s{"toy", {}, {}, {{"a", 1}, {"b", 1}}};
  s.params = {ParamSpec::choice("a", {1, 2, 3}, ""), ParamSpec::choice("b", {1, 2, 3}, "")};
  s.constraints = {{"a + b < 6", [](const nlohmann::json& c) { return c["a"].get<int>() + c["b"].get<int>() < 6; }}};
  Store store;
  Objective f = [](const nlohmann::json& c, int) {
    if (c["a"] == 3 && c["b"] == 1) return Measurement{TrialStatus::CompileFailed, 0, "synthetic"};
    if (c["a"] == 1 && c["b"] == 3) return Measurement{TrialStatus::WrongResult, 0, "synthetic"};
    return Measurement{TrialStatus::Ok, 10.0 + std::abs(c["a"].get<int>() - 2) + std::abs(c["b"].get<int>() - 3), ""};
  };
  SearchOptions opt;
  opt.budget_s = 1e9;
  auto r = search(s, f, store.recall(), store.record(), opt);
  CHECK(r.strategy == "exhaustive");
  CHECK(r.best == nlohmann::json{{"a", 2}, {"b", 3}});
  CHECK(r.failed == 2);
  CHECK(store.trials.size() == 8);  // 9 points minus (3,3), which breaks the constraint
  CHECK(store.trials.at(nlohmann::json{{"a", 3}, {"b", 1}}.dump()).status == TrialStatus::CompileFailed);
}

TEST_CASE("SeedsLetTheSearchMakeMovesOfSeveralParametersAtOnce") {
  // Lowest at a = b = 3; a or b alone at 3 is worse than the defaults: one parameter at a time
  // never leaves (1, 1, 1).
  SearchSpace s{"toy", {}, {}, {{"a", 1}, {"b", 1}, {"c", 1}}};
  s.params = {ParamSpec::choice("a", {1, 2, 3}, ""), ParamSpec::choice("b", {1, 2, 3}, ""),
              ParamSpec::choice("c", {1, 2, 3}, "")};
  s.constraints = {{"c < 3 or a < 3", [](const nlohmann::json& c) { return c["c"] != 3 || c["a"] != 3; }}};
  Objective f = [](const nlohmann::json& c, int) {
    const bool a3 = c["a"] == 3, b3 = c["b"] == 3;
    const double t = a3 && b3 ? 1.0 : (a3 || b3 ? 20.0 : 10.0);
    return Measurement{TrialStatus::Ok, t + 0.1 * std::abs(c["c"].get<int>() - 2), ""};
  };
  SearchOptions opt;
  opt.budget_s = 1e9;
  opt.max_exhaustive = 8;  // 24 points after the constraint: descend
  Store plain;
  const auto without = search(s, f, plain.recall(), plain.record(), opt);
  CHECK(without.strategy == "coordinate descent");
  CHECK(without.best["a"] == 1);
  CHECK(without.best["b"] == 1);
  s.seeds = {{{"a", 3}, {"c", 3}},  // breaks the constraint: skipped, never measured
             {{"a", 3}, {"b", 3}}};
  Store seeded;
  const auto with = search(s, f, seeded.recall(), seeded.record(), opt);
  CHECK(with.best == nlohmann::json{{"a", 3}, {"b", 3}, {"c", 2}});  // then the descent moved c
  CHECK(with.best_us == doctest::Approx(1.0));
  CHECK(seeded.trials.count(nlohmann::json{{"a", 3}, {"b", 1}, {"c", 3}}.dump()) == 0);
  CHECK(with.default_us == doctest::Approx(10.1));
}

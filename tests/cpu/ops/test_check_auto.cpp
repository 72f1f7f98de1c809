// `dbsparse bench OP --check-auto` on the CPU: each op's extraction, fed results in its bench's
// row shape with hand-picked times, pairs the right rows; the ratios, the order and the summary
// are the hand-worked ones; the CLI refuses the flag where it cannot apply before any GPU work.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "tools/bench/check_auto.hpp"
#include "tools/ops/registry.hpp"

using namespace dbsparse;
using nlohmann::json;
using tools::AutoCheck;

namespace {

std::vector<AutoCheck> checks_of(const char* op, const json& results) {
  const auto& d = tools::find_op(op);
  REQUIRE(d.auto_checks);
  return d.auto_checks(results);
}

std::vector<std::string> forced_names(const AutoCheck& c) {
  std::vector<std::string> out;
  for (const auto& f : c.forced) out.push_back(f.first);
  return out;
}

json spmm_impl(const char* impl, double us, bool correct = true) {
  return {{"impl", impl}, {"us", us}, {"error", 0.0}, {"tolerance", 1e-5}, {"correct", correct}};
}

}  // namespace

TEST_CASE("CheckAutoSpmmPairsAutoWithTheForcedPathsOnly") {
  const json results = json::array({{{"matrix", "ba"},
                                     {"precision", "f32"},
                                     {"n", 32},
                                     {"epilogue", "none"},
                                     {"auto_path", "condensed"},
                                     {"impls",
                                      {spmm_impl("dbsparse-auto", 43.5), spmm_impl("dbsparse-brp-f4-g2", 100),
                                       spmm_impl("dbsparse-condensed-g2", 43), spmm_impl("dbsparse-csr", 16.5),
                                       spmm_impl("dbsparse-csr-degree", 10), spmm_impl("cusparse-csr-alg2", 15)}}},
                                    {{"matrix", "w"},
                                     {"precision", "f16"},
                                     {"n", 64},
                                     {"epilogue", "relu"},
                                     {"auto_path", "csr"},
                                     {"impls",
                                      {spmm_impl("dbsparse-auto", 20),
                                       spmm_impl("dbsparse-brp-f1-g1", 18, false),
                                       {{"impl", "dbsparse-condensed"}, {"note", "left out: 5.0 GB of tiles"}},
                                       spmm_impl("dbsparse-csr", 25)}}},
                                    {{"matrix", "wrong"},
                                     {"precision", "f32"},
                                     {"n", 32},
                                     {"epilogue", "none"},
                                     {"auto_path", "brp"},
                                     {"impls", {spmm_impl("dbsparse-auto", 5, false), spmm_impl("dbsparse-csr", 6)}}}});
  const auto c = checks_of("spmm", results);
  REQUIRE(c.size() == 2);  // a wrong auto row makes no pair
  CHECK(c[0].matrix == "ba");
  CHECK(c[0].setting == "f32 N=32");
  CHECK(c[0].auto_choice == "condensed");
  // The reordered CSR row (10 us) and cuSPARSE (15 us) are not forced paths: CSR's 16.5 is the best.
  CHECK(forced_names(c[0]) == std::vector<std::string>{"dbsparse-brp-f4-g2", "dbsparse-condensed-g2", "dbsparse-csr"});
  CHECK(c[0].best_name == "dbsparse-csr");
  CHECK(c[0].ratio == doctest::Approx(16.5 / 43.5));
  // The wrong BRP row and the condensed row that did not run take no part.
  CHECK(c[1].setting == "f16 N=64 relu");
  CHECK(forced_names(c[1]) == std::vector<std::string>{"dbsparse-csr"});
  CHECK(c[1].ratio == doctest::Approx(1.25));
}

TEST_CASE("CheckAutoBfsComparesSearchTimesOverTheSourcesWithEdges") {
  auto impl = [](const char* name, std::vector<double> s) { return json{{"impl", name}, {"seconds", s}}; };
  const json results =
      json::array({{{"graph", "g1"},
                    {"component_edges", {100, 0, 400}},
                    {"directions_vertex0", "PPL"},
                    {"results",
                     {impl("dbsparse-auto", {2e-6, 1e-6, 8e-6}), impl("dbsparse-push", {1e-6, 5e-6, 4e-6}),
                      impl("dbsparse-pull", {4e-6, 1e-6, 16e-6}), impl("cusparse-spmv-loop", {1e-7, 1e-7, 1e-7})}}},
                   {{"graph", "rect"}, {"skipped", "not square"}},
                   {{"graph", "g3"},
                    {"component_edges", {0, 0}},
                    {"directions_vertex0", "P"},
                    {"results",
                     {impl("dbsparse-auto", {1e-6, 4e-6}), impl("dbsparse-push", {3e-6, 3e-6}),
                      impl("dbsparse-pull", {2e-6, 8e-6})}}}});
  const auto c = checks_of("bfs", results);
  REQUIRE(c.size() == 2);
  // g1: sources 0 and 2 have edges: auto sqrt(2 * 8) = 4 us, push sqrt(1 * 4) = 2, pull sqrt(4 * 16) = 8.
  CHECK(c[0].matrix == "g1");
  CHECK(c[0].setting == "3 sources");
  CHECK(c[0].auto_choice == "PPL");
  CHECK(c[0].auto_us == doctest::Approx(4));
  CHECK(c[0].best_name == "dbsparse-push");
  CHECK(c[0].best_us == doctest::Approx(2));
  CHECK(c[0].ratio == doctest::Approx(0.5));
  // g3: no source has an edge, so all count: auto sqrt(1 * 4) = 2, push 3, pull 4.
  CHECK(c[1].ratio == doctest::Approx(1.5));
  CHECK(forced_names(c[1]) == std::vector<std::string>{"dbsparse-push", "dbsparse-pull"});
}

TEST_CASE("CheckAutoBfsNeedsTheBaselines") {
  tools::BenchRequest r;
  r.baselines = false;
  CHECK_THROWS_AS(tools::find_op("bfs").auto_check_request(r), UsageError);
}

TEST_CASE("CheckAutoSpmspvPairsPerPrecisionAndDensity") {
  auto row = [](const char* impl, double density, double us, const char* dir = "") {
    json j = {{"matrix", "M"}, {"precision", "f32"}, {"impl", impl},
              {"time_us", us}, {"density", density}, {"available", true}};
    if (*dir) j["direction"] = dir;
    return j;
  };
  json unavailable = {{"matrix", "M"},    {"precision", "f32"}, {"impl", "dbsparse-pull"},
                      {"density", 0.001}, {"available", false}, {"reason", "too big"}};
  const json results =
      json::array({row("dbsparse-auto", 0.1, 10, "pull"), row("dbsparse-push", 0.1, 12, "push"),
                   row("dbsparse-pull", 0.1, 9, "pull"), row("dbsparse-sparse-io", 0.1, 5, "push"),
                   row("cusparse-csr-alg1", 0.1, 3), row("dbsparse-auto", 0.01, 5, "push"),
                   row("dbsparse-push", 0.01, 5, "push"), row("dbsparse-pull", 0.01, 50, "pull"),
                   row("dbsparse-auto", 0.001, 4, "push"), row("dbsparse-push", 0.001, 2, "push"), unavailable});
  const auto c = checks_of("spmspv", results);
  REQUIRE(c.size() == 3);
  CHECK(c[0].setting == "f32 x 0.1");
  CHECK(c[0].auto_choice == "pull");
  CHECK(c[0].best_name == "dbsparse-pull");
  CHECK(c[0].ratio == doctest::Approx(0.9));  // the sparse-output row and cuSPARSE are not forced paths
  CHECK(c[1].setting == "f32 x 0.01");
  CHECK(c[1].ratio == doctest::Approx(1.0));
  CHECK(c[2].setting == "f32 x 0.001");
  CHECK(forced_names(c[2]) == std::vector<std::string>{"dbsparse-push"});
  CHECK(c[2].ratio == doctest::Approx(0.5));
}

TEST_CASE("CheckAutoSpmvComparesTheConfigRowWithEveryStrategy") {
  auto row = [](const char* m, const char* prec, const char* impl, double us) {
    return json{{"matrix", m}, {"precision", prec}, {"impl", impl}, {"time_us", us}};
  };
  const json results = json::array({row("X", "f32", "dbsparse", 10), row("X", "f32", "dbsparse-classified", 10),
                                    row("X", "f32", "dbsparse-uniform", 8), row("X", "f32", "dbsparse-scalar", 40),
                                    row("X", "f32", "cusparse-csr-alg1", 5), row("X", "f64", "dbsparse", 20),
                                    row("X", "f64", "dbsparse-vector", 25), row("Y", "f32", "dbsparse", 3)});
  const auto c = checks_of("spmv", results);
  REQUIRE(c.size() == 2);  // Y has no forced row
  CHECK(c[0].setting == "f32");
  CHECK(c[0].best_name == "dbsparse-uniform");
  CHECK(c[0].ratio == doctest::Approx(0.8));
  CHECK(c[1].setting == "f64");
  CHECK(c[1].ratio == doctest::Approx(1.25));

  // The request: the auto row first, then every forced strategy; a user's list is kept.
  tools::BenchRequest r;
  tools::find_op("spmv").auto_check_request(r);
  REQUIRE(r.strategies.size() > 2);
  CHECK(r.strategies[0] == "auto");
  CHECK(std::count(r.strategies.begin(), r.strategies.end(), "uniform") == 1);
  tools::BenchRequest given;
  given.strategies = {"vector-l4"};
  tools::find_op("spmv").auto_check_request(given);
  CHECK(given.strategies == std::vector<std::string>{"auto", "vector-l4"});
}

TEST_CASE("CheckAutoReportIsWorstFirstWithTheSummary") {
  auto check = [](const char* op, const char* m, double auto_us, double best_us) {
    AutoCheck c{op, m, "s", auto_us, "", "forced", best_us, best_us / auto_us, {{"forced", best_us}}};
    return c;
  };
  // Ratios 1.0, 0.5, 0.96, 0.8: 2 of 4 at or above 0.95; geomean (1 * 0.5 * 0.96 * 0.8)^(1/4).
  std::vector<AutoCheck> c = {check("spmv", "a", 10, 10), check("bfs", "b", 10, 5), check("spmm", "c", 10, 9.6),
                              check("spmspv", "d", 10, 8)};
  tools::sort_worst_first(c);
  CHECK(c[0].matrix == "b");
  CHECK(c[1].matrix == "d");
  CHECK(c[2].matrix == "c");
  CHECK(c[3].matrix == "a");
  const auto s = tools::summarize_auto_checks(c);
  CHECK(s.pairs == 4);
  CHECK(s.within == 2);
  CHECK(s.share_within == doctest::Approx(0.5));
  CHECK(s.geomean == doctest::Approx(std::pow(0.384, 0.25)));
  REQUIRE(s.worst);
  CHECK(s.worst->matrix == "b");
  const std::string text = tools::auto_check_report(c);
  CHECK(text.find("4 pairs, 2 (50%)") != std::string::npos);
  CHECK(text.find("worst 0.500 (bfs b s") != std::string::npos);
  CHECK(text.find("bfs") < text.find("spmspv"));  // the table is in the order given
  const json j = tools::auto_check_json(c);
  CHECK(j["pairs"].size() == 4);
  CHECK(j["pairs"][0]["ratio"].get<double>() == doctest::Approx(0.5));
  CHECK(j["summary"]["within"] == 2);
  CHECK(j["summary"]["worst"]["matrix"] == "b");
  CHECK(tools::auto_check_report({}).find("no pair") != std::string::npos);
}

TEST_CASE("CheckAutoComparesARecheckedAutoOnlyWithRecheckedForcedRows") {
  // m: auto and push timed again (interleaved); pull only in the first pass, where its time was
  // luckier than anything the second look saw. n: nothing rechecked, every row counts.
  const std::vector<tools::TimedRow> rows = {{"m", "s", "auto", 10.0, "", true}, {"m", "s", "push", 9.8, "", true},
                                             {"m", "s", "pull", 7.0, "", false}, {"n", "s", "auto", 10.0, "", false},
                                             {"n", "s", "push", 9.8, "", false}, {"n", "s", "pull", 7.0, "", false}};
  const auto c = tools::group_auto_checks("op", rows, "auto", [](const std::string& i) { return i != "auto"; });
  REQUIRE(c.size() == 2);
  CHECK(c[0].best_name == "push");
  CHECK(c[0].ratio == doctest::Approx(0.98));
  CHECK(c[0].forced.size() == 1);
  CHECK(c[1].best_name == "pull");
  CHECK(c[1].ratio == doctest::Approx(0.7));
}

TEST_CASE("RecheckTakesAutoAndTheForcedRowsNearTheBest") {
  // auto 10, forced 8 (best), 8.7 (within 10%), 9.0 (past it), a non-forced 5 and a row that did not run.
  const std::vector<double> us{10.0, 8.0, 8.7, 9.0, 5.0, 0.0};
  const std::vector<bool> forced{false, true, true, true, false, true};
  CHECK(tools::recheck_candidates(0, us, forced) == std::vector<size_t>{0, 1, 2});
  CHECK(tools::recheck_candidates(0, us, forced, 1.2) == std::vector<size_t>{0, 1, 2, 3});
  // auto in the middle of the list comes first; no forced row, or auto missing: nothing to re-time.
  CHECK(tools::recheck_candidates(2, {8.0, 9.0, 7.0}, {true, true, false}) == std::vector<size_t>{2, 0});
  CHECK(tools::recheck_candidates(0, {7.0, 0.0}, {false, true}).empty());
  CHECK(tools::recheck_candidates(1, {7.0, 0.0}, {true, false}).empty());
  CHECK(tools::recheck_candidates(5, {7.0}, {true}).empty());
}

TEST_CASE("CheckAutoIsRefusedBeforeAnyGpuWork") {
  {
    const auto [rc, out] = dbs_test::run_tool("dbsparse", "bench spgemm stencil2d:n=10 --check-auto");
    CAPTURE(out);
    CHECK(rc != 0);
    CHECK(out.find("--check-auto does not apply to bench spgemm") != std::string::npos);
    CHECK(out.find("no CUDA device") == std::string::npos);
  }
  {
    const auto [rc, out] = dbs_test::run_tool("dbsparse", "bench bfs stencil2d:n=10 --check-auto --no-baselines");
    CAPTURE(out);
    CHECK(rc != 0);
    CHECK(out.find("drop --no-baselines") != std::string::npos);
  }
}

// dbtune end to end on the GPU: a quick run over two small matrices writes trials and best
// configs, and plans made afterwards use the tuned configs.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "dbsparse/dbsparse.hpp"
#include "test_support.hpp"

using namespace dbsparse;
namespace fs = std::filesystem;

TEST_CASE("DbtuneWritesTrialsAndBestConfigsThatPlansThenUse") {
  const fs::path dbtune = dbs_test::sibling_binary("dbtune");
  REQUIRE_MESSAGE(!dbtune.empty(), "dbtune binary not found beside the test binary");
  // Its own DB, made the one plans look up (DBSPARSE_DB) for the length of this test only.
  const fs::path db_file = fs::temp_directory_path() / fmt::format("dbsparse-dbtune-test-{}.db", getpid());
  fs::remove(db_file);
  const char* old = std::getenv("DBSPARSE_DB");
  const std::string previous = old ? old : "";
  setenv("DBSPARSE_DB", db_file.c_str(), 1);
  struct Restore {
    std::string v;
    bool had;
    ~Restore() { had ? setenv("DBSPARSE_DB", v.c_str(), 1) : unsetenv("DBSPARSE_DB"); }
  } restore{previous, old != nullptr};
  const std::string db_path = TuningDb::default_path();
  REQUIRE(db_path == db_file.string());
  const std::vector<std::string> specs{"stencil2d:n=60", "rmat:scale=10,ef=8"};
  const std::string cmd = fmt::format("'{}' --matrices {} {} --budget 1 --db '{}' > /dev/null 2>&1", dbtune.string(),
                                      specs[0], specs[1], db_path);
  REQUIRE(std::system(cmd.c_str()) == 0);

  Context ctx;
  const std::string dev = ctx.device().record().fingerprint;
  auto db = TuningDb::open(db_path, /*read_only=*/true);
  for (const auto& spec : specs) {
    CAPTURE(spec);
    auto a = generate(spec).cast<float>();
    const std::string fp = structure_fingerprint(a);
    for (const char* op : {"spmv", "spmspv"}) {
      CAPTURE(op);
      CHECK(db->trials(dev, fp, op).size() >= 2);  // the defaults and at least one candidate
      CHECK(db->best(dev, fp, op, ""));
    }
    auto plan = plan_spmv(ctx, a);
    CHECK(plan.config_source() == ConfigSource::Tuned);
    auto sp = plan_spmspv(ctx, a);
    CHECK(sp.config().source == ConfigSource::Tuned);
    // SpMM is tuned per N class (n32, n128), each stored under its bucket.
    for (int n : {32, 128}) {
      CAPTURE(n);
      CHECK(db->best(dev, fp, "spmm", spmm_tuning_bucket(n)));
      CHECK(plan_spmm(ctx, a, n).config().source == ConfigSource::Tuned);
    }
  }
  // An unseen matrix close to a tuned one gets a predicted config.
  auto near = generate("stencil2d:n=64").cast<float>();
  CHECK(plan_spmv(ctx, near).config_source() == ConfigSource::Predicted);

  // SpGEMM is tuned only when named; a plan from host CSR then reads the tuned config.
  const std::string spgemm_cmd = fmt::format("'{}' --ops spgemm --matrices {} --budget 1 --db '{}' > /dev/null 2>&1",
                                             dbtune.string(), specs[1], db_path);
  REQUIRE(std::system(spgemm_cmd.c_str()) == 0);
  auto db2 = TuningDb::open(db_path, /*read_only=*/true);
  const auto r = generate(specs[1]).cast<float>();
  CHECK(db2->trials(dev, structure_fingerprint(r), "spgemm").size() >= 2);
  REQUIRE(db2->best(dev, structure_fingerprint(r), "spgemm", ""));
  const auto plan = plan_spgemm(ctx, r, r);
  CAPTURE(plan.explain());
  CHECK(plan.explain().find("config (tuned") != std::string::npos);
}

// `dbsparse explore` over a parameter given by name (spmv's strategy) and one given by number
// (spmspv's th3): every value is timed, stored as a trial in bucket "explore" and drawn.
TEST_CASE("ExploreSweepsNamedAndNumericParametersAndStoresTrials") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("dbsparse-explore-gpu-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db_path = (dir / "t.db").string(), spec = "stencil2d:n=40";
  struct Sweep {
    const char* op;
    const char* param;
    const char* values;
    std::vector<nlohmann::json> want;
  };
  const std::vector<Sweep> sweeps{
      {"spmv", "strategy", "classified,uniform,scalar", {"classified", "uniform", "scalar"}},
      {"spmspv", "th3", "0.01,0.4", {0.01, 0.4}}};
  for (const auto& sw : sweeps) {
    CAPTURE(sw.param);
    const fs::path svg = dir / fmt::format("{}.svg", sw.param);
    auto [code, out] = dbs_test::run_tool(
        "dbsparse", fmt::format("explore {} --op {} --param {} --values {} --samples 2 --svg '{}' --db '{}'", spec,
                                sw.op, sw.param, sw.values, svg.string(), db_path));
    CAPTURE(out);
    REQUIRE(code == 0);
    CHECK(out.find(fmt::format("{} points stored", sw.want.size())) != std::string::npos);
    CHECK(fs::file_size(svg) > 0);
    Context ctx;
    auto db = TuningDb::open(db_path, /*read_only=*/true);
    std::vector<nlohmann::json> got;
    for (const auto& t : db->trials(ctx.device().record().fingerprint, structure_fingerprint(generate(spec)), sw.op)) {
      CHECK(t.bucket == "explore");
      CHECK(t.status == TrialStatus::Ok);
      got.push_back(t.params.at(sw.param));
    }
    CHECK(got == sw.want);
  }
  fs::remove_all(dir);
}

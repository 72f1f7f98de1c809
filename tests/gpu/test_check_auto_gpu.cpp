// `dbsparse bench OP --check-auto` on the device: for every op that declares auto_checks, its bench
// (with what --check-auto asks of the request) on small matrices yields one pair per (matrix,
// setting), each with auto's time and at least two forced paths, read from the real row shapes.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <utility>

#include "gpu/gpu_support.hpp"
#include "tools/bench/check_auto.hpp"
#include "tools/ops/registry.hpp"

TEST_CASE("CheckAutoFindsAPairForEveryMatrixAndSettingOfEachOp") {
  Stream s(ctx());
  for (const auto* op : tools::ops()) {
    if (!op->auto_checks) continue;
    CAPTURE(op->name);
    tools::BenchRequest req;
    req.specs = {"stencil2d:n=40", "powerlaw:n=3000,avg=8,alpha=1.5,max=1500,seed=3"};
    if (op->name == "spmm") req.n_cols = {32};  // the op's own option; the checks read every N
    req.timing.samples = 2;
    req.timing.batch = 1;
    req.timing.warmup = 1;
    req.copy_gbs = 1000;
    req.recheck_rounds = 2;
    if (op->auto_check_request) op->auto_check_request(req);
    const nlohmann::json out = op->bench(ctx(), s, req);
    const auto checks = op->auto_checks(out.at("results"));
    // One setting per matrix (spmm: f32 N=32; spmv: f32; bfs: its sources), spmspv one per density.
    const size_t per_matrix = op->name == "spmspv" ? 4 : 1;
    CHECK(checks.size() == 2 * per_matrix);
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto& c : checks) {
      CAPTURE(c.matrix);
      CAPTURE(c.setting);
      CHECK(c.op == op->name);
      CHECK(c.auto_us > 0);
      CHECK(c.forced.size() >= 2);
      CHECK(c.best_us > 0);
      CHECK(c.ratio == doctest::Approx(c.best_us / c.auto_us));
      CHECK(seen.insert({c.matrix, c.setting}).second);
    }
    CHECK(!tools::auto_check_report(checks).empty());
    // The second look re-times auto's every row where the bench takes it (spmv, spmspv).
    if (op->name == "spmv" || op->name == "spmspv")
      for (const auto& r : out.at("results"))
        if (r.at("impl") == (op->name == "spmv" ? "dbsparse" : "dbsparse-auto")) {
          CAPTURE(r.dump());
          CHECK(r.value("first_pass_us", 0.0) > 0);
        }
  }
}

// `dbsparse gcn`'s GPU pipeline (tools/apps/gcn.hpp) against the CPU's double forward pass: with
// dbsparse's SpMM on each path and with cuSPARSE SpMM, on a graph whose sizes leave a ReLU tail
// (nodes * hidden not a multiple of 4) and odd widths; then bench_gcn end to end on a small graph.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "dbsparse/spmm.hpp"
#include "gpu/gpu_support.hpp"
#include "tools/apps/gcn.hpp"
#include "tools/baselines/cusparse_spmm.hpp"

TEST_CASE("GcnPipelineMatchesTheCpuWithDbsparseAndCusparseSparseProducts") {
  Stream s(ctx());
  const tools::GcnAdjacency adj =
      tools::gcn_normalized_adjacency(generate("community:n=1001,k=7,p_in=0.1,p_out=0.005,seed=2"));
  const auto& a = adj.a_hat;
  const tools::GcnDims d{a.rows, 40, 33, 7};
  const auto in = tools::gcn_inputs(d, 5);
  const std::vector<double> ref = tools::gcn_forward_reference(a, in, d);
  const std::vector<double> scale64 = tools::gcn_forward_reference(a, tools::gcn_abs_inputs(in), d);
  const std::vector<float> scale(scale64.begin(), scale64.end());
  tools::GcnPipeline pipe(ctx(), s, d, in);
  const int widths[2] = {d.hidden, d.classes};

  for (const SpmmPath path : {SpmmPath::CsrCudaCore, SpmmPath::Brp, SpmmPath::Condensed})
    for (const bool fuse : {false, true}) {  // fuse: layer 1's plan applies the ReLU (SpmmEpilogue::Relu)
      CAPTURE(to_string(path));
      CAPTURE(fuse);
      SpmmOptions opt;
      opt.path = path;
      std::vector<SpmmPlan> plans;
      for (int n : widths) {
        opt.epilogue = fuse && plans.empty() ? SpmmEpilogue::Relu : SpmmEpilogue::None;
        plans.push_back(plan_spmm(ctx(), a, n, opt));
      }
      pipe.forward([&](int layer, uint64_t b, uint64_t c) { plans[static_cast<size_t>(layer)].run(b, c, s.handle()); },
                   fuse);
      const auto got = pipe.download_output();
      const double err = tools::gcn_max_error(got, ref, scale);
      CHECK(err <= tools::gcn_tolerance(a, path != SpmmPath::CsrCudaCore));
    }

  std::vector<std::unique_ptr<tools::CusparseSpmm>> cs;
  for (int n : widths) cs.push_back(std::make_unique<tools::CusparseSpmm>(a, n, s.handle()));
  for (tools::CusparseSpmmAlg alg : tools::kCusparseSpmmAlgs) {
    if (!cs[0]->supported(alg) || !cs[1]->supported(alg)) continue;
    CAPTURE(tools::to_string(alg));
    pipe.forward([&](int layer, uint64_t b, uint64_t c) { cs[static_cast<size_t>(layer)]->run(alg, b, c); });
    const auto got = pipe.download_output();
    CHECK(tools::gcn_max_error(got, ref, scale) <= tools::gcn_tolerance(a, false));
  }
  // Only the asked algorithm is set up.
  const tools::CusparseSpmmAlg only[] = {tools::CusparseSpmmAlg::CsrAlg2};
  tools::CusparseSpmm one(a, d.hidden, s.handle(), only);
  CHECK_FALSE(one.supported(tools::CusparseSpmmAlg::Default));
  CHECK(one.why_unsupported(tools::CusparseSpmmAlg::Default).find("not set up") != std::string::npos);
}

TEST_CASE("BenchGcnRunsBothPipelinesAndTheirOutputsAgree") {
  Stream s(ctx());
  NamedMatrix m{"rmat-10", generate("rmat:scale=10,ef=8,seed=4")};
  tools::GcnBenchOptions opt;
  opt.dims.features = 32;
  opt.dims.hidden = 64;
  opt.dims.classes = 16;
  opt.reps = 3;
  opt.warmup = 1;
  opt.cpu_check = true;
  for (const char* path : {"config", "brp"}) {
    CAPTURE(path);
    opt.path = path;
    const nlohmann::json rec = tools::bench_gcn(ctx(), s, m, opt);
    CHECK(rec["ok"].get<bool>());
    CHECK(rec["check"]["cpu"]["ok"].get<bool>());
    CHECK(rec["dbsparse"]["forward_us"].get<double>() > 0);
    CHECK(rec["cusparse"]["forward_us"].get<double>() > 0);
    CHECK(rec["stages"].size() == 5);
    CHECK(rec["dbsparse"]["layers"].size() == 2);
  }
}

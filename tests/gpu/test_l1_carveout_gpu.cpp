// DBSPARSE_L1_CARVEOUT=max-l1 (runtime/gpu/l1_carveout.hpp): SpMM's CSR rows kernels and SpMV's
// launches prefer the least shared carveout that keeps their occupancy. The attribute is only a
// preference the driver may overrule, so what is checked is that plans made under it say so in
// explain and still match the CPU reference on every SpMV strategy, SpMM's scalar and float4
// rows, split rows and pieces, and the 64-bit offsets paths; and that the default says nothing.
// (Whether it pays is for the bench: locality_run.sh carveout.)
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gpu/gpu_support.hpp"

namespace {

// The policy for one scope, the previous value back after.
struct CarveoutEnv {
  std::string previous;
  bool had;
  explicit CarveoutEnv(const char* v) {
    const char* old = std::getenv("DBSPARSE_L1_CARVEOUT");
    had = old != nullptr;
    previous = had ? old : "";
    setenv("DBSPARSE_L1_CARVEOUT", v, 1);
  }
  ~CarveoutEnv() { had ? setenv("DBSPARSE_L1_CARVEOUT", previous.c_str(), 1) : unsetenv("DBSPARSE_L1_CARVEOUT"); }
};

double spmm_error(const SpmmPlan& plan, const CsrMatrix<float>& a, int n) {
  const auto b = dbs_test::random_vector<float>(static_cast<int64_t>(a.cols) * n, 3 + n);
  const auto c0 = dbs_test::random_vector<float>(static_cast<int64_t>(a.rows) * n, 4 + n);
  const auto ab = reference::spmm(a, std::span<const float>(b), n);
  std::vector<double> want(ab.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = 0.5 * ab[i] - 0.25 * static_cast<double>(c0[i]);
  Stream s(ctx());
  DeviceBuffer<float> db{std::span<const float>(b)}, dc{std::span<const float>(c0)};
  plan.run(db, dc, s, 0.5f, -0.25f);
  s.synchronize();
  return reference::relative_error(std::span<const double>(want), std::span<const float>(dc.download()));
}

double spmv_error(const SpmvPlan<float>& plan, const CsrMatrix<float>& a) {
  const auto x = dbs_test::random_vector<float>(a.cols, 5);
  const auto y0 = dbs_test::random_vector<float>(a.rows, 6);
  const auto want = reference::spmv(a, std::span<const float>(x), 1.5, -0.5, std::span<const float>(y0));
  Stream s(ctx());
  DeviceBuffer<float> dx{std::span<const float>(x)}, dy{std::span<const float>(y0)};
  plan.run(dx, dy, s, 1.5f, -0.5f);
  s.synchronize();
  return reference::relative_error(std::span<const double>(want), std::span<const float>(dy.download()));
}

}  // namespace

TEST_CASE("GatherKernelsPreferringL1MatchReferenceAndSaySo") {
  (void)ctx();  // first: the 64-bit uploads below need a current context
  const auto a = generate("powerlaw:n=20000,avg=8,alpha=1.5,max=4000,seed=5").cast<float>();
  const DeviceCsr64<float> d(a);
  for (const char* policy : {"max-l1", "driver"}) {
    CAPTURE(policy);
    const CarveoutEnv env(policy);
    const bool l1 = std::string(policy) == "max-l1";
    for (const nlohmann::json& cfg :
         {nlohmann::json{{"path", "csr"}}, nlohmann::json{{"path", "csr"}, {"csr_split", 0}},
          nlohmann::json{{"path", "csr"}, {"csr_rows_per_warp", 4}}})
      for (int n : {32, 33, 128}) {
        CAPTURE(cfg.dump());
        CAPTURE(n);
        const Config c{"spmm", cfg, ConfigSource::Explicit, "test"};
        SpmmOptions o;
        o.config = &c;
        const SpmmPlan plan = plan_spmm(ctx(), a, n, o);
        CAPTURE(plan.explain());
        CHECK((plan.explain().find("  L1: the rows kernels prefer") != std::string::npos) == l1);
        CHECK(spmm_error(plan, a, n) <= 1e-5);
        const SpmmPlan plan64 = plan_spmm(ctx(), d.view(), n, o);
        CHECK((plan64.explain().find("  L1: the rows kernels prefer") != std::string::npos) == l1);
        CHECK(spmm_error(plan64, a, n) <= 1e-5);
      }
    for (const char* strategy : {"classified", "uniform", "scalar", "vector", "block", "longrow"})
      for (const char* reorder : {"none", "degree"}) {
        CAPTURE(strategy);
        CAPTURE(reorder);
        const auto plan = plan_spmv(
            ctx(), a, Config{"spmv", {{"strategy", strategy}, {"reorder", reorder}}, ConfigSource::Explicit, "test"});
        CAPTURE(plan.explain());
        CHECK((plan.explain().find("  L1: each launch prefers") != std::string::npos) == l1);
        CHECK(spmv_error(plan, a) <= 1e-5);
      }
  }
}

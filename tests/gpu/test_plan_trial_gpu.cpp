// Plan-time trials (runtime/gpu/plan_trial.hpp): SpMM's tensor-core path against CSR and BFS's
// direction policy against push only, each timed on the real input, recorded in the tuning DB and
// reused by a plan in a fresh process; the plan a trial picks computes what the reference does.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "gpu/gpu_support.hpp"
#include "runtime/bfs/bfs_trial.hpp"

namespace {

// $DBSPARSE_DB pointed at a fresh file for the case's life.
struct TempDb {
  std::filesystem::path dir;
  std::string path, saved;
  bool had = false;
  explicit TempDb(const std::string& name) : dir(dbs_test::temp_dir(name)), path((dir / "tuning.db").string()) {
    if (const char* old = std::getenv("DBSPARSE_DB")) had = true, saved = old;
    setenv("DBSPARSE_DB", path.c_str(), 1);
  }
  ~TempDb() {
    if (had)
      setenv("DBSPARSE_DB", saved.c_str(), 1);
    else
      unsetenv("DBSPARSE_DB");
  }
};

// The plan choice a trial recorded in db for this matrix (its structure), op and setting.
template <class M>
auto recorded_choice(const TempDb& db, const M& a, const char* op, const char* setting) {
  return TuningDb::open(db.path, true)
      ->plan_choice(ctx().device().record().fingerprint, structure_fingerprint(a), op, setting);
}

// `dbsparse explain` of the matrix in a fresh process (same DB): its output.
std::string explain_in_fresh_process(const TempDb& db, const CsrMatrix<double>& a, const char* op) {
  const auto cli = dbs_test::sibling_binary("dbsparse");
  REQUIRE_MESSAGE(!cli.empty(), "dbsparse binary not found beside the test binary");
  const auto mtx = db.dir / "a.mtx";
  write_matrix_market(mtx.string(), a);
  const auto out = db.dir / "explain.txt";
  const std::string cmd =
      fmt::format("'{}' explain '{}' --op {} > '{}' 2>&1", cli.string(), mtx.string(), op, out.string());
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream f(out);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// plan (n = 128) computes A B: every entry within TF32's reach of the reference (a 10-bit
// mantissa keeps each product within about 1e-3 of it, so within 2e-3 of sum |a||b|).
void check_spmm_128(const SpmmPlan& plan, const CsrMatrix<float>& a) {
  constexpr int kN = 128;
  std::vector<float> b(static_cast<size_t>(a.cols) * kN);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 7919) % 17) * 0.125f - 1.0f;
  std::vector<double> ref(static_cast<size_t>(a.rows) * kN, 0.0), mag(ref.size(), 0.0);
  for (int32_t r = 0; r < a.rows; ++r)
    for (int32_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
      for (int c = 0; c < kN; ++c) {
        const double p = double{a.values[k]} * b[static_cast<size_t>(a.col_idx[k]) * kN + c];
        ref[static_cast<size_t>(r) * kN + c] += p;
        mag[static_cast<size_t>(r) * kN + c] += std::abs(p);
      }
  DeviceBuffer<float> bd{std::span<const float>(b)}, cd(ref.size());
  Stream s(ctx());
  plan.run(bd, cd, s);
  s.synchronize();
  const auto c = cd.download();
  size_t bad = 0;
  for (size_t i = 0; i < c.size(); ++i) bad += std::abs(c[i] - ref[i]) > 2e-3 * mag[i] + 1e-6;
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("SpmmPlanTrialIsRecordedAndReusedByAFreshProcess") {
  const TempDb db("trial-spmm");
  // A band: its 16-row windows are dense enough that auto takes the condensed tensor-core path
  // (SpmmAutoTakesCondensedForABand, cpu tier), so a trial runs.
  const auto gen = generate("banded:n=65536,bw=8");
  const auto a = gen.cast<float>();
  SpmmOptions o;
  o.trial_ms = 50;
  // n = 128: the width `dbsparse explain --op spmm` plans with (the fresh process below).
  const SpmmPlan first = plan_spmm(ctx(), a, 128, o);
  INFO(first.explain());
  CHECK(first.explain().find("plan-time trial") != std::string::npos);
  const auto rec = recorded_choice(db, a, "spmm", "n128.f32");
  REQUIRE(rec.has_value());
  CHECK(rec->choice == to_string(first.path()));
  // The plan the trial kept computes A B.
  check_spmm_128(first, a);
  // A fresh process plans the same matrix: it reads the outcome and times nothing.
  const std::string text = explain_in_fresh_process(db, gen, "spmm");
  INFO(text);
  CHECK(text.find("trial recorded in the tuning DB: " + std::string(to_string(first.path()))) != std::string::npos);
}

// Auto's degree order on the CSR path (rows' CV alone) is weighed against A's own order.
TEST_CASE("SpmmAutoDegreeOrderIsTrialledAgainstOwnOrderRecordedAndCorrect") {
  const TempDb db("trial-spmm-order");
  const auto gen = generate("rmat:scale=15,ef=16,scramble=1");
  const auto a = gen.cast<float>();
  SpmmOptions o;
  o.trial_ms = 50;
  const SpmmPlan first = plan_spmm(ctx(), a, 128, o);
  INFO(first.explain());
  REQUIRE(first.path() == SpmmPath::CsrCudaCore);
  CHECK(first.explain().find("plan-time trial") != std::string::npos);
  const auto rec = recorded_choice(db, a, "spmm", "n128.f32");
  REQUIRE(rec.has_value());
  CHECK(rec->choice == (first.reorder() == Reorder::Degree ? "csr-degree" : "csr-none"));
  check_spmm_128(first, a);
  const std::string text = explain_in_fresh_process(db, gen, "spmm");
  INFO(text);
  CHECK(text.find("trial recorded in the tuning DB: " + rec->choice) != std::string::npos);
}

TEST_CASE("BfsPlanTrialIsRecordedReusedAndCorrect") {
  const TempDb db("trial-bfs");
  const auto gen = generate("rmat:scale=15,ef=16,scramble=1");
  BfsOptions o;
  o.trial_ms = 50;
  const BfsPlan plan = plan_bfs(ctx(), gen, o);
  INFO(plan.explain());
  CHECK(plan.explain().find(fmt::format("plan-time trial over {} sources", detail::kTrialSources)) !=
        std::string::npos);
  const auto rec = recorded_choice(db, gen, "bfs", "");
  REQUIRE(rec.has_value());
  CHECK((rec->choice == "auto" || rec->choice == "push"));
  // Whatever alpha the trial kept, the levels are the reference's.
  DeviceBuffer<int32_t> levels(static_cast<size_t>(gen.rows));
  Stream s(ctx());
  for (int32_t src : {0, gen.rows / 2}) {
    plan.run(src, levels, s);
    s.synchronize();
    CHECK(levels.download() == reference::bfs(gen, src).level);
  }
  const std::string text = explain_in_fresh_process(db, gen, "bfs");
  INFO(text);
  CHECK(text.find("trial recorded in the tuning DB: " + rec->choice) != std::string::npos);
}

TEST_CASE("BfsSearchesTooLongForTrialRoundsAreTimedOneEachRecordedAndCorrect") {
  const TempDb db("trial-bfs-duel");
  const auto gen = generate("stencil2d:n=300");  // about 600 levels: rounds over 8 sources pass 40 ms
  BfsOptions o;
  o.trial_ms = 40;
  const BfsPlan plan = plan_bfs(ctx(), gen, o);
  INFO(plan.explain());
  CHECK(plan.explain().find("one search each") != std::string::npos);
  const auto rec = recorded_choice(db, gen, "bfs", "");
  REQUIRE(rec.has_value());
  CHECK(rec->detail.value("spent_ms", 1e9) <= 40.0);
  CHECK(plan.direction() == (rec->choice == "push" ? BfsDirection::Push : BfsDirection::Auto));
  DeviceBuffer<int32_t> levels(static_cast<size_t>(gen.rows));
  Stream s(ctx());
  for (int32_t src : {0, gen.rows / 2 + 150}) {
    plan.run(src, levels, s);
    s.synchronize();
    CHECK(levels.download() == reference::bfs(gen, src).level);
  }
  const std::string text = explain_in_fresh_process(db, gen, "bfs");
  INFO(text);
  CHECK(text.find("trial recorded in the tuning DB: " + rec->choice) != std::string::npos);
}

TEST_CASE("BfsAutoOnASmallGraphPushesUnlessAskedOtherwise") {
  const TempDb db("trial-bfs-small");
  const auto gen = generate("stencil2d:n=100");  // 10,000 vertices, under 50,000 entries
  const BfsPlan plain = plan_bfs(ctx(), gen);
  INFO(plain.explain());
  CHECK(plain.direction() == BfsDirection::Push);
  CHECK(plain.explain().find("size: auto on a graph of") != std::string::npos);
  BfsOptions keep;
  keep.trial_ms = 0;  // the policy as asked: no size rule
  CHECK(plan_bfs(ctx(), gen, keep).direction() == BfsDirection::Auto);
  // Asked for a trial, the small graph gets one.
  BfsOptions asked;
  asked.trial_ms = 20;
  CHECK(plan_bfs(ctx(), gen, asked).explain().find("plan-time trial") != std::string::npos);
  DeviceBuffer<int32_t> levels(static_cast<size_t>(gen.rows));
  Stream s(ctx());
  plain.run(0, levels, s);
  s.synchronize();
  CHECK(levels.download() == reference::bfs(gen, 0).level);
}

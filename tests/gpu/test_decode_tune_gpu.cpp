// Decode tuned on the GPU: one small layer searched through the op's objective with a small budget,
// its best config stored under the layer's problem key; a plan made afterwards takes that row (and
// says so) and its y matches the CPU's. Then dbtune itself on the layer: a row per bucket.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "dbsparse/decode_linear.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/pruning.hpp"
#include "gpu/gpu_support.hpp"
#include "tools/ops/registry.hpp"
#include "tuner/search.hpp"

namespace fs = std::filesystem;

namespace {

// $DBSPARSE_DB set to a file of the test's own for its length, so that plans read what it stored.
struct TempDb {
  fs::path file;
  std::string previous;
  bool had;
  explicit TempDb(const std::string& name)
      : file(fs::temp_directory_path() / fmt::format("dbsparse-{}-{}.db", name, getpid())) {
    fs::remove(file);
    const char* old = std::getenv("DBSPARSE_DB");
    had = old != nullptr;
    previous = old ? old : "";
    setenv("DBSPARSE_DB", file.c_str(), 1);
  }
  ~TempDb() {
    had ? setenv("DBSPARSE_DB", previous.c_str(), 1) : unsetenv("DBSPARSE_DB");
    fs::remove(file);
  }
};

// Max over rows of |y - ref| / sum |w x| for y = W (x where |x| >= tau), W's values rounded to f16
// as the plan holds them, x already exact in f16.
double masked_rel_err_f16(const CsrMatrix<float>& w, const std::vector<float>& x, float tau,
                          const std::vector<float>& got) {
  double worst = 0;
  for (int32_t i = 0; i < w.rows; ++i) {
    double ref = 0, scale = 0;
    for (int32_t p = w.row_ptr[i]; p < w.row_ptr[i + 1]; ++p) {
      const float xv = x[static_cast<size_t>(w.col_idx[p])];
      if (!(std::fabs(xv) >= tau)) continue;
      const double t = double{half_to_float(float_to_half(w.values[p]))} * xv;
      ref += t;
      scale += std::fabs(t);
    }
    worst = std::max(worst, std::fabs(got[static_cast<size_t>(i)] - ref) / std::max(scale, 1e-30));
  }
  return worst;
}

}  // namespace

TEST_CASE("DecodeTunedThroughItsObjectiveIsThePlansChoice") {
  TempDb temp("decode-tune");
  const std::string spec = "pruned:rows=2048,cols=1024,density=0.5,seed=1";
  const NamedMatrix m{spec, generate(spec)};
  const auto& op = tools::find_op("decode");
  const std::string dev = ctx().device().record().fingerprint, key = tools::db_key(op, m);
  CHECK(key == "decode.2048x1024.f16.w0.50");
  {
    auto db = TuningDb::open(TuningDb::default_path());
    db->upsert_device(ctx().device().record());
    db->upsert_matrix(tools::db_record(op, m));
    tools::ObjectiveOptions oo;
    oo.bucket = "a1";
    oo.state = op.objective_state(ctx(), m);
    const auto objective = op.objective(ctx(), m, oo);
    int ok = 0, failed = 0;
    tuner::Record record = [&](const nlohmann::json& c, const tuner::Measurement& r) {
      CAPTURE(c.dump());
      CAPTURE(r.detail);
      CHECK(r.status == TrialStatus::Ok);  // every config of the space builds and matches the CPU here
      (r.status == TrialStatus::Ok ? ok : failed)++;
      db->add_trial(Trial{dev, key, "decode", "a1", c, r.status, r.time_us, r.detail});
    };
    tuner::SearchOptions so;
    so.budget_s = 3;
    const auto r = tuner::search(op.space, *objective, {}, record, so);
    CHECK(r.strategy == "exhaustive");
    CHECK(ok >= 2);
    REQUIRE(std::isfinite(r.best_us));
    db->set_best(dev, key, "decode", "a1", r.best, r.best_us, r.default_us / r.best_us);
    MESSAGE(fmt::format("decode 2048x1024 a1: best {} at {:.1f} us, auto {:.1f} us", r.best.dump(), r.best_us,
                        r.default_us));
  }

  const CsrMatrix<float> w = m.csr.cast<float>();
  std::vector<float> x = synthetic_weights(1, w.cols, 5);
  for (auto& v : x) v = half_to_float(float_to_half(v));
  const auto xh = floats_to_half(x);
  DeviceBuffer<uint16_t> xd{std::span<const uint16_t>(xh)}, yd{static_cast<size_t>(w.rows)};
  Stream s(ctx());
  // f16 and tau 0: bucket a1, the tuned row.
  DecodeLinearPlan plan = plan_decode_linear(ctx(), w, DecodeLinearOptions{});
  CAPTURE(plan.explain());
  CHECK(plan.config_source() == ConfigSource::Tuned);
  CHECK(plan.explain().find("auto: tuned config for " + key + " [a1]") != std::string::npos);
  // What decode-bench reads as auto's choice without building the plan.
  const DecodeChoice choice = decode_plan_choice(ctx(), w.rows, w.cols, w.nnz(), DecodeLinearOptions{});
  CHECK(choice.mapping == plan.mapping());
  CHECK(choice.source == ConfigSource::Tuned);
  plan.run(xd.ptr(), yd.ptr(), s.handle());
  plan.run(xd.ptr(), yd.ptr(), s.handle());
  s.synchronize();
  CHECK(masked_rel_err_f16(w, x, 0.0f, half_to_floats(yd.download())) <= 1e-3);
  // Half of x kept: bucket a0.5, which nothing was tuned in: the model's choice, also right.
  DecodeLinearOptions half;
  half.tau = topk_threshold(x, 0.5);
  DecodeLinearPlan model = plan_decode_linear(ctx(), w, half);
  CAPTURE(model.explain());
  CHECK(model.config_source() == ConfigSource::Default);
  CHECK(model.explain().find("auto: model's choice for " + key + " [a0.5]") != std::string::npos);
  model.run(xd.ptr(), yd.ptr(), s.handle());
  model.run(xd.ptr(), yd.ptr(), s.handle());
  s.synchronize();
  CHECK(masked_rel_err_f16(w, x, half.tau, half_to_floats(yd.download())) <= 1e-3);
  // An asked mapping wins over the tuned row.
  DecodeLinearOptions asked;
  asked.mapping = DecodeMapping::RowBlocks;
  CHECK(plan_decode_linear(ctx(), w, asked).config_source() == ConfigSource::Explicit);
}

TEST_CASE("DbtuneTunesDecodeUnderItsProblemKeyPerBucket") {
  TempDb temp("dbtune-decode");
  const fs::path dbtune = dbs_test::sibling_binary("dbtune");
  REQUIRE_MESSAGE(!dbtune.empty(), "dbtune binary not found beside the test binary");
  const std::string spec = "pruned:rows=1024,cols=2048,density=0.5,seed=1";
  const std::string cmd = fmt::format("'{}' --ops decode --matrices {} --budget 1 --db '{}' > /dev/null 2>&1",
                                      dbtune.string(), spec, temp.file.string());
  REQUIRE(std::system(cmd.c_str()) == 0);
  auto db = TuningDb::open(temp.file.string(), /*read_only=*/true);
  const std::string dev = ctx().device().record().fingerprint, key = "decode.1024x2048.f16.w0.50";
  REQUIRE(db->find_matrix(key));
  CHECK(db->find_matrix(key)->features.nnz == 1024 * 1024);
  for (const auto& bucket : decode_density_buckets()) {
    CAPTURE(bucket);
    CHECK(db->best(dev, key, "decode", bucket));
  }
  CHECK(db->trials(dev, key, "decode").size() >= 8);  // each bucket's defaults and a candidate at least
  // The structure is not what decode's rows are stored under.
  CHECK_FALSE(db->find_matrix(structure_fingerprint(generate(spec))));
  // A plan of a shape dbtune has not seen but near it: predicted from it.
  const auto near = prune_magnitude(synthetic_weights(1024, 2560, 3), 1024, 2560, 0.5);
  DecodeLinearPlan p = plan_decode_linear(ctx(), near, DecodeLinearOptions{});
  CAPTURE(p.explain());
  CHECK(p.config_source() == ConfigSource::Predicted);
}

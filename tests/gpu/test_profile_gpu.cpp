// The device profile measured on this GPU: each figure sane against what the device's attributes
// say, the ops' calibrations in range, the profile's round trip through the tuning DB, and a
// plan-time trial's outcome recorded and reused by a plan in a fresh process.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "gpu/gpu_support.hpp"
#include "tools/ops/registry.hpp"

namespace {

// The peak the memory clock and bus give; a copy reaches part of it.
double attribute_peak(const DeviceInfo& d) {
  return 2.0 * static_cast<double>(d.memory_clock_khz) * 1e3 * d.memory_bus_bits / 8;
}

}  // namespace

TEST_CASE("DeviceProfileMeasuredIsSane") {
  const DeviceProfile p = measure_device_profile(ctx());
  INFO(p.summary());
  CHECK(p.source == ProfileSource::Measured);
  CHECK(p.complete());
  CHECK(p.sm_count == ctx().device().sm_count);
  const double peak = attribute_peak(ctx().device());
  if (peak > 0) {
    CHECK(p.copy_bytes_per_s > 0.5 * peak);
    CHECK(p.copy_bytes_per_s < 1.05 * peak);
  }
  // The L2 serves reads faster than device memory, within what an SM can issue.
  CHECK(p.l2_read_bytes_per_s > p.copy_bytes_per_s);
  CHECK(p.l2_read_bytes_per_s < 40e12);
  CHECK(p.launch_us > 0.3);
  CHECK(p.launch_us < 20);
  CHECK(p.grid_barrier_us > 0.1);
  CHECK(p.grid_barrier_us < 50);
  CHECK(p.atomic_ns > 50);
  CHECK(p.atomic_ns < 5000);
  // Within 2x of the built-in figures of a known card (the attributes' guess elsewhere).
  const DeviceProfile b = builtin_profile(ctx().device());
  if (b.source == ProfileSource::Builtin) {
    CHECK(p.copy_bytes_per_s > 0.5 * b.copy_bytes_per_s);
    CHECK(p.copy_bytes_per_s < 2.0 * b.copy_bytes_per_s);
  }
}

TEST_CASE("DeviceProfileWithCalibrationsRoundTripsThroughTheDb") {
  DeviceProfile p = dbsparse::tools::measure_profile(ctx(), {});
  for (const char* name : {"decode.ring.share.full", "decode.ring.share.half", "decode.dense_columns.share.full",
                           "decode.dense_columns.share.half", "decode.dense.share"}) {
    INFO(name);
    REQUIRE(p.calibrations.count(name) == 1);
    CHECK(p.calibrations.at(name) > 0.05);
    CHECK(p.calibrations.at(name) < 1.5);
  }
  const auto dir = dbs_test::temp_dir("profile-db");
  auto db = TuningDb::open((dir / "tuning.db").string());
  db->set_device_profile(p.device_fp, p.to_json(), p.measured_at);
  const DeviceProfile back = DeviceProfile::from_json(*db->device_profile(p.device_fp));
  CHECK(back.copy_bytes_per_s == p.copy_bytes_per_s);
  CHECK(back.calibrations == p.calibrations);
  CHECK(back.source == ProfileSource::Measured);
}

TEST_CASE("SpmmPlanTrialIsRecordedAndReusedByAFreshProcess") {
  const auto dir = dbs_test::temp_dir("trial-db");
  const std::string db_path = (dir / "tuning.db").string();
  const char* old = std::getenv("DBSPARSE_DB");
  const std::string saved = old ? old : "";
  setenv("DBSPARSE_DB", db_path.c_str(), 1);
  // A band: its 16-row windows are dense enough that auto takes the condensed tensor-core path
  // (SpmmAutoTakesCondensedForABand, cpu tier), so a trial runs.
  const auto gen = generate("banded:n=65536,bw=8");
  const auto a = gen.cast<float>();
  SpmmOptions o;
  o.trial_ms = 50;
  const SpmmPlan first = plan_spmm(ctx(), a, 32, o);
  INFO(first.explain());
  CHECK(first.explain().find("plan-time trial") != std::string::npos);
  const auto rec = TuningDb::open(db_path, true)
                       ->plan_choice(ctx().device().record().fingerprint, structure_fingerprint(a), "spmm", "n32.f32");
  REQUIRE(rec.has_value());
  CHECK(rec->choice == to_string(first.path()));
  // A fresh process (the CLI's explain, same DB) plans the same matrix: it reads the outcome and
  // times nothing.
  const auto cli = dbs_test::sibling_binary("dbsparse");
  REQUIRE_MESSAGE(!cli.empty(), "dbsparse binary not found beside the test binary");
  const auto mtx = dir / "a.mtx";
  write_matrix_market(mtx.string(), gen);
  const auto out = dir / "explain.txt";
  const std::string cmd =
      fmt::format("'{}' explain '{}' --op spmm > '{}' 2>&1", cli.string(), mtx.string(), out.string());
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  INFO(text);
  CHECK(text.find("trial recorded in the tuning DB: " + std::string(to_string(first.path()))) != std::string::npos);
  if (old)
    setenv("DBSPARSE_DB", saved.c_str(), 1);
  else
    unsetenv("DBSPARSE_DB");
}

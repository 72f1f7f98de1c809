// The device profile measured on this GPU: each figure sane against what the device's attributes
// say, the ops' calibrations in range, and the profile's round trip through the tuning DB.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

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
  for (const char* mapping : {"ring", "dense_columns", "dense"})
    for (const char* at : {".full", ".half"}) {
      const std::string suffix = std::string(mapping) == "dense" ? "" : at;
      const std::string share = fmt::format("decode.{}.share{}", mapping, suffix);
      const std::string fixed = fmt::format("decode.{}.fixed_us{}", mapping, suffix);
      INFO(share);
      REQUIRE(p.calibrations.count(share) == 1);
      REQUIRE(p.calibrations.count(fixed) == 1);
      REQUIRE(p.calibrations.count(share + ".small") == 1);
      CHECK(p.calibrations.count(fmt::format("decode.{}.split_bytes{}", mapping, suffix)) == 1);
      // A share above 1: the kernel reads faster than the copy (reads alone, no writes).
      CHECK(p.calibrations.at(share) > 0.05);
      CHECK(p.calibrations.at(share) < 2.0);
      CHECK(p.calibrations.at(fixed) > 0.3);
      CHECK(p.calibrations.at(fixed) < 30);
    }
  const auto dir = dbs_test::temp_dir("profile-db");
  auto db = TuningDb::open((dir / "tuning.db").string());
  db->set_device_profile(p.device_fp, p.to_json(), p.measured_at);
  const DeviceProfile back = DeviceProfile::from_json(*db->device_profile(p.device_fp));
  CHECK(back.copy_bytes_per_s == p.copy_bytes_per_s);
  CHECK(back.calibrations == p.calibrations);
  CHECK(back.source == ProfileSource::Measured);
}

// The device profile (include/dbsparse/device_profile.hpp): its JSON form and its checks, the
// built-in cards and the profile derived from a device's attributes, and the decoding cost
// model's choices on the recorded profiles of both cards.
#include <doctest/doctest.h>

#include <cmath>

#include "dbsparse/context.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/device_profile.hpp"
#include "dbsparse/error.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

DeviceInfo device(const std::string& name, int sms, int64_t mem_khz, int bus_bits) {
  DeviceInfo d;
  d.name = name;
  d.sm_count = sms;
  d.cc_major = 9;
  d.l2_bytes = 50 << 20;
  d.memory_clock_khz = mem_khz;
  d.memory_bus_bits = bus_bits;
  return d;
}

}  // namespace

TEST_CASE("DeviceProfileJsonRoundTrip") {
  DeviceProfile p = builtin_profile(device("NVIDIA A100-SXM4-80GB", 108, 1593000, 5120));
  p.calibrations["decode.ring.share.full"] = 0.61;
  const DeviceProfile back = DeviceProfile::from_json(p.to_json());
  CHECK(back.source == p.source);
  CHECK(back.device_fp == p.device_fp);
  CHECK(back.copy_bytes_per_s == p.copy_bytes_per_s);
  CHECK(back.calibrations == p.calibrations);
  CHECK(back.calibration("decode.ring.share.full", 0.4) == 0.61);
  CHECK(back.calibration("decode.ring.share.half", 0.4) == 0.4);  // absent: the fallback
}

TEST_CASE("DeviceProfileFromJsonNamesWhatIsWrong") {
  nlohmann::json j = builtin_profile(device("NVIDIA H200", 132, 3201000, 6144)).to_json();
  auto fails_naming = [](const nlohmann::json& bad, const std::string& what) {
    try {
      DeviceProfile::from_json(bad);
      FAIL("accepted: " << bad.dump());
    } catch (const DbError& e) {
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  nlohmann::json missing = j;
  missing.erase("launch_us");
  fails_naming(missing, "launch_us");
  nlohmann::json wrong = j;
  wrong["sm_count"] = "many";
  fails_naming(wrong, "sm_count");
  nlohmann::json zero = j;
  zero["copy_bytes_per_s"] = 0;
  fails_naming(zero, "not positive");
  nlohmann::json source = j;
  source["source"] = "guessed";
  fails_naming(source, "guessed");
}

TEST_CASE("BuiltinProfileMatchesKnownCardsByNameAndSms") {
  const DeviceProfile h100 = builtin_profile(device("NVIDIA H100 80GB HBM3", 132, 2619000, 5120));
  CHECK(h100.source == ProfileSource::Builtin);
  CHECK(h100.copy_bytes_per_s == doctest::Approx(2.762e12));
  CHECK(h100.calibration("decode.ring.share.full", 0) > 0);  // its decode calibration ships too
  const DeviceProfile h200 = builtin_profile(device("NVIDIA H200", 132, 3201000, 6144));
  CHECK(h200.source == ProfileSource::Builtin);
  CHECK(h200.copy_bytes_per_s == doctest::Approx(4.2e12));
  // The same name with fewer SMs (a cut-down part) is not that card: derived from attributes.
  const DeviceProfile cut = builtin_profile(device("NVIDIA H100 80GB HBM3", 114, 2619000, 5120));
  CHECK(cut.source == ProfileSource::Attributes);
  // An unknown card: 2 x 1.593 GHz x 5120 bits / 8 = 2.039 TB/s peak (an A100 80GB's figures).
  const DeviceProfile a100 = builtin_profile(device("NVIDIA A100-SXM4-80GB", 108, 1593000, 5120));
  CHECK(a100.source == ProfileSource::Attributes);
  CHECK(a100.copy_bytes_per_s == doctest::Approx(0.88 * 2.039e12).epsilon(0.001));
  CHECK(a100.sm_count == 108);
  CHECK(a100.complete());
  // No memory clock from the driver: still a complete profile, and it says so.
  const DeviceProfile blind = builtin_profile(device("Some GPU", 40, 0, 0));
  CHECK(blind.complete());
  CHECK(blind.note.find("no memory clock") != std::string::npos);
}

TEST_CASE("DecodeModelSolvesTheCalibratedShareBack") {
  // calibrate_decode stores share = bytes / ((t - fixed) * fill * bandwidth); the model must give t
  // back at that point, on any profile.
  const DeviceProfile h200 = dbs_test::recorded_profile("h200");
  for (DecodeMapping m : {DecodeMapping::Ring, DecodeMapping::DenseColumns, DecodeMapping::Dense}) {
    const DecodeModelTerms t = decode_model_terms(m, 8192, 4096, DecodeDtype::F16, 0.5, 1.0);
    REQUIRE(t.applies);
    const double measured_us = 30.0;
    const double fill = std::min(1.0, t.blocks / h200.sm_count);
    const double share = t.bytes / ((measured_us - t.fixed_us) * 1e-6 * fill * h200.copy_bytes_per_s);
    CHECK(decode_model_us(t, share, h200) == doctest::Approx(measured_us));
  }
}

TEST_CASE("DecodeModelReadsTheSmallSegmentBelowItsSplit") {
  DeviceProfile p = dbs_test::recorded_profile("h200");
  p.copy_bytes_per_s = 1e12;  // 1 byte a picosecond: bytes / 1e6 us at share 1
  p.calibrations = {{"decode.dense.share", 1.0},
                    {"decode.dense.fixed_us", 5.0},
                    {"decode.dense.share.small", 0.5},
                    {"decode.dense.fixed_us.small", 2.0},
                    {"decode.dense.split_bytes", 20e6}};
  // 1024 x 4096 f16 dense: 8,388,608 bytes, 64 x 32 blocks (a full grid): below the split, so
  // 2 + 8.388608 / 0.5 us; 4096 x 4096 reads 33,554,432 bytes, above it: 5 + 33.554432 us.
  const DecodeCosts small = estimate_decode_costs(1024, 4096, DecodeDtype::F16, 0.5, 1.0, p);
  const DecodeCosts large = estimate_decode_costs(4096, 4096, DecodeDtype::F16, 0.5, 1.0, p);
  CHECK(small.dense_us == doctest::Approx(2.0 + 8.388608 / 0.5));
  CHECK(large.dense_us == doctest::Approx(5.0 + 33.554432));
}

TEST_CASE("DecodeAutoOnTheRecordedH100ProfileTakesWhatWasFastestThere") {
  // tests/cases/profiles/h100.json was measured with `dbsparse profile --measure` on an H100; the
  // same call's `decode-bench --model llama-3.1-8b --dtype f16 --act-density 1,0.5` timed every
  // mapping (2026-12-06, half the weights kept). The fastest there, per layer:
  const DeviceProfile h100 = dbs_test::recorded_profile("h100");
  using M = DecodeMapping;
  auto pick = [&](int32_t rows, int32_t cols, double act) {
    return choose_decode_mapping(rows, cols, DecodeDtype::F16, 0.5, act, h100);
  };
  CHECK(pick(14336, 4096, 1.0) == M::Ring);          // gate: ring 37.3 us, dense 42.0, dense-columns 42.5
  CHECK(pick(4096, 14336, 1.0) == M::Ring);          // down: ring 35.9, dense 45.6
  CHECK(pick(28672, 4096, 1.0) == M::Ring);          // gate|up: ring 65.2, dense 78.6
  CHECK(pick(1024, 4096, 1.0) == M::Dense);          // k: dense 6.82, dense-columns 7.99
  CHECK(pick(4096, 4096, 1.0) == M::DenseColumns);   // q: dense-columns 15.5, ring 16.0, dense 16.5
  CHECK(pick(14336, 4096, 0.5) == M::DenseColumns);  // gate: dense-columns 24.2, ring 27.7
  CHECK(pick(28672, 4096, 0.5) == M::DenseColumns);  // gate|up: dense-columns 43.4, ring 47.2
  // The same layers on the H200's recorded profile (no calibration: the shares fitted there).
  const DeviceProfile h200 = dbs_test::recorded_profile("h200");
  CHECK(choose_decode_mapping(14336, 4096, DecodeDtype::F16, 0.5, 1.0, h200) == M::Dense);
}

// The device profile's built-in cards, its JSON form and the profile plans resolve
// (include/dbsparse/device_profile.hpp). The built-in figures and how they were measured:
// docs/decisions/device-profile.md.
#include "dbsparse/device_profile.hpp"

#include <cmath>

#include <fmt/format.h>

#include "dbsparse/context.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

const char* to_string(ProfileSource s) {
  switch (s) {
    case ProfileSource::Measured:
      return "measured";
    case ProfileSource::Builtin:
      return "builtin";
    case ProfileSource::Attributes:
      return "attributes";
  }
  return "?";
}

double DeviceProfile::calibration(const std::string& name, double fallback) const {
  const auto it = calibrations.find(name);
  return it != calibrations.end() && std::isfinite(it->second) && it->second > 0 ? it->second : fallback;
}

bool DeviceProfile::complete() const {
  for (double v : {copy_bytes_per_s, l2_read_bytes_per_s, launch_us, grid_barrier_us, atomic_ns})
    if (!(std::isfinite(v) && v > 0)) return false;
  return sm_count > 0 && l2_bytes > 0;
}

std::string DeviceProfile::summary() const {
  return fmt::format(
      "{} ({}): {} SMs, copy {:.2f} TB/s, L2 {} MiB at {:.1f} TB/s, launch {:.1f} us, grid barrier "
      "{:.1f} us, atomic {:.0f} ns{}",
      to_string(source), note, sm_count, copy_bytes_per_s * 1e-12, l2_bytes >> 20, l2_read_bytes_per_s * 1e-12,
      launch_us, grid_barrier_us, atomic_ns,
      calibrations.empty() ? "" : fmt::format(", {} calibrations", calibrations.size()));
}

nlohmann::json DeviceProfile::to_json() const {
  return {{"source", to_string(source)},
          {"device_fp", device_fp},
          {"note", note},
          {"sm_count", sm_count},
          {"l2_bytes", l2_bytes},
          {"shared_per_sm", shared_per_sm},
          {"copy_bytes_per_s", copy_bytes_per_s},
          {"l2_read_bytes_per_s", l2_read_bytes_per_s},
          {"launch_us", launch_us},
          {"grid_barrier_us", grid_barrier_us},
          {"atomic_ns", atomic_ns},
          {"measured_at", measured_at},
          {"calibrations", calibrations}};
}

namespace {

template <class T>
T field(const nlohmann::json& j, const char* name) {
  if (!j.is_object() || !j.contains(name)) throw DbError(fmt::format("device profile: field '{}' missing", name));
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw DbError(fmt::format("device profile: field '{}' has the wrong type ({})", name, j.at(name).dump()));
  }
}

}  // namespace

DeviceProfile DeviceProfile::from_json(const nlohmann::json& j) {
  DeviceProfile p;
  const auto src = field<std::string>(j, "source");
  p.source =
      src == "measured"  ? ProfileSource::Measured
      : src == "builtin" ? ProfileSource::Builtin
      : src == "attributes"
          ? ProfileSource::Attributes
          : throw DbError(fmt::format("device profile: source '{}' is none of measured, builtin, attributes", src));
  p.device_fp = field<std::string>(j, "device_fp");
  p.note = field<std::string>(j, "note");
  p.sm_count = field<int>(j, "sm_count");
  p.l2_bytes = field<int64_t>(j, "l2_bytes");
  p.shared_per_sm = field<int64_t>(j, "shared_per_sm");
  p.copy_bytes_per_s = field<double>(j, "copy_bytes_per_s");
  p.l2_read_bytes_per_s = field<double>(j, "l2_read_bytes_per_s");
  p.launch_us = field<double>(j, "launch_us");
  p.grid_barrier_us = field<double>(j, "grid_barrier_us");
  p.atomic_ns = field<double>(j, "atomic_ns");
  p.measured_at = field<int64_t>(j, "measured_at");
  p.calibrations = field<std::map<std::string, double>>(j, "calibrations");
  if (!p.complete()) throw DbError(fmt::format("device profile: a figure is missing or not positive: {}", j.dump()));
  return p;
}

namespace {

// Cards measured with `dbsparse profile --measure` (docs/decisions/device-profile.md says when and
// what each figure is), as that command's JSON: matched by the name's model and the SM count, so
// that a cut-down part of the same name gets the derived profile instead.
constexpr const char* kBuiltinCards = R"json([
 {
  "name_part": "H100 80GB HBM3",
  "sms": 132,
  "measured": "2026-12-06",
  "profile": {
   "copy_bytes_per_s": 2762000000000.0,
   "l2_read_bytes_per_s": 6375000000000.0,
   "launch_us": 3.432,
   "grid_barrier_us": 4.694,
   "atomic_ns": 152.9,
   "calibrations": {
    "decode.dense.fixed_us": 6.342,
    "decode.dense.fixed_us.small": 3.263,
    "decode.dense.share": 1.197,
    "decode.dense.share.small": 0.9184,
    "decode.dense.split_bytes": 33550000.0,
    "decode.dense_columns.fixed_us.full": 4.216,
    "decode.dense_columns.fixed_us.full.small": 5.365,
    "decode.dense_columns.fixed_us.half": 5.607,
    "decode.dense_columns.fixed_us.half.small": 5.409,
    "decode.dense_columns.share.full": 1.105,
    "decode.dense_columns.share.full.small": 1.234,
    "decode.dense_columns.share.half": 1.175,
    "decode.dense_columns.share.half.small": 1.132,
    "decode.dense_columns.split_bytes.full": 33550000.0,
    "decode.dense_columns.split_bytes.half": 16780000.0,
    "decode.ring.fixed_us.full": 6.725,
    "decode.ring.fixed_us.full.small": 8.28,
    "decode.ring.fixed_us.half": 7.131,
    "decode.ring.fixed_us.half.small": 6.366,
    "decode.ring.share.full": 0.7933,
    "decode.ring.share.full.small": 0.9673,
    "decode.ring.share.half": 0.6898,
    "decode.ring.share.half.small": 0.5977,
    "decode.ring.split_bytes.full": 18940000.0,
    "decode.ring.split_bytes.half": 9471000.0
   }
  }
 },
 {
  "name_part": "H200",
  "sms": 132,
  "measured": "copy 2026-11-29; the rest the H100's",
  "profile": {
   "copy_bytes_per_s": 4200000000000.0,
   "l2_read_bytes_per_s": 6400000000000.0,
   "launch_us": 3.4,
   "grid_barrier_us": 4.7,
   "atomic_ns": 153,
   "calibrations": {}
  }
 }
])json";

const nlohmann::json& builtin_cards() {
  static const nlohmann::json cards = nlohmann::json::parse(kBuiltinCards);
  return cards;
}

// A device-memory copy reaches about this share of the peak that clock and bus width give.
constexpr double kCopyShareOfPeak = 0.88;

}  // namespace

DeviceProfile builtin_profile(const DeviceInfo& info) {
  DeviceProfile p;
  p.device_fp = info.record().fingerprint;
  p.sm_count = std::max(info.sm_count, 1);
  p.l2_bytes = info.l2_bytes;
  p.shared_per_sm = info.shared_per_sm;
  for (const auto& c : builtin_cards()) {
    const auto name = c.at("name_part").get<std::string>();
    if (info.name.find(name) == std::string::npos || info.sm_count != c.at("sms").get<int>()) continue;
    const auto& f = c.at("profile");
    p.source = ProfileSource::Builtin;
    p.note = fmt::format("built-in {} (measured {})", name, c.at("measured").get<std::string>());
    p.copy_bytes_per_s = f.at("copy_bytes_per_s").get<double>();
    p.l2_read_bytes_per_s = f.at("l2_read_bytes_per_s").get<double>();
    p.launch_us = f.at("launch_us").get<double>();
    p.grid_barrier_us = f.at("grid_barrier_us").get<double>();
    p.atomic_ns = f.at("atomic_ns").get<double>();
    p.calibrations = f.at("calibrations").get<std::map<std::string, double>>();
    return p;
  }
  // Unknown card: the peak from the memory clock (double data rate) and bus, and latencies typical
  // of recent GPUs; L2 read bandwidth scales with the SMs that issue it.
  p.source = ProfileSource::Attributes;
  const double peak = 2.0 * static_cast<double>(info.memory_clock_khz) * 1e3 * info.memory_bus_bits / 8;
  p.copy_bytes_per_s = peak > 0 ? kCopyShareOfPeak * peak : 1e12;
  p.l2_read_bytes_per_s = std::max(3.0 * p.copy_bytes_per_s, 0.068e12 * p.sm_count);
  p.launch_us = 3.0;
  p.grid_barrier_us = 2.0;
  p.atomic_ns = 700;
  p.note = peak > 0 ? fmt::format("derived: peak {:.2f} TB/s from the memory clock and bus", peak * 1e-12)
                    : "derived: the driver gave no memory clock, 1 TB/s assumed";
  return p;
}

DeviceProfile resolve_device_profile(const DeviceInfo& info) {
  const std::string fp = info.record().fingerprint;
  if (auto j = lookup_device_profile_json(fp)) {
    try {
      return DeviceProfile::from_json(*j);
    } catch (const DbError& e) {
      // A damaged row must not stop a plan: the built-in figures still choose well enough.
      DeviceProfile p = builtin_profile(info);
      p.note += fmt::format("; the DB's measured profile is unusable ({})", e.what());
      return p;
    }
  }
  return builtin_profile(info);
}

}  // namespace dbsparse

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

// Cards measured with `dbsparse profile --measure` (docs/decisions/device-profile.md): matched by
// the name's model and the SM count, so that a cut-down part of the same name gets the derived
// profile instead.
struct BuiltinCard {
  const char* name_part;
  int sms;
  double copy_tbs, l2_read_tbs, launch_us, barrier_us, atomic_ns;
  std::map<std::string, double> calibrations;
};

const std::vector<BuiltinCard>& builtin_cards() {
  static const std::vector<BuiltinCard> cards = {
      {"H100 80GB HBM3", 132, 3.0, 9.0, 2.9, 2.0, 700, {}},
      {"H200",
       132,
       4.2,
       9.0,
       2.9,
       2.0,
       700,
       {{"decode.ring.share", 0.40}, {"decode.dense_columns.share", 0.80}, {"decode.dense.share", 0.92}}},
  };
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
  for (const BuiltinCard& c : builtin_cards()) {
    if (info.name.find(c.name_part) == std::string::npos || info.sm_count != c.sms) continue;
    p.source = ProfileSource::Builtin;
    p.note = fmt::format("built-in {}", c.name_part);
    p.copy_bytes_per_s = c.copy_tbs * 1e12;
    p.l2_read_bytes_per_s = c.l2_read_tbs * 1e12;
    p.launch_us = c.launch_us;
    p.grid_barrier_us = c.barrier_us;
    p.atomic_ns = c.atomic_ns;
    p.calibrations = c.calibrations;
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

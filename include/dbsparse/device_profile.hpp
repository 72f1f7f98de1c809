#pragma once
// What the cost models know of a GPU: measured once per device by `dbtune` (or `dbsparse profile
// --measure`) and stored in the tuning DB; where no measurement exists, a built-in profile of a
// known card, else one derived from the device's attributes. Every constant a model chooses a
// kernel by comes from here, and `explain` names the source.
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace dbsparse {

struct DeviceInfo;
class Context;

enum class ProfileSource {
  Measured,    // measured on this device (dbtune), read from the tuning DB
  Builtin,     // a card whose figures ship with the library, measured on that model elsewhere
  Attributes,  // derived from the device's attributes (peak bandwidth from memory clock and bus)
};
const char* to_string(ProfileSource s);

struct DeviceProfile {
  ProfileSource source = ProfileSource::Attributes;
  std::string device_fp;           // DeviceRecord::fingerprint of the device it describes
  std::string note;                // builtin: which card; measured: when; attributes: what was derived
  int sm_count = 1;                // multiprocessors
  int64_t l2_bytes = 0;            // L2 cache
  int64_t shared_per_sm = 0;       // shared memory an SM
  double copy_bytes_per_s = 0;     // device memory: bytes read + written a second by a streaming copy
  double l2_read_bytes_per_s = 0;  // a buffer that stays in L2, read
  double launch_us = 0;            // an empty kernel, back to back on a stream
  double grid_barrier_us = 0;      // one barrier across a full, co-resident grid
  double atomic_ns = 0;            // one global atomic in a dependent chain (its round trip)
  int64_t measured_at = 0;         // unix seconds; 0 unless measured
  // An op's own constants, measured by that op on this device (its registry entry's calibrate):
  // "decode.ring.share" and the like. A model reads one with calibration(name, fallback).
  std::map<std::string, double> calibrations;

  double calibration(const std::string& name, double fallback) const;
  // One line: the source and the main figures (explain's "device profile" line).
  std::string summary() const;
  nlohmann::json to_json() const;
  // Throws DbError naming the field that is missing or out of range.
  static DeviceProfile from_json(const nlohmann::json& j);
  // Every figure positive and finite (a measurement that failed is not stored).
  bool complete() const;
};

// The built-in profile of a card the library knows by name (figures measured on that model), else
// one derived from `info`'s attributes; never measures.
DeviceProfile builtin_profile(const DeviceInfo& info);

// Times the probe kernels on ctx's device (about a second): bandwidths, launch, grid barrier and
// atomic latencies. Calibrations are left empty (the op registry adds them). Throws CudaError.
DeviceProfile measure_device_profile(Context& ctx);

// The profile plans use: the tuning DB's measured profile of this device (read-only, the default
// DB), else builtin_profile(info).
DeviceProfile resolve_device_profile(const DeviceInfo& info);

}  // namespace dbsparse

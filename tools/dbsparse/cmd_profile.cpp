// `dbsparse profile`: the device profile the cost models read on this GPU, and where it came from
// (measured and stored by dbtune, built in for a known card, or derived from the attributes);
// --measure measures it now (about ten seconds) and stores it in the tuning DB.
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <memory>

#include "dbsparse/dbsparse.hpp"
#include "support/atomic_file.hpp"
#include "tools/dbsparse/commands.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::cli {

Runner add_profile(CLI::App& sub) {
  struct Args {
    bool measure = false, no_store = false;
    std::string json, db_path = TuningDb::default_path();
  };
  auto a = std::make_shared<Args>();
  sub.add_flag("--measure", a->measure,
               "Measure the device now (bandwidths, latencies, the ops' calibrations; about ten seconds) and store "
               "the profile in the tuning DB");
  sub.add_flag("--no-store", a->no_store, "With --measure: print the profile, leave the tuning DB alone");
  sub.add_option("--json", a->json, "Also write the profile as JSON to this file");
  sub.add_option("--db", a->db_path, "Tuning DB (default $DBSPARSE_DB or $XDG_DATA_HOME/dbsparse/tuning.db)");
  return [a]() {
    std::string why;
    if (!cuda_device_available(&why)) {
      if (a->measure) throw NoDeviceError(fmt::format("{}; there is nothing to measure", why));
      fmt::print("no CUDA device ({}): a profile describes a device, so there is none to show\n", why);
      return 0;
    }
    Context ctx;
    DeviceProfile p;
    if (a->measure) {
      const auto t0 = std::chrono::steady_clock::now();
      p = tools::measure_profile(ctx, [](const std::string& line) { fmt::print(stderr, "  {}\n", line); });
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fmt::print("measured in {:.1f} s\n", s);
      if (!a->no_store) {
        auto db = TuningDb::open(a->db_path);
        db->upsert_device(ctx.device().record());
        db->set_device_profile(p.device_fp, p.to_json(), p.measured_at);
        fmt::print("stored in {}\n", db->path());
      }
    } else {
      p = ctx.profile();
    }
    fmt::print("{} ({})\ndevice profile: {}\n", ctx.device().name, ctx.device().arch(), p.summary());
    for (const auto& [name, v] : p.calibrations) fmt::print("  {} = {:.4g}\n", name, v);
    if (!a->json.empty()) {
      support::write_file_atomic(a->json, p.to_json().dump(2) + "\n");
      fmt::print("wrote {}\n", a->json);
    }
    return 0;
  };
}

}  // namespace dbsparse::cli

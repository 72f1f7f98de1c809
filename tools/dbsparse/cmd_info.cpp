// `dbsparse info`: what this machine offers and what dbsparse has stored. Works with no GPU.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "codegen/kernel_cache.hpp"
#include "codegen/keys/spmv_key.hpp"
#include "codegen/nvrtc_compiler.hpp"
#include "dbsparse/context.hpp"
#include "dbsparse/tuning_db.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "tools/dbsparse/commands.hpp"
#include "support/atomic_file.hpp"

namespace dbsparse::cli {
namespace {

nlohmann::json jit_timing(const std::string& arch, bool have_device) {
  nlohmann::json out = nlohmann::json::array();
  std::unique_ptr<Context> ctx;
  if (have_device) ctx = std::make_unique<Context>();
  for (auto v : {codegen::ValueType::F32, codegen::ValueType::F64}) {
    codegen::SpmvKey key{v, codegen::SpmvStrategy::Scalar, 256};
    auto ks = codegen::make_source(key);
    nlohmann::json row = {{"key", ks.key}};
    // A cold compile bypasses every cache, so it is comparable run to run.
    row["cold_compile_ms"] = codegen::compile_to_cubin(ks, arch).compile_ms;
    if (ctx) {
      auto k = ctx->modules().get(ks, arch);
      row["origin"] = k.info.origin;
      row["acquire_ms"] = k.info.acquire_ms;
      row["module_load_ms"] = k.info.load_ms;
      row["total_ms"] = k.info.acquire_ms + k.info.load_ms;
    }
    out.push_back(row);
  }
  return out;
}

}  // namespace

Runner add_info(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto timing = std::make_shared<bool>(false);
  auto json_path = std::make_shared<std::string>();
  sub->add_flag("--jit-timing", *timing,
                "Time a cold NVRTC compile and this process's kernel load (from the persistent "
                "cache when an earlier process filled it)");
  sub->add_option("--json", *json_path, "Also write the report as JSON to this file");
  return [=]() {
    nlohmann::json report;
    report["version"] = DBSPARSE_VERSION;
    fmt::print("dbsparse {}\n", DBSPARSE_VERSION);

    std::string why;
    bool have_device = cuda_device_available(&why);
    std::string arch = "sm_90";
    if (have_device) {
      Context ctx;
      const auto& d = ctx.device();
      arch = d.arch();
      fmt::print("device:       {} ({}, {} SMs, {:.1f} GiB, L2 {} MiB), driver {}.{}\n", d.name, d.arch(), d.sm_count,
                 d.memory_bytes / 1073741824.0, d.l2_bytes >> 20, d.driver_version / 1000,
                 d.driver_version % 1000 / 10);
      fmt::print("  fingerprint: {}\n", d.record().fingerprint);
      report["device"] = {{"name", d.name},
                          {"arch", d.arch()},
                          {"sm_count", d.sm_count},
                          {"memory_bytes", d.memory_bytes},
                          {"l2_bytes", d.l2_bytes},
                          {"driver_version", d.driver_version},
                          {"fingerprint", d.record().fingerprint}};
    } else {
      fmt::print("device:       no CUDA device found ({})\n", why);
      report["device"] = nullptr;
      report["no_device_reason"] = why;
    }

    std::string nv_why;
    if (codegen::nvrtc_available(&nv_why)) {
      auto archs = codegen::nvrtc_supported_archs();
      fmt::print("NVRTC:        {} ({} .. {})\n", codegen::nvrtc_version(), archs.front(), archs.back());
      report["nvrtc"] = codegen::nvrtc_version();
    } else {
      fmt::print("NVRTC:        unavailable ({})\n", nv_why);
      report["nvrtc"] = nullptr;
    }

    auto& cache = codegen::KernelCache::global();
    auto usage = cache.disk_usage();
    std::error_code ec;
    // A file where the folder should be: kernels cannot be kept (precompile warns too).
    const bool not_a_dir = cache.persistent() && std::filesystem::exists(cache.dir(), ec) &&
                           !std::filesystem::is_directory(cache.dir(), ec);
    fmt::print("kernel cache: {} ({})\n", cache.persistent() ? cache.dir() : "in memory only",
               not_a_dir ? "not a directory: compiled kernels cannot be kept there"
                         : fmt::format("{} entries, {:.1f} KiB", usage.entries, usage.bytes / 1024.0));
    report["cache"] = {{"dir", cache.dir()}, {"entries", usage.entries}, {"bytes", usage.bytes}};
    if (not_a_dir) report["cache"]["usable"] = false;
    const auto aot_dirs = cache.aot_dirs();
    std::string aot_text;
    for (const auto& d : aot_dirs) aot_text += (aot_text.empty() ? "" : ", ") + d;
    fmt::print(
        "precompiled:  {}\n",
        aot_dirs.empty() ? (codegen::KernelCache::aot_disabled() ? "off (DBSPARSE_AOT_DIR)" : "none found") : aot_text);
    report["aot_dirs"] = aot_dirs;

    std::string db_path = TuningDb::default_path(), warning;
    auto db = TuningDb::try_open(db_path, /*read_only=*/true, &warning);
    std::optional<DbCounts> counts;
    if (db) {
      // An empty file (`touch tuning.db`) or one without dbsparse's tables opens but cannot be
      // counted: a state to report, not a reason for info to fail. dbtune initialises such a file.
      try {
        counts = db->counts();
      } catch (const DbError& e) {
        warning = fmt::format("{} (no dbsparse tables: dbtune initialises an empty file)", e.what());
      }
    }
    if (counts) {
      const auto& c = *counts;
      fmt::print("tuning DB:    {} (schema v{}; {} devices, {} matrices, {} trials, {} configs)\n", db_path,
                 db->schema_version(), c.devices, c.matrices, c.trials, c.configs);
      report["db"] = {{"path", db_path},
                      {"devices", c.devices},
                      {"matrices", c.matrices},
                      {"trials", c.trials},
                      {"configs", c.configs}};
    } else {
      fmt::print("tuning DB:    {} ({})\n", db_path,
                 warning.empty() ? "not created yet: run dbtune" : "unusable: " + warning);
      report["db"] = {{"path", db_path}, {"usable", false}, {"warning", warning}};
    }

    if (*timing) {
      if (!nv_why.empty()) throw Error("--jit-timing needs NVRTC: " + nv_why);
      auto rows = jit_timing(arch, have_device);
      fmt::print("JIT timing ({}):\n", arch);
      for (const auto& r : rows) {
        fmt::print("  {:<22} cold NVRTC compile {:7.1f} ms", r["key"].get<std::string>(),
                   r["cold_compile_ms"].get<double>());
        if (r.contains("origin"))
          fmt::print(" | this process: binary from {} {:.2f} ms + module load {:.2f} ms = {:.2f} ms",
                     r["origin"].get<std::string>(), r["acquire_ms"].get<double>(), r["module_load_ms"].get<double>(),
                     r["total_ms"].get<double>());
        fmt::print("\n");
      }
      report["jit_timing"] = rows;
    }
    if (!json_path->empty()) {
      support::write_file_atomic(*json_path, report.dump(2) + "\n");  // an unwritable path is an error, not exit 0
    }
    return 0;
  };
}

}  // namespace dbsparse::cli

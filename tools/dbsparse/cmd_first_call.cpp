// `dbsparse first-call`: each op's first plan-and-call in a fresh process, with an empty kernel
// cache and then with the cache that run filled: what a user's first call costs. The parent runs
// this executable again (`--child OP`) per op and mode, with its own cache and tuning DB in a
// temporary folder, and times the child from spawn to exit; the child reports its own phases.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codegen/kernel_cache.hpp"
#include "dbsparse/context.hpp"
#include "dbsparse/error.hpp"
#include "support/atomic_file.hpp"
#include "tools/dbsparse/child_report.hpp"
#include "tools/dbsparse/commands.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The child: a context, the op's input made, then the plan (config look-up, analysis, kernels from
// the cache or NVRTC) and its first call launched and waited for. One JSON line on stdout.
int run_child(const std::string& op) {
  const auto& desc = tools::find_op(op);
  if (!desc.first_call) throw UsageError(fmt::format("first-call: op {} has no first call to time", op));
  auto t = Clock::now();
  Context ctx;
  const double context_ms = ms_since(t);
  Stream s(ctx);
  const tools::FirstCall first = desc.first_call(ctx, s);
  s.synchronize();
  t = Clock::now();
  const std::function<void()> call = first.plan();
  const double plan_ms = ms_since(t);
  t = Clock::now();
  call();
  s.synchronize();
  const double call_ms = ms_since(t);
  nlohmann::json j{{"op", op},           {"what", first.what}, {"context_ms", context_ms},
                   {"plan_ms", plan_ms}, {"call_ms", call_ms}, {"first_call_ms", plan_ms + call_ms}};
  // Where the kernels came from: precompiled (aot), the user's cache (disk) or NVRTC (compiled).
  const codegen::CacheStats st = codegen::KernelCache::global().stats();
  j["kernels"] = {{"aot", st.aot_hits}, {"disk", st.disk_hits}, {"compiled", st.compiles}};
  fmt::print("{}\n", j.dump());
  return 0;
}

// One child run: its wall time from spawn to exit and its report (or what it printed instead).
nlohmann::json run_one(const fs::path& self, const fs::path& dir, const std::string& op, const std::string& mode) {
  const std::string cmd = fmt::format("DBSPARSE_CACHE_DIR='{}' DBSPARSE_DB='{}' '{}' first-call --child {} 2>&1",
                                      (dir / "cache").string(), (dir / "tuning.db").string(), self.string(), op);
  const auto t0 = Clock::now();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw Error(fmt::format("first-call: cannot start {}", self.string()));
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  nlohmann::json r{{"op", op}, {"cache", mode}, {"process_ms", ms_since(t0)}};
  if (status == 0)
    if (auto report = last_line_json(out)) {
      r.update(*report);
      return r;
    }
  r["error"] = out.empty() ? fmt::format("exit status {}", status) : out;
  return r;
}

}  // namespace

Runner add_first_call(CLI::App& sub) {
  auto ops = std::make_shared<std::vector<std::string>>();
  auto child = std::make_shared<std::string>();
  auto json = std::make_shared<std::string>();
  sub.add_option("--op", *ops, "Ops to time (default: every op with a first call)")
      ->check(CLI::IsMember(tools::op_names()));
  sub.add_option("--json", *json, "Also write the rows as JSON to this file");
  sub.add_option("--child", *child, "(internal) time one op in this process and print one JSON line");
  return [=]() {
    if (!child->empty()) return run_child(*child);
    std::string why;
    if (!cuda_device_available(&why)) throw NoDeviceError(fmt::format("{}; there is no first call to time", why));
    std::vector<std::string> selected = *ops;
    if (selected.empty())
      for (const auto* d : tools::ops())
        if (d->first_call) selected.push_back(d->name);
    const fs::path self = fs::read_symlink("/proc/self/exe");
    const fs::path dir = fs::temp_directory_path() / fmt::format("dbsparse-first-call-{}", getpid());
    nlohmann::json rows = nlohmann::json::array();
    fmt::print("{:<8} {:<7} {:>11} {:>11} {:>10} {:>9}  {}\n", "op", "cache", "process ms", "context ms", "plan ms",
               "call ms", "call");
    for (const auto& op : selected) {
      fs::remove_all(dir);  // each op starts from an empty cache and DB
      fs::create_directories(dir);
      for (const char* mode : {"empty", "filled"}) {
        const nlohmann::json r = run_one(self, dir, op, mode);
        rows.push_back(r);
        if (r.contains("error")) {
          fmt::print("{:<8} {:<7} failed: {}\n", op, mode, r["error"].get<std::string>());
          continue;
        }
        const nlohmann::json k = r.value("kernels", nlohmann::json::object());
        fmt::print("{:<8} {:<7} {:>11.1f} {:>11.1f} {:>10.1f} {:>9.2f}  {} [kernels: {} aot, {} disk, {} compiled]\n",
                   op, mode, r["process_ms"].get<double>(), r["context_ms"].get<double>(), r["plan_ms"].get<double>(),
                   r["call_ms"].get<double>(), r["what"].get<std::string>(), k.value("aot", 0), k.value("disk", 0),
                   k.value("compiled", 0));
      }
    }
    fs::remove_all(dir);
    if (!json->empty()) {
      support::write_file_atomic(*json, nlohmann::json{{"first_call", rows}}.dump(2) + "\n");
      fmt::print("wrote {}\n", *json);
    }
    return 0;
  };
}

}  // namespace dbsparse::cli

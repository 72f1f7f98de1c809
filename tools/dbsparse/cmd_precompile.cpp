// `dbsparse precompile`: fills the persistent kernel cache for a named arch. Needs NVRTC, no GPU.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <atomic>
#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "codegen/compile_pool.hpp"
#include "codegen/kernel_cache.hpp"
#include "codegen/nvrtc_compiler.hpp"
#include "dbsparse/context.hpp"
#include "tools/dbsparse/commands.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::cli {

namespace {

// ptxas's report for each kernel of ks, one line each, named by the name expression it was
// lowered from. The variant is compiled again with -v (the cached cubin carries no report).
void print_resources(const codegen::KernelSource& ks, const std::string& arch) {
  codegen::KernelSource v = ks;
  v.options.push_back("--ptxas-options=-v");
  const codegen::CompiledKernel k = codegen::compile_to_cubin(v, arch);
  static const std::regex kFrame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::string function, properties;
  bool spills = false;
  size_t at = 0;
  while (at < k.log.size()) {
    size_t end = k.log.find('\n', at);
    if (end == std::string::npos) end = k.log.size();
    const std::string line = k.log.substr(at, end - at);
    at = end + 1;
    if (const size_t q = line.find("entry function '"); q != std::string::npos) {
      const size_t b = q + 16, e = line.find('\'', b);
      function = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
      for (const auto& [expr, mangled] : k.lowered_names)
        if (mangled == function) function = expr;
    } else if (std::smatch m; std::regex_search(line, m, kFrame)) {
      properties = m.str(0);
      spills = m.str(1) != "0" || m.str(2) != "0" || m.str(3) != "0";
    } else if (const size_t u = line.find("Used "); u != std::string::npos) {
      fmt::print("      {:<64} {}; {}{}\n", function, line.substr(u), properties, spills ? "  <- stack or spills" : "");
      properties.clear();
      spills = false;
    }
  }
}

// The variants to compile: each op's default-reachable set (OpDescriptor::default_variants) or all;
// with keys, only those of them (a UsageError names a key none of them has).
std::vector<codegen::KernelSource> precompile_sources(const std::vector<std::string>& ops, const std::string& set,
                                                      const std::vector<std::string>& keys) {
  std::vector<codegen::KernelSource> all;
  std::vector<bool> found(keys.size(), false);
  std::set<std::string> seen;
  for (const auto& op : ops.empty() ? tools::op_names() : ops) {
    const auto& d = tools::find_op(op);
    std::vector<codegen::KernelSource> of_op = set == "all" ? d.variants(/*opt_in=*/false) : tools::default_variants(d);
    // tune: what dbtune's searches reach as well, for the ops it tunes by default, so that a fresh
    // machine's dbtune finds them installed instead of compiling them.
    if (set == "tune" && d.tuned_by_default)
      for (auto& ks : d.variants(/*opt_in=*/false)) of_op.push_back(std::move(ks));
    for (auto& ks : of_op) {
      if (!seen.insert(ks.key).second) continue;
      const auto at = std::find(keys.begin(), keys.end(), ks.key);
      if (!keys.empty() && at == keys.end()) continue;
      if (at != keys.end()) found[static_cast<size_t>(at - keys.begin())] = true;
      all.push_back(std::move(ks));
    }
  }
  for (size_t i = 0; i < keys.size(); ++i)
    if (!found[i]) throw UsageError(fmt::format("precompile --key: no {} variant is '{}'", set, keys[i]));
  return all;
}

std::vector<std::string> split_archs(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= text.size();) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

struct PassTotals {
  int kernels = 0;
  double total_ms = 0, wall_ms = 0;
  int64_t aot_bytes = 0;  // written under --aot
};

// One arch's pass over `all` on the pool; with aot_dir, each kernel is also written there as an AOT
// entry. Throws UsageError with the first failure (a bad --arch fails every variant).
PassTotals precompile_pass(codegen::KernelCache& cache, const std::vector<codegen::KernelSource>& all,
                           const std::string& target, int threads, bool resources, const std::string& aot_dir) {
  PassTotals t;
  std::string first_error;
  std::atomic<bool> failed{false};  // what the workers poll (first_error is written under done's lock)
  const auto t0 = std::chrono::steady_clock::now();
  codegen::cache_all(
      cache, all, target, threads,
      [&](const codegen::PoolOutcome& o) {
        const auto& ks = all[o.index];
        std::string error = o.error;
        if (error.empty() && !aot_dir.empty()) {
          try {
            t.aot_bytes += codegen::KernelCache::write_aot_entry(aot_dir, ks, target, *o.kernel.kernel);
          } catch (const std::exception& e) {  // done() must not throw
            error = e.what();
          }
        }
        if (!error.empty()) {
          if (first_error.empty()) first_error = fmt::format("{}: {}", ks.key, error);
          failed = true;
          return;
        }
        fmt::print("  {:<56} {:>9} {:8.1f} ms  {:>7} bytes\n", ks.key, to_string(o.kernel.origin), o.kernel.ms,
                   o.kernel.kernel->cubin.size());
        if (resources) print_resources(ks, target);
        std::fflush(stdout);
        t.total_ms += o.kernel.ms;
        ++t.kernels;
      },
      [&] { return failed.load(); });
  t.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!first_error.empty()) throw UsageError("precompile: " + first_error);
  return t;
}

std::string mib(int64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

Runner add_precompile(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto arch = std::make_shared<std::string>();
  auto ops = std::make_shared<std::vector<std::string>>();
  sub->add_option("--arch", *arch,
                  "Targets, comma-separated, e.g. sm_90 (compute capability 9.0) or sm_80,sm_86,sm_90; default: the "
                  "current device's arch");
  sub->add_option("--op", *ops, "Ops to precompile (default: all)")->check(CLI::IsMember(tools::op_names()));
  auto jobs = std::make_shared<int>(0);
  sub->add_option("--jobs,-j", *jobs, "NVRTC compiles at once (default 0: one per core)")
      ->check(CLI::NonNegativeNumber);
  auto resources = std::make_shared<bool>(false);
  sub->add_flag("--resources", *resources,
                "Also compile each variant once more with ptxas -v and print each kernel's registers, spills, stack "
                "and shared memory (what Nsight Compute would show, without a GPU)");
  auto aot = std::make_shared<std::string>();
  sub->add_option("--aot", *aot,
                  "Also write each kernel as a precompiled (AOT) entry under this folder, <arch>/ a folder, for "
                  "installing to share/dbsparse/kernels or naming in DBSPARSE_AOT_DIR");
  auto set = std::make_shared<std::string>();
  sub->add_option("--variants", *set,
                  "default: the variants default configs and auto choices reach; tune: those and the variants "
                  "dbtune's searches reach for the ops it tunes by default; all: every variant (default: tune with "
                  "--aot, all without)")
      ->check(CLI::IsMember({"default", "tune", "all"}));
  auto keys = std::make_shared<std::vector<std::string>>();
  sub->add_option("--key", *keys, "Only these variants, by key (as --list prints them)");
  auto list = std::make_shared<bool>(false);
  sub->add_flag("--list", *list, "Print the variants' keys, one a line, and compile nothing");
  return [=]() {
    if (*list) {
      const std::string which = set->empty() ? (aot->empty() ? "all" : "tune") : *set;
      for (const auto& ks : precompile_sources(*ops, which, *keys)) fmt::print("{}\n", ks.key);
      return 0;
    }
    std::vector<std::string> targets = split_archs(*arch);
    if (targets.empty()) {
      std::string why;
      if (!cuda_device_available(&why))
        throw UsageError("no CUDA device (" + why + "); name the target with --arch, e.g. --arch sm_90");
      targets.push_back(Context().device().arch());
    }
    // Under --aot the AOT folders are not read: every kernel comes from the user's cache or NVRTC.
    codegen::KernelCache own(codegen::KernelCache::default_dir(), codegen::KernelCache::default_dir() != "off");
    auto& cache = aot->empty() ? codegen::KernelCache::global() : own;
    const std::string which = set->empty() ? (aot->empty() ? "all" : "tune") : *set;
    const std::vector<codegen::KernelSource> all = precompile_sources(*ops, which, *keys);
    // --resources compiles each variant again with ptxas -v and prints its report under its line:
    // one worker, so the reports stay with their variants.
    const int threads = *resources ? 1 : *jobs;
    int64_t aot_total = 0;
    for (const auto& target : targets) {
      fmt::print("precompiling {} variants ({}) for {} into {}{} on {} threads\n", all.size(), which, target,
                 cache.persistent() ? cache.dir() : "(memory)", aot->empty() ? "" : " and " + *aot,
                 codegen::pool_threads(threads, all.size()));
      const PassTotals t = precompile_pass(cache, all, target, threads, *resources, *aot);
      fmt::print("{} kernels ready for {} ({:.0f} ms of compiles and loads, {:.0f} ms wall)\n", t.kernels, target,
                 t.total_ms, t.wall_ms);
      if (!aot->empty()) fmt::print("AOT {}: {} bytes ({})\n", target, t.aot_bytes, mib(t.aot_bytes));
      aot_total += t.aot_bytes;
    }
    if (!aot->empty())
      fmt::print("AOT total: {} kernels, {} archs, {} bytes ({}) in {}\n", all.size() * targets.size(), targets.size(),
                 aot_total, mib(aot_total), *aot);
    return 0;
  };
}

}  // namespace dbsparse::cli

// `dbsparse precompile`: fills the persistent kernel cache for a named arch. Needs NVRTC, no GPU.
#include <fmt/format.h>

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

}  // namespace

Runner add_precompile(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto arch = std::make_shared<std::string>();
  auto ops = std::make_shared<std::vector<std::string>>();
  sub->add_option("--arch", *arch,
                  "Target, e.g. sm_90 (compute capability 9.0) or sm_80 (8.0); default: the current device's arch");
  sub->add_option("--op", *ops, "Ops to precompile (default: all)")->check(CLI::IsMember(tools::op_names()));
  auto jobs = std::make_shared<int>(0);
  sub->add_option("--jobs,-j", *jobs, "NVRTC compiles at once (default 0: one per core)")
      ->check(CLI::NonNegativeNumber);
  auto resources = std::make_shared<bool>(false);
  sub->add_flag("--resources", *resources,
                "Also compile each variant once more with ptxas -v and print each kernel's registers, spills, stack "
                "and shared memory (what Nsight Compute would show, without a GPU)");
  return [=]() {
    std::string target = *arch;
    if (target.empty()) {
      std::string why;
      if (!cuda_device_available(&why))
        throw UsageError("no CUDA device (" + why + "); name the target with --arch, e.g. --arch sm_90");
      target = Context().device().arch();
    }
    auto& cache = codegen::KernelCache::global();
    fmt::print("precompiling for {} into {}\n", target, cache.persistent() ? cache.dir() : "(memory)");
    std::vector<codegen::KernelSource> all;
    for (const auto& op : ops->empty() ? tools::op_names() : *ops)
      for (auto& ks : tools::find_op(op).variants(/*opt_in=*/false)) all.push_back(std::move(ks));
    int n = 0;
    double total_ms = 0;
    std::string first_error;          // the first failure stops the pass (a bad --arch fails every variant)
    std::atomic<bool> failed{false};  // what the workers poll (first_error is written under done's lock)
    const auto t0 = std::chrono::steady_clock::now();
    // --resources compiles each variant again with ptxas -v and prints its report under its line:
    // one worker, so the reports stay with their variants.
    const int threads = *resources ? 1 : *jobs;
    fmt::print("{} variants on {} threads\n", all.size(), codegen::pool_threads(threads, all.size()));
    codegen::cache_all(
        cache, all, target, threads,
        [&](const codegen::PoolOutcome& o) {
          const auto& ks = all[o.index];
          if (!o.error.empty()) {
            if (first_error.empty()) first_error = fmt::format("{}: {}", ks.key, o.error);
            failed = true;
            return;
          }
          fmt::print("  {:<56} {:>9} {:8.1f} ms  {:>7} bytes\n", ks.key, to_string(o.kernel.origin), o.kernel.ms,
                     o.kernel.kernel->cubin.size());
          if (*resources) print_resources(ks, target);
          std::fflush(stdout);
          total_ms += o.kernel.ms;
          ++n;
        },
        [&] { return failed.load(); });
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!first_error.empty()) throw UsageError("precompile: " + first_error);
    fmt::print("{} kernels ready ({:.0f} ms of compiles and loads, {:.0f} ms wall)\n", n, total_ms, wall_ms);
    return 0;
  };
}

}  // namespace dbsparse::cli

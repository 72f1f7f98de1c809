// `dbsparse precompile`: fills the persistent kernel cache for a named arch. Needs NVRTC, no GPU.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel_cache.hpp"
#include "dbsparse/context.hpp"
#include "tools/dbsparse/commands.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::cli {

Runner add_precompile(CLI::App& sub_ref) {
  auto* sub = &sub_ref;
  auto arch = std::make_shared<std::string>();
  auto ops = std::make_shared<std::vector<std::string>>();
  sub->add_option("--arch", *arch,
                  "Target, e.g. sm_90 (H100/H200) or sm_80; default: the current device's arch");
  sub->add_option("--op", *ops, "Ops to precompile (default: all)")
      ->check(CLI::IsMember(tools::op_names()));
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
    int n = 0;
    double total_ms = 0;
    auto selected = ops->empty() ? tools::op_names() : *ops;
    for (const auto& op : selected) {
      for (const auto& ks : tools::find_op(op).variants(/*opt_in=*/false)) {
        auto k = cache.get(ks, target);
        fmt::print("  {:<56} {:>9} {:8.1f} ms  {:>7} bytes\n", ks.key, to_string(k.origin), k.ms,
                   k.kernel->cubin.size());
        std::fflush(stdout);
        total_ms += k.ms;
        ++n;
      }
    }
    fmt::print("{} kernels ready ({:.0f} ms)\n", n, total_ms);
    return 0;
  };
}

}  // namespace dbsparse::cli

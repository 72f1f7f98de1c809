#pragma once
// Modules loaded into one context, keyed by the cache key: each kernel variant is loaded once per
// context and unloaded with it.
#include <cuda.h>

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_cache.hpp"
#include "dbsparse/plan_info.hpp"

namespace dbsparse::detail {

struct LoadedKernel {
  CUfunction fn = nullptr;               // the first name expression's kernel
  std::vector<CUfunction> fns;           // one per name expression, in order
  std::vector<std::string> entry_names;  // KernelSource::entry_names, the roles of fns
  KernelInfo info;

  // The entry point declared with this role (KernelSource::add_entry); throws Error naming the
  // kernel and the roles it has when there is none, so a renamed role fails at plan time.
  CUfunction entry(std::string_view role) const;
};

class ModuleRegistry {
 public:
  ModuleRegistry() = default;
  ~ModuleRegistry();
  ModuleRegistry(const ModuleRegistry&) = delete;
  ModuleRegistry& operator=(const ModuleRegistry&) = delete;

  // Cache lookup (memory, disk or NVRTC), then cuModuleLoadData on a first use in this context.
  LoadedKernel get(const codegen::KernelSource& ks, const std::string& arch);

 private:
  std::mutex mu_;
  struct Entry {
    CUmodule module = nullptr;
    std::vector<CUfunction> fns;
  };
  std::map<std::string, Entry> loaded_;
};

}  // namespace dbsparse::detail

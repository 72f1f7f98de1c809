#pragma once
// Modules loaded into one context, keyed by the cache key: each kernel variant is loaded once per
// context and unloaded with it.
#include <cuda.h>

#include <map>
#include <mutex>
#include <string>

#include "codegen/kernel_cache.hpp"
#include "dbsparse/plan_info.hpp"

namespace dbsparse::detail {

struct LoadedKernel {
  CUfunction fn = nullptr;
  KernelInfo info;
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
  std::map<std::string, std::pair<CUmodule, CUfunction>> loaded_;
};

}  // namespace dbsparse::detail

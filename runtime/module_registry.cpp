#include "runtime/module_registry.hpp"

#include <chrono>

#include "runtime/cuda_driver.hpp"

namespace dbsparse::detail {

ModuleRegistry::~ModuleRegistry() {
  std::string why;
  if (!cuda::driver_available(&why)) return;
  for (auto& [key, mf] : loaded_) cuda::driver().cuModuleUnload(mf.first);
}

LoadedKernel ModuleRegistry::get(const codegen::KernelSource& ks, const std::string& arch) {
  LoadedKernel out;
  out.info.key = ks.key;
  auto& cache = codegen::KernelCache::global();
  std::string full_key = cache.full_key(ks, arch);
  {
    std::lock_guard lock(mu_);
    if (auto it = loaded_.find(full_key); it != loaded_.end()) {
      out.fn = it->second.second;
      out.info.origin = "loaded";
      return out;
    }
  }
  auto cached = cache.get(ks, arch);
  out.info.origin = codegen::to_string(cached.origin);
  out.info.acquire_ms = cached.ms;

  auto t0 = std::chrono::steady_clock::now();
  CUmodule mod = nullptr;
  DBS_CU(cuModuleLoadData(&mod, cached.kernel->cubin.data()));
  CUfunction fn = nullptr;
  // One name expression per source today; the first is the entry point.
  const std::string& lowered = cached.kernel->lowered_names.at(0).second;
  try {
    DBS_CU(cuModuleGetFunction(&fn, mod, lowered.c_str()));
  } catch (...) {
    cuda::driver().cuModuleUnload(mod);
    throw;
  }
  out.info.load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard lock(mu_);
  auto [it, inserted] = loaded_.emplace(full_key, std::make_pair(mod, fn));
  if (!inserted) cuda::driver().cuModuleUnload(mod);  // another thread won the race
  out.fn = it->second.second;
  return out;
}

}  // namespace dbsparse::detail

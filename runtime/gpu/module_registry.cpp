#include "runtime/gpu/module_registry.hpp"

#include <chrono>

#include "dbsparse/error.hpp"
#include "runtime/gpu/cuda_driver.hpp"

namespace dbsparse::detail {

ModuleRegistry::~ModuleRegistry() {
  std::string why;
  if (!cuda::driver_available(&why)) return;
  for (auto& [key, e] : loaded_) cuda::driver().cuModuleUnload(e.module);
}

CUfunction LoadedKernel::entry(std::string_view role) const {
  for (size_t i = 0; i < entry_names.size() && i < fns.size(); ++i)
    if (entry_names[i] == role) return fns[i];
  std::string have;
  for (const auto& n : entry_names) have += (have.empty() ? "" : ", ") + n;
  throw Error("kernel " + info.key + " has no entry point named '" + std::string(role) +
              "' (it has: " + (have.empty() ? std::string("none named") : have) + ")");
}

LoadedKernel ModuleRegistry::get(const codegen::KernelSource& ks, const std::string& arch) {
  LoadedKernel out;
  out.info.key = ks.key;
  out.entry_names = ks.entry_names;
  auto& cache = codegen::KernelCache::global();
  // The version-free key: a module already loaded is found without loading NVRTC.
  std::string full_key = codegen::KernelCache::aot_key(ks, arch);
  {
    std::lock_guard lock(mu_);
    if (auto it = loaded_.find(full_key); it != loaded_.end()) {
      out.fns = it->second.fns;
      out.fn = out.fns.at(0);
      out.info.origin = "loaded";
      return out;
    }
  }
  auto cached = cache.get(ks, arch);
  out.info.origin = codegen::to_string(cached.origin);
  out.info.acquire_ms = cached.ms;

  auto t0 = std::chrono::steady_clock::now();
  Entry e;
  DBS_CU(cuModuleLoadData(&e.module, cached.kernel->cubin.data()));
  try {
    // By name, in the source's order: callers index fns by their name expressions' positions.
    for (const auto& expr : ks.name_expressions) {
      const std::string* lowered = nullptr;
      for (const auto& [e_expr, e_lowered] : cached.kernel->lowered_names)
        if (e_expr == expr) lowered = &e_lowered;
      if (!lowered) throw Error("kernel " + ks.key + " has no entry point for " + expr);
      CUfunction fn = nullptr;
      DBS_CU(cuModuleGetFunction(&fn, e.module, lowered->c_str()));
      e.fns.push_back(fn);
    }
  } catch (...) {
    cuda::driver().cuModuleUnload(e.module);
    throw;
  }
  out.info.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard lock(mu_);
  auto [it, inserted] = loaded_.emplace(full_key, e);
  if (!inserted) cuda::driver().cuModuleUnload(e.module);  // another thread won the race
  out.fns = it->second.fns;
  out.fn = out.fns.at(0);
  return out;
}

}  // namespace dbsparse::detail

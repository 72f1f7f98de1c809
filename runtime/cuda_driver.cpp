#include "runtime/cuda_driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse::cuda {
namespace {

struct Loaded {
  DriverApi api;
  std::string error;  // empty when usable
};

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    out.error = fmt::format("libcuda.so.1 not loadable ({})", e ? e : "unknown");
    return out;
  }
  // Deliberately never dlclose'd: module handles and the primary context outlive any scope here.
  auto get_proc = reinterpret_cast<decltype(&::cuGetProcAddress)>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    out.error = "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)";
    return out;
  }
#define DBS_CU_RESOLVE(name)                                                              \
  {                                                                                       \
    void* fn = nullptr;                                                                   \
    CUdriverProcAddressQueryResult status{};                                              \
    CUresult r = get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status); \
    if (r != CUDA_SUCCESS || !fn) {                                                       \
      out.error = fmt::format("driver lacks {} at CUDA {} (status {})", #name, CUDA_VERSION, \
                              static_cast<int>(status));                                  \
      return out;                                                                         \
    }                                                                                     \
    out.api.name = reinterpret_cast<decltype(out.api.name)>(fn);                          \
  }
  DBS_CU_FUNCTIONS(DBS_CU_RESOLVE)
#undef DBS_CU_RESOLVE
  CUresult r = out.api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    out.api.cuGetErrorName(r, &name);
    out.error = fmt::format("cuInit failed: {} ({})", name ? name : "?", static_cast<int>(r));
    return out;
  }
  int count = 0;
  if (out.api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    out.error = "the driver reports no CUDA device";
  }
  return out;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const DriverApi& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw NoDeviceError(l.error);
  return l.api;
}

bool driver_available(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.error;
  return l.error.empty();
}

void check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const auto& api = loaded().api;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  throw CudaError(call, static_cast<int>(r), name ? name : "unknown CUresult");
}

}  // namespace dbsparse::cuda

#include "runtime/gpu/cuda_driver.hpp"

#include <dlfcn.h>

#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse::cuda {
namespace {

struct Loaded {
  DriverApi api;
  DeviceProbe probe;
  const std::string& error() const { return probe.why; }  // empty when usable
};

std::string result_text(const DriverApi& api, CUresult r) {
  const char* name = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  return fmt::format("{} ({})", name ? name : "?", static_cast<int>(r));
}

struct EntryPoint {
  const char* symbol;
  void** slot;
  int version;
};

// The symbols are stringised where the X-macro names them, before cuda.h's macros can expand them:
// through one more macro level cuDeviceTotalMem became "cuDeviceTotalMem_v2", a name the driver
// does not export, and every gpu call failed.
std::vector<EntryPoint> entry_points(DriverApi& api) {
  std::vector<EntryPoint> v;
#define DBS_CU_ENTRY(name) v.push_back({#name, reinterpret_cast<void**>(&api.name), CUDA_VERSION});
#define DBS_CU_ENTRY_AT(name, version) v.push_back({#name, reinterpret_cast<void**>(&api.name), version});
  DBS_CU_FUNCTIONS(DBS_CU_ENTRY)
  DBS_CU_FUNCTIONS_PINNED(DBS_CU_ENTRY_AT)
#undef DBS_CU_ENTRY_AT
#undef DBS_CU_ENTRY
  return v;
}

Loaded load() {
  Loaded out;
  auto fail = [&](DeviceStatus s, std::string why) {
    out.probe.status = s;
    out.probe.why = std::move(why);
    return out;
  };
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    return fail(classify_device(false, CUDA_SUCCESS, 0),
                fmt::format("libcuda.so.1 not loadable ({})", e ? e : "unknown"));
  }
  // Deliberately never dlclose'd: module handles and the primary context outlive any scope here.
  auto get_proc = reinterpret_cast<decltype(&::cuGetProcAddress)>(dlsym(lib, "cuGetProcAddress_v2"));
  // A driver that loads but lacks what the toolkit's headers promise is a mismatch, not a GPU-less
  // machine: InitFailed (unless it is the toolkit's stub, which says so in its CUresult).
  if (!get_proc)
    return fail(DeviceStatus::InitFailed, "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)");
  for (const EntryPoint& e : entry_points(out.api)) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status{};
    CUresult r = get_proc(e.symbol, &fn, e.version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r == CUDA_ERROR_STUB_LIBRARY)
      return fail(classify_device(true, r, 0), "libcuda.so.1 is the CUDA toolkit's stub, not a driver");
    if (r != CUDA_SUCCESS || !fn)
      return fail(DeviceStatus::InitFailed, fmt::format("driver lacks {} at CUDA {} (status {}, {})", e.symbol,
                                                        e.version, static_cast<int>(status), static_cast<int>(r)));
    *e.slot = fn;
  }
  int count = 0;
  CUresult r = out.api.cuInit(0);
  const char* failed_call = "cuInit";
  if (r == CUDA_SUCCESS) {
    r = out.api.cuDeviceGetCount(&count);
    failed_call = "cuDeviceGetCount";
  }
  out.probe.status = classify_device(true, r, count);
  out.probe.result = r;
  if (r != CUDA_SUCCESS)
    out.probe.why = fmt::format("{} failed: {}", failed_call, result_text(out.api, r));
  else if (count == 0)
    out.probe.why = "the driver reports no CUDA device";
  return out;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

std::vector<std::pair<std::string, int>> driver_entry_points() {
  DriverApi unused;
  std::vector<std::pair<std::string, int>> out;
  for (const EntryPoint& e : entry_points(unused)) out.emplace_back(e.symbol, e.version);
  return out;
}

const DriverApi& driver() {
  const Loaded& l = loaded();
  if (!l.error().empty()) throw NoDeviceError(l.error());
  return l.api;
}

bool driver_available(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.error();
  return l.error().empty();
}

const DeviceProbe& device_probe() { return loaded().probe; }

const char* to_string(DeviceStatus s) {
  switch (s) {
    case DeviceStatus::Available:
      return "available";
    case DeviceStatus::NoDriver:
      return "no driver";
    case DeviceStatus::NoDevice:
      return "no device";
    case DeviceStatus::InitFailed:
      return "driver init failed";
  }
  return "?";
}

DeviceStatus classify_device(bool library_loaded, CUresult init_result, int device_count) {
  if (!library_loaded) return DeviceStatus::NoDriver;
  switch (init_result) {
    case CUDA_SUCCESS:
      return device_count > 0 ? DeviceStatus::Available : DeviceStatus::NoDevice;
    case CUDA_ERROR_NO_DEVICE:
      return DeviceStatus::NoDevice;
    // The toolkit's stub libcuda answered: there is no real driver behind it.
    case CUDA_ERROR_STUB_LIBRARY:
      return DeviceStatus::NoDriver;
    default:
      return DeviceStatus::InitFailed;
  }
}

void check(CUresult r, const char* call, size_t bytes) {
  if (r == CUDA_SUCCESS) return;
  const auto& api = loaded().api;
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free = 0, total = 0;
    if (api.cuMemGetInfo) api.cuMemGetInfo(&free, &total);
    throw DeviceOutOfMemory(bytes ? fmt::format("{} of {} bytes", call, bytes) : std::string(call),
                            static_cast<long long>(bytes), static_cast<long long>(free), static_cast<long long>(total));
  }
  const char* name = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  // The usual cause is the caller's order (a buffer made before any Context on this thread): say so.
  if (r == CUDA_ERROR_INVALID_CONTEXT)
    throw CudaError(fmt::format("{} (no CUDA context is current on this thread: make a dbsparse::Context first)", call),
                    static_cast<int>(r), name ? name : "unknown CUresult");
  throw CudaError(call, static_cast<int>(r), name ? name : "unknown CUresult");
}

void allow_dynamic_smem(CUfunction f, int64_t bytes) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  int now = 0;
  check(driver().cuFuncGetAttribute(&now, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f),
        "cuFuncGetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  if (bytes <= now) return;
  check(driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

}  // namespace dbsparse::cuda

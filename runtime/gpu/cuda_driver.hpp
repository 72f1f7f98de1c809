#pragma once
// libcuda behind one table of function pointers, loaded with dlopen so that a machine without a
// driver still runs everything CPU-side (docs/DESIGN.md §5). Entry points are resolved through
// cuGetProcAddress at the toolkit's CUDA_VERSION, so each gets the ABI version that cuda.h's macros
// (cuMemAlloc -> cuMemAlloc_v2, ...) promise.
#include <cuda.h>

#include <string>
#include <utility>
#include <vector>

namespace dbsparse::cuda {

// One list, laid out by hand: clang-format 14 reflows a list of macro calls differently each pass.
// clang-format off
#define DBS_CU_FUNCTIONS(X)                                                                            \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)                \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
  X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)    \
  X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoDAsync) X(cuMemsetD8)        \
  X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuMemGetInfo) X(cuModuleLoadData) X(cuModuleUnload)         \
  X(cuModuleGetFunction) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuLaunchCooperativeKernel)            \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)      \
  X(cuStreamWaitEvent) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuGetErrorName)                   \
  X(cuGetErrorString) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuStreamBeginCapture)           \
  X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphGetNodes)             \
  X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuMemPoolCreate) X(cuMemPoolDestroy)                       \
  X(cuMemPoolSetAttribute) X(cuMemPoolTrimTo) X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync)             \
  X(cuMemHostAlloc) X(cuMemFreeHost) X(cuStreamIsCapturing)
// clang-format on

// Entry points looked up at the ABI version whose signature cuda.h declares, where a lookup at
// CUDA_VERSION would return a newer variant with another signature. cuCtxSynchronize: cuda.h
// declares (void), CUDA 13's lookup returns cuCtxSynchronize_v2(CUcontext), which called through
// the header's type read a garbage context and failed with CONTEXT_IS_DESTROYED.
#define DBS_CU_FUNCTIONS_PINNED(X) X(cuCtxSynchronize, 2000)

struct DriverApi {
#define DBS_CU_MEMBER(name) decltype(&::name) name = nullptr;
#define DBS_CU_MEMBER_PINNED(name, version) DBS_CU_MEMBER(name)
  DBS_CU_FUNCTIONS(DBS_CU_MEMBER)
  DBS_CU_FUNCTIONS_PINNED(DBS_CU_MEMBER_PINNED)
#undef DBS_CU_MEMBER_PINNED
#undef DBS_CU_MEMBER
};

// Why the GPU can or cannot be used. The gpu test tier skips for NoDriver and NoDevice (a machine
// without a GPU) but fails for InitFailed: a driver that loads and then refuses (a driver/toolkit
// mismatch, a broken install) is a fault to report, not a machine to pass over.
enum class DeviceStatus { Available, NoDriver, NoDevice, InitFailed };

const char* to_string(DeviceStatus s);

// The (symbol, CUDA version) pairs asked of cuGetProcAddress, in table order: what the cpu tier
// can check of the lookup without a driver.
std::vector<std::pair<std::string, int>> driver_entry_points();

// Pure, so the rule is tested without a driver. init_result is the first failing result of cuInit
// and cuDeviceGetCount (CUDA_SUCCESS when both succeeded); device_count is what the latter reported.
DeviceStatus classify_device(bool library_loaded, CUresult init_result, int device_count);

struct DeviceProbe {
  DeviceStatus status = DeviceStatus::NoDriver;
  CUresult result = CUDA_SUCCESS;  // the failing call's result, when there was one
  std::string why;                 // one line; empty when Available
};

// What loading libcuda found; probed once per process, thread-safe.
const DeviceProbe& device_probe();

// The loaded table. Throws NoDeviceError (one line: which library or call failed) when libcuda
// cannot be loaded or cuInit fails. Loaded once per process; thread-safe.
const DriverApi& driver();

// Like driver() but reports instead of throwing.
bool driver_available(std::string* why);

// Throws CudaError naming the call and the CUresult; for CUDA_ERROR_OUT_OF_MEMORY a
// DeviceOutOfMemory with the device's free memory and, from an allocation, the `bytes` it asked.
void check(CUresult r, const char* call, size_t bytes = 0);

// Lets f launch with `bytes` of dynamic shared memory. The limit is the function's, shared by
// every plan that loaded the same kernel, so it is only ever raised: a later plan asking for less
// must not lower it under an earlier plan's launches. Thread-safe.
void allow_dynamic_smem(CUfunction f, int64_t bytes);

}  // namespace dbsparse::cuda

// DBS_CU(cuMemAlloc(&p, n)): calls through the table and checks the result.
#define DBS_CU(call) ::dbsparse::cuda::check(::dbsparse::cuda::driver().call, #call)

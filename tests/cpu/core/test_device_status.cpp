// The rule behind the gpu tier's skip-or-fail: no driver or no device skips, any other driver
// failure fails (a driver/toolkit mismatch must not pass as "no GPU here").
#include <doctest/doctest.h>

#include <string>

#include "dbsparse/context.hpp"
#include "runtime/gpu/cuda_driver.hpp"

using dbsparse::cuda::classify_device;
using dbsparse::cuda::DeviceStatus;

TEST_CASE("device status: no library, no device, or a working device") {
  CHECK(classify_device(false, CUDA_SUCCESS, 0) == DeviceStatus::NoDriver);
  CHECK(classify_device(false, CUDA_ERROR_UNKNOWN, 3) == DeviceStatus::NoDriver);
  CHECK(classify_device(true, CUDA_SUCCESS, 0) == DeviceStatus::NoDevice);
  CHECK(classify_device(true, CUDA_ERROR_NO_DEVICE, 0) == DeviceStatus::NoDevice);
  CHECK(classify_device(true, CUDA_ERROR_STUB_LIBRARY, 0) == DeviceStatus::NoDriver);
  CHECK(classify_device(true, CUDA_SUCCESS, 1) == DeviceStatus::Available);
  CHECK(classify_device(true, CUDA_SUCCESS, 8) == DeviceStatus::Available);
}

TEST_CASE("device status: a driver that loads and then refuses is a failure, not a skip") {
  for (CUresult r :
       {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, CUDA_ERROR_SYSTEM_NOT_READY, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
        CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_UNKNOWN}) {
    CAPTURE(static_cast<int>(r));
    CHECK(classify_device(true, r, 0) == DeviceStatus::InitFailed);
    CHECK(classify_device(true, r, 1) == DeviceStatus::InitFailed);
  }
}

TEST_CASE("device status: the probe agrees with cuda_device_available") {
  const auto& probe = dbsparse::cuda::device_probe();
  std::string why;
  const bool available = dbsparse::cuda_device_available(&why);
  CHECK(available == (probe.status == DeviceStatus::Available));
  CHECK(why == probe.why);
  CHECK(why.empty() == available);
  MESSAGE("this machine: " << dbsparse::cuda::to_string(probe.status) << " " << probe.why);
}

// A symbol asked of cuGetProcAddress must be the base name the driver exports: cuda.h's version
// macros (cuDeviceTotalMem -> cuDeviceTotalMem_v2) apply to calls, not to the lookup's string.
TEST_CASE("driver entry points are looked up by their base names") {
  const auto entries = dbsparse::cuda::driver_entry_points();
  REQUIRE(entries.size() > 30);
  bool total_mem = false, ctx_sync = false;
  for (const auto& [symbol, version] : entries) {
    CAPTURE(symbol);
    CHECK(symbol.rfind("cu", 0) == 0);
    CHECK(symbol.find("_v") == std::string::npos);
    CHECK(version >= 2000);
    total_mem |= symbol == "cuDeviceTotalMem";
    if (symbol == "cuCtxSynchronize") {
      ctx_sync = true;
      CHECK(version == 2000);
    }
  }
  CHECK(total_mem);
  CHECK(ctx_sync);
}

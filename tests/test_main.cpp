// One main for the three tiers. The gpu tier exits 77 (CTest SKIP_RETURN_CODE) when the machine has
// no driver or no device, saying why in one line; a driver that loads and then fails to initialise
// fails the tier, because a skip there would hide a broken install.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>

#include "runtime/gpu/cuda_driver.hpp"

int main(int argc, char** argv) {
  if (std::strcmp(DBS_TEST_TIER, "gpu") == 0) {
    using dbsparse::cuda::DeviceStatus;
    const auto& probe = dbsparse::cuda::device_probe();
    switch (probe.status) {
      case DeviceStatus::Available: break;
      case DeviceStatus::NoDriver:
      case DeviceStatus::NoDevice:
        std::printf("gpu tier skipped: %s (%s)\n", dbsparse::cuda::to_string(probe.status), probe.why.c_str());
        return 77;
      case DeviceStatus::InitFailed:
        std::printf("gpu tier FAILED: the CUDA driver loads but cannot be used (%s)\n", probe.why.c_str());
        return 1;
    }
  }
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}

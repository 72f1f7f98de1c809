// One main for the three tiers. The gpu tier exits 77 (CTest SKIP_RETURN_CODE) when the machine has
// no driver or no device, saying why in one line; a driver that loads and then fails to initialise
// fails the tier, because a skip there would hide a broken install.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>

#include "runtime/gpu/cuda_driver.hpp"

// doctest's listing and help options run no case: they work without a device, so that the device
// scripts' case lists (tools/device/hardening_run.sh) can be checked on a machine without one.
static bool lists_only(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* opt : {"-ltc", "-lts", "-lr", "-h", "-?", "--list-", "--help", "--dt-list-", "--dt-help"})
      if (std::strncmp(argv[i], opt, std::strlen(opt)) == 0) return true;
  return false;
}

int main(int argc, char** argv) {
  if (std::strcmp(DBS_TEST_TIER, "gpu") == 0 && !lists_only(argc, argv)) {
    using dbsparse::cuda::DeviceStatus;
    const auto& probe = dbsparse::cuda::device_probe();
    switch (probe.status) {
      case DeviceStatus::Available:
        break;
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

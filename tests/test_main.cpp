// One main for the three tiers. The gpu tier exits 77 (CTest SKIP_RETURN_CODE) when no CUDA device
// is present, saying why in one line.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "dbsparse/context.hpp"

int main(int argc, char** argv) {
  if (std::strcmp(DBS_TEST_TIER, "gpu") == 0) {
    std::string why;
    if (!dbsparse::cuda_device_available(&why)) {
      std::printf("gpu tier skipped: no CUDA device (%s)\n", why.c_str());
      return 77;
    }
  }
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}

// The L1 / shared carveout preference of the gather kernels (runtime/gpu/l1_carveout.hpp): the
// percent that keeps a kernel's resident blocks, and the DBSPARSE_L1_CARVEOUT policy's parsing.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "dbsparse/error.hpp"
#include "runtime/gpu/l1_carveout.hpp"

using namespace dbsparse;
using namespace dbsparse::detail;

TEST_CASE("CarveoutPercentHoldsEveryResidentBlockAndNoMore") {
  const int64_t sm = 233472;                     // sm_90: 228 KB of shared memory an SM at most
  CHECK(carveout_percent(0, 0, 16, sm) == 0);    // nothing at all: L1 takes all
  CHECK(carveout_percent(0, 1024, 9, sm) == 4);  // the reserve of 9 blocks: 9 KB, 3.9% -> 4%
  // 16 blocks of 2 KB plus 1 KB reserved each: 48 KB, 21.05% -> 22%.
  CHECK(carveout_percent(2048, 1024, 16, sm) == 22);
  for (int blocks = 1; blocks <= 32; ++blocks)
    for (int64_t smem : {0, 256, 4096, 12288, 49152}) {
      CAPTURE(blocks);
      CAPTURE(smem);
      const int pct = carveout_percent(smem, 1024, blocks, sm);
      const int64_t need = (smem + 1024) * blocks;
      CHECK(pct >= 0);
      CHECK(pct <= 100);
      if (need <= sm) {
        CHECK(pct * sm >= 100 * need);       // enough for every block
        CHECK((pct - 1) * sm < 100 * need);  // and the least percent that is
      } else {
        CHECK(pct == 100);
      }
    }
}

TEST_CASE("CarveoutPolicyReadsDriverOrMaxL1AndNamesTheVariableOtherwise") {
  const char* old = std::getenv("DBSPARSE_L1_CARVEOUT");
  const std::string previous = old ? old : "";
  unsetenv("DBSPARSE_L1_CARVEOUT");
  CHECK(carveout_policy() == CarveoutPolicy::Driver);
  setenv("DBSPARSE_L1_CARVEOUT", "driver", 1);
  CHECK(carveout_policy() == CarveoutPolicy::Driver);
  setenv("DBSPARSE_L1_CARVEOUT", "max-l1", 1);
  CHECK(carveout_policy() == CarveoutPolicy::MaxL1);
  setenv("DBSPARSE_L1_CARVEOUT", "maxl1", 1);
  try {
    (void)carveout_policy();
    FAIL("a bad value was accepted");
  } catch (const UsageError& e) {
    const std::string what = e.what();
    CHECK(what.find("DBSPARSE_L1_CARVEOUT") != std::string::npos);
    CHECK(what.find("max-l1") != std::string::npos);
  }
  if (old)
    setenv("DBSPARSE_L1_CARVEOUT", previous.c_str(), 1);
  else
    unsetenv("DBSPARSE_L1_CARVEOUT");
}

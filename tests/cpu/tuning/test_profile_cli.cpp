// `dbsparse profile` on the command line: without a GPU it says so (exit 0 to show, 3 to measure,
// the CLI's no-device code); with one (this tier on a GPU machine) it shows a complete profile.
// Nothing here writes a tuning DB: --measure runs with --no-store.
#include <doctest/doctest.h>

#include <string>

#include "test_support.hpp"

TEST_CASE("ProfileCliSaysWhatItHasWithOrWithoutADevice") {
  {
    auto [code, out] = dbs_test::run_tool("dbsparse", "profile");
    CAPTURE(out);
    CHECK(code == 0);
    if (out.find("no CUDA device") == std::string::npos) CHECK(out.find("device profile: ") != std::string::npos);
  }
  auto [code, out] = dbs_test::run_tool("dbsparse", "profile --measure --no-store");
  CAPTURE(out);
  if (out.find("no CUDA device") != std::string::npos)
    CHECK(code == 3);
  else
    CHECK((code == 0 && out.find("measured") != std::string::npos));
}

// `dbsparse first-call`: without a GPU the CLI's no-device code; with one, SpMV's first call in a
// fresh process with an empty cache, then with the cache that run filled.
TEST_CASE("FirstCallCliTimesFreshProcessesOrSaysThereIsNoDevice") {
  auto [code, out] = dbs_test::run_tool("dbsparse", "first-call --op spmv");
  CAPTURE(out);
  if (out.find("no CUDA device") != std::string::npos) {
    CHECK(code == 3);
    return;
  }
  CHECK(code == 0);
  CHECK(out.find("spmv     empty") != std::string::npos);
  CHECK(out.find("spmv     filled") != std::string::npos);
  CHECK(out.find("failed") == std::string::npos);
}

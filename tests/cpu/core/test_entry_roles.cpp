// Every kernel variant of every registered op names each of its entry points by a role, once:
// plans fetch kernels by role (LoadedKernel::entry), so a kernel without a role, or two kernels
// under one role, would only fail on a GPU.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "tools/ops/registry.hpp"

using namespace dbsparse;

TEST_CASE("EveryVariantOfEveryOpNamesEachEntryPointOnce") {
  size_t sources = 0;
  for (const auto* op : tools::ops()) {
    for (const auto& ks : op->variants(/*opt_in=*/true)) {
      CAPTURE(ks.key);
      REQUIRE(!ks.name_expressions.empty());
      CHECK(ks.entry_names.size() == ks.name_expressions.size());
      std::set<std::string> roles;
      for (const auto& role : ks.entry_names) {
        CHECK(!role.empty());
        CHECK(roles.insert(role).second);
      }
      ++sources;
    }
  }
  MESSAGE(sources << " kernel sources checked");
  CHECK(sources > 0);
}

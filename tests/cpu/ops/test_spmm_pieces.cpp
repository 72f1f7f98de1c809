// The host half of SpMM's long rows and windows (runtime/spmm/spmm_pieces.hpp): the pieces the second
// pass adds, and the cut units a 16-bit plan sums in its f32 workspace (abi::SpmmAcc). The kernels
// trust both: every piece's unit must have a workspace slot (the 16-bit pieces pass has no other
// place to add to), and a unit with a slot must have a piece (its first pass leaves C alone).
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "dbsparse/abi/spmm.h"
#include "dbsparse/generators.hpp"
#include "runtime/spmm/spmm_pieces.hpp"

using namespace dbsparse;

namespace {

// Every unit that spmm_cut_pieces gives a piece has a slot, and no other unit does; slots index
// units, which is ascending; the pieces of a unit tile [ptr[u] + max_run, ptr[u + 1]).
void check_cut(const std::vector<int32_t>& ptr, int32_t max_run) {
  CAPTURE(max_run);
  const auto pieces = spmm_cut_pieces(ptr, max_run);
  const SpmmCutUnits cut = spmm_cut_units(ptr, max_run);
  REQUIRE(cut.slot.size() + 1 == ptr.size());
  std::set<int32_t> with_pieces;
  std::vector<int64_t> next(ptr.size(), -1);  // where unit u's next piece must begin
  for (size_t u = 0; u + 1 < ptr.size(); ++u) next[u] = int64_t{ptr[u]} + max_run;
  for (size_t i = 0; i < pieces.size(); i += 3) {
    const int32_t u = pieces[i], b = pieces[i + 1], e = pieces[i + 2];
    with_pieces.insert(u);
    CHECK(b == next[static_cast<size_t>(u)]);
    CHECK(e > b);
    CHECK(e - b <= max_run);
    next[static_cast<size_t>(u)] = e;
  }
  for (size_t u = 0; u + 1 < ptr.size(); ++u) {
    CAPTURE(u);
    const bool long_unit = ptr[u + 1] - ptr[u] > max_run;
    CHECK(long_unit == (with_pieces.count(static_cast<int32_t>(u)) == 1));
    CHECK(long_unit == (cut.slot[u] >= 0));
    if (long_unit) {
      CHECK(next[u] == ptr[u + 1]);
      REQUIRE(cut.slot[u] < static_cast<int32_t>(cut.units.size()));
      CHECK(cut.units[static_cast<size_t>(cut.slot[u])] == static_cast<int32_t>(u));
    }
  }
  CHECK(cut.units.size() == with_pieces.size());
  for (size_t i = 1; i < cut.units.size(); ++i) CHECK(cut.units[i - 1] < cut.units[i]);
}

}  // namespace

TEST_CASE("SpmmCutUnitsMatchThePiecesOnGeneratedAndEdgeRowPointers") {
  // Empty units, one at max_run exactly (not cut), one a single entry past it, one many runs long.
  const std::vector<int32_t> edge = {0, 0, 4, 9, 9, 30};
  for (int32_t run : {1, 2, 4, 5, 21, 100}) check_cut(edge, run);
  check_cut({0}, 1);
  const auto a = generate("rmat:scale=10,ef=8");
  for (int32_t run : {1, 3, 32, 256}) check_cut(a.row_ptr, run);
}

TEST_CASE("SpmmWorkspaceHoldsOnlyTheCutUnitsRows") {
  const std::vector<int32_t> ptr = {0, 3, 3, 40, 41, 90};  // units 2 and 4 longer than 8
  const SpmmCutUnits cut = spmm_cut_units(ptr, 8);
  CHECK(cut.units == std::vector<int32_t>{2, 4});
  CHECK(cut.slot == std::vector<int32_t>{-1, -1, 0, -1, 1});
  // CSR: a row per unit; BRP: a 16-row window per unit (abi::SpmmAcc::unit_rows).
  CHECK(spmm_workspace_floats(cut, 1, 33) == 2 * 33);
  CHECK(spmm_workspace_floats(cut, abi::kSpmmWindowRows, 128) == 2 * 16 * 128);
  CHECK(spmm_workspace_floats(spmm_cut_units(ptr, 64), 1, 128) == 0);  // nothing cut: no workspace
}

// The split form (SpmmArgs::parts): a cut unit's parts tile all of [ptr[u], ptr[u + 1]), first
// max_run included, each at most max_run long; slots count the cut units in order and first[]
// bounds each slot's parts; uncut units have none. The kernel's last-arriver sum trusts all of it.
TEST_CASE("SpmmSplitPartsTileEveryLongUnitWhole") {
  auto check_split = [](const std::vector<int32_t>& ptr, int32_t max_run) {
    CAPTURE(max_run);
    const SpmmSplitParts sp = spmm_split_parts(ptr, max_run);
    const SpmmCutUnits cut = spmm_cut_units(ptr, max_run);
    REQUIRE(sp.slots() == static_cast<int32_t>(cut.units.size()));
    REQUIRE(sp.first.size() == cut.units.size() + 1);
    for (int32_t s = 0; s < sp.slots(); ++s) {
      const int32_t u = cut.units[static_cast<size_t>(s)];
      int64_t next = ptr[static_cast<size_t>(u)];
      REQUIRE(sp.first[static_cast<size_t>(s)] < sp.first[static_cast<size_t>(s) + 1]);
      for (int32_t q = sp.first[static_cast<size_t>(s)]; q < sp.first[static_cast<size_t>(s) + 1]; ++q) {
        const int32_t* part = &sp.parts[4 * static_cast<size_t>(q)];
        CHECK(part[0] == u);
        CHECK(part[1] == next);
        CHECK(part[2] > part[1]);
        CHECK(part[2] - part[1] <= max_run);
        CHECK(part[3] == s);
        next = part[2];
      }
      CHECK(next == ptr[static_cast<size_t>(u) + 1]);
    }
    CHECK(sp.first.back() == sp.count());
  };
  const std::vector<int32_t> edge = {0, 0, 4, 9, 9, 30};
  for (int32_t run : {1, 2, 4, 5, 21, 100}) check_split(edge, run);
  check_split({0}, 1);
  const auto a = generate("rmat:scale=10,ef=8");
  for (int32_t run : {1, 3, 32, 256}) check_split(a.row_ptr, run);
  const SpmmSplitParts sp = spmm_split_parts({0, 3, 3, 40, 41, 90}, 8);
  CHECK(sp.first == std::vector<int32_t>{0, 5, 12});  // 37 entries in 5 parts, 49 in 7
}

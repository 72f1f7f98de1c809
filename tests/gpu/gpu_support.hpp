#pragma once
// What every gpu test file starts with: the library, the helpers shared by the tiers, and ctx().
#include "dbsparse/dbsparse.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

// The Context of the file's cases (device 0), made on first use and kept to the process's end. In
// an unnamed namespace: each test file has one of its own, as when each file defined it, so a
// file's cases share their module registry, streams and pools with each other and no other file.
[[maybe_unused]] inline Context& ctx() {
  static Context c;
  return c;
}

}  // namespace

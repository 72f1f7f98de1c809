#pragma once
// Helpers shared by the test tiers: where the real matrices are, and reproducible random vectors.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tools/common/random.hpp"
#include "tools/common/suites.hpp"

namespace dbs_test {

// The real matrices (../shared/matrices or $DBSPARSE_MATRICES), found as the tools find them.
// Empty when absent: the cases that need them say once that they were left out.
inline std::vector<std::string> shared_matrices() {
  auto out = dbsparse::tools::shared_matrix_files();
  static bool said = false;
  if (out.empty() && !said) {
    std::printf("note: ../shared/matrices not found; real-matrix cases left out (generated ones still run)\n");
    said = true;
  }
  return out;
}

// The tools' seeded source (tools/common/random.hpp): tests, benches and the tuner draw alike.
template <class T>
std::vector<T> random_vector(size_t n, uint64_t seed) {
  return dbsparse::tools::random_values<T>(n, seed);
}

inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("dbsparse-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// A tool binary of the build (dbsparse, dbtune): beside the test binary (the device copies) or
// one directory up (the build tree); empty when neither exists.
inline std::filesystem::path sibling_binary(const std::string& name) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  for (const auto& p : {self / name, self.parent_path() / name})
    if (std::filesystem::exists(p)) return p;
  return {};
}

}  // namespace dbs_test

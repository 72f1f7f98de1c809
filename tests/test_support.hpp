#pragma once
// Helpers shared by the test tiers: where the real matrices are, and reproducible random vectors.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace dbs_test {

// ../shared/matrices beside the checkout, or $DBSPARSE_MATRICES (the device run carries a copy).
// Empty when neither exists: callers print that those cases were left out.
inline std::vector<std::string> shared_matrices() {
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("DBSPARSE_MATRICES")) dirs.emplace_back(env);
  dirs.emplace_back(fs::path(DBS_SOURCE_DIR) / ".." / "shared" / "matrices");
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(d)) {
      auto p = e.path().string();
      if (p.ends_with(".mtx") || p.ends_with(".mtx.gz")) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    if (!out.empty()) return out;
  }
  static bool said = false;
  if (!said) {
    std::printf("note: ../shared/matrices not found; real-matrix cases left out (generated ones still run)\n");
    said = true;
  }
  return {};
}

template <class T>
std::vector<T> random_vector(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("dbsparse-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace dbs_test

#pragma once
// Helpers shared by the test tiers: where the real matrices are, and reproducible random vectors.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <unistd.h>
#include <cstdio>
#include <array>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <sys/wait.h>

#include <fstream>

#include "dbsparse/device_profile.hpp"
#include "dbsparse/matrix.hpp"

#include "tools/bench/random.hpp"
#include "tools/bench/suites.hpp"

namespace dbs_test {

// A card's device profile as recorded in tests/cases/profiles/<card>.json (measured there with
// `dbsparse profile --measure --json`): what the cost models' choices are tested against.
inline dbsparse::DeviceProfile recorded_profile(const std::string& card) {
  const std::string path = std::string(DBS_SOURCE_DIR) + "/tests/cases/profiles/" + card + ".json";
  std::ifstream f(path);
  if (!f) throw std::runtime_error("no recorded profile " + path);
  return dbsparse::DeviceProfile::from_json(nlohmann::json::parse(f));
}

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

// $DBSPARSE_TEST_SHARD = "k/n" (0 <= k < n): a long gpu case runs only the items i of its loop
// with i % n == k, so that a sanitizer run (tools/device/hardening_run.sh, SAN_SHARDS) spreads one
// case over n processes that together run every item once. Unset: every item runs. Under a
// sanitizer some cases outlast a device call whole (racecheck on BFS, memcheck on every (f, g)
// of SpMM: past 300 s, H200, 2026-12-04) while they take 20-40 s plain.
// parse_shard is the pure part: {k, n}, or an error saying what was expected.
inline std::pair<size_t, size_t> parse_shard(const char* text) {
  if (text == nullptr || *text == 0) return {0, 1};
  size_t k = 0, n = 0;
  int used = 0;
  if (std::sscanf(text, "%zu/%zu%n", &k, &n, &used) != 2 || text[used] != 0 || n == 0 || k >= n)
    throw std::invalid_argument(std::string("DBSPARSE_TEST_SHARD: expected k/n with 0 <= k < n, got '") + text + "'");
  return {k, n};
}

// Whether this process runs item `item` of a sharded case (a SUBCASE's own number, say: doctest
// enters the case's body once a subcase, so a counter there would restart).
inline bool in_shard(size_t item) {
  static const std::pair<size_t, size_t> mine = parse_shard(std::getenv("DBSPARSE_TEST_SHARD"));
  return item % mine.second == mine.first;
}

// Counts a case's items in the order its loops reach them; next() says whether this process runs
// the item it counts.
class Shard {
 public:
  bool next() { return in_shard(item_++); }

 private:
  size_t item_ = 0;
};

// $DBSPARSE_TEST_RACECHECK=1, set by hardening_run.sh for racecheck alone: a few cases shrink a
// count that racecheck pays for again and again while the code run stays the same: a BFS graph's
// levels (one grid sync or launch each), SpGEMM's one-row chunks (a launch each) and the triangle
// count's largest L·L product. s30, H100, 16
// processes at once: one BFS run on the 2000-vertex path outlasted 500 s under racecheck; plain it
// takes well under a second. Plain runs and the other tools keep the full size.
inline bool under_racecheck() {
  static const bool on = [] {
    const char* v = std::getenv("DBSPARSE_TEST_RACECHECK");
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

// `full` normally, `racecheck` under racecheck (see under_racecheck).
template <class T>
T full_or_under_racecheck(T full, T racecheck) {
  return under_racecheck() ? racecheck : full;
}

// Under racecheck a BFS run costs about one grid barrier a level, each paid in every block (s31
// run 2, H100, 16 at once: a stencil2d:n=200 run, 399 levels, outlasted 350 s with block_warps =
// 32; the 300-level path took minutes), so there a run deeper than this is left out, said on
// stdout; the deep generated graphs (the paths, the stencils) shrink under racecheck to stay within
// it. Shared-memory hazards are a level's business: the kernels run on shallower graphs are the same.
inline constexpr int kRacecheckMaxBfsLevels = 320;

// The deep BFS graphs' racecheck sizes, within kRacecheckMaxBfsLevels from any source (the cpu
// case BfsDepthCapAppliesUnderRacecheckAlone measures them): a path's vertices, and the 2-D
// stencils of the generated and 64-bit cases and of BfsWide (block_warps = 32 pays the most).
inline constexpr int32_t kRacecheckBfsPath = 300;
inline constexpr const char* kRacecheckStencil = "stencil2d:n=150";
inline constexpr const char* kRacecheckWideStencil = "stencil2d:n=100";

// Whether a BFS of `depth` levels runs, under racecheck or not (the pure part).
inline bool bfs_depth_runs(int depth, bool racecheck) { return !racecheck || depth <= kRacecheckMaxBfsLevels; }

// Whether a BFS whose reference reaches `depth` levels (its deepest level + 1) runs here.
inline bool bfs_depth_runs_here(int depth, const std::string& graph, int32_t source) {
  if (bfs_depth_runs(depth, under_racecheck())) return true;
  std::printf("note: racecheck leaves out the BFS from %d on %s: %d levels > %d (plain and the other tools run it)\n",
              static_cast<int>(source), graph.c_str(), depth, kRacecheckMaxBfsLevels);
  return false;
}

// The number of levels of a reference BFS: its deepest level + 1.
inline int bfs_depth(const std::vector<int32_t>& level) {
  return level.empty() ? 0 : *std::max_element(level.begin(), level.end()) + 1;
}

// The tools' seeded source (tools/bench/random.hpp): tests, benches and the tuner draw alike.
template <class T>
std::vector<T> random_vector(size_t n, uint64_t seed) {
  return dbsparse::tools::random_values<T>(n, seed);
}

inline std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("dbsparse-test-" + name + "-" + std::to_string(::getpid()));
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

// Runs a shell command line (environment assignments in front): {exit code, stdout + stderr}.
inline std::pair<int, std::string> run_shell(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((cmd + " 2>&1").c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while (pipe && (n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  const int status = pipe ? pclose(pipe.release()) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Runs a tool binary of the build (see sibling_binary) with `args`: {exit code, stdout + stderr}.
inline std::pair<int, std::string> run_tool(const std::string& tool, const std::string& args) {
  return run_shell("'" + sibling_binary(tool).string() + "' " + args);
}

// A CSR matrix from (row, col, value) entries in any order (through coo_to_csr).
using Entry = std::tuple<int32_t, int32_t, double>;
template <class T>
dbsparse::CsrMatrix<T> csr_from_entries(int32_t rows, int32_t cols, const std::vector<Entry>& entries) {
  dbsparse::CooMatrix<T> coo;
  coo.rows = rows;
  coo.cols = cols;
  for (const auto& [r, c, v] : entries) {
    coo.row.push_back(r);
    coo.col.push_back(c);
    coo.values.push_back(static_cast<T>(v));
  }
  return dbsparse::coo_to_csr(coo);
}

// Row i gets lengths[i] distinct random columns of [0, cols), values in [-1, 1] (multiples of
// 2^-10, never 0): exact in f32 and f64, so products are compared without rounding noise.
template <class T>
dbsparse::CsrMatrix<T> csr_with_row_lengths(int32_t cols, const std::vector<int32_t>& lengths, uint64_t seed) {
  std::mt19937_64 rng(seed);
  dbsparse::CsrMatrix<T> m;
  m.rows = static_cast<int32_t>(lengths.size());
  m.cols = cols;
  std::vector<int32_t> row;
  for (int32_t len : lengths) {
    if (len > cols) throw std::invalid_argument("csr_with_row_lengths: a row longer than the columns");
    row.clear();
    while (static_cast<int32_t>(row.size()) < len) {  // draw the missing ones, then merge duplicates
      for (auto k = static_cast<int32_t>(row.size()); k < len; ++k)
        row.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(cols)));
      std::sort(row.begin(), row.end());
      row.erase(std::unique(row.begin(), row.end()), row.end());
    }
    for (int32_t c : row) {
      m.col_idx.push_back(c);
      m.values.push_back(static_cast<T>((static_cast<int64_t>(rng() % 2048) - 1023.5) / 1024.0));
    }
    m.row_ptr.push_back(static_cast<int32_t>(m.col_idx.size()));
  }
  return m;
}

}  // namespace dbs_test

// The BFS plan's storage worked out on the CPU (bfs_storage, `dbsparse convert --bfs`): one view for
// a symmetric graph, two otherwise, and a push-task capacity that counts a hub's 128-edge pieces.
#include <doctest/doctest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "dbsparse/abi/bfs.h"
#include "dbsparse/bfs.hpp"
#include "dbsparse/generators.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {
PatternGraph star(int32_t n) {  // vertex 0 joined both ways to every other vertex
  PatternGraph g;
  g.n = n;
  g.row_ptr.assign(static_cast<size_t>(n) + 1, 0);
  for (int32_t j = 1; j < n; ++j) g.col_idx.push_back(j);
  g.row_ptr[1] = n - 1;
  for (int32_t i = 1; i < n; ++i) {
    g.col_idx.push_back(0);
    g.row_ptr[static_cast<size_t>(i) + 1] = g.row_ptr[i] + 1;
  }
  return g;
}
}  // namespace

TEST_CASE("BfsStorageCountsOneViewForSymmetricGraphsAndTwoOtherwise") {
  const PatternGraph s = star(301);
  const BfsStats a = bfs_storage(s);
  CHECK(a.symmetric);
  CHECK(a.entries == 600);
  CHECK(a.bytes_format == (301 + 1 + 600) * 4);
  // The hub's 300 out-edges are 3 pieces of at most 128; each leaf has one edge, one piece.
  CHECK(a.task_capacity == 3 + 300);
  CHECK(a.bytes_csr == (301 + 1) * 4 + 600 * 8);
  CHECK(a.bytes_device > a.bytes_format);

  // Only the hub's column: vertex 0 reaches every leaf (A(i, 0) != 0), no leaf reaches anything.
  PatternGraph d;
  d.n = 301;
  d.row_ptr.assign(302, 0);
  for (int32_t i = 1; i <= 300; ++i) {
    d.col_idx.push_back(0);
    d.row_ptr[static_cast<size_t>(i) + 1] = i;
  }
  const BfsStats b = bfs_storage(d);
  CHECK_FALSE(b.symmetric);
  CHECK(b.bytes_format == 2 * (301 + 1 + 300) * 4);
  CHECK(b.task_capacity == 3);  // out-degrees: 300 for the hub, 0 for the leaves
  CHECK(b.to_text().find("not symmetric") != std::string::npos);
}

TEST_CASE("ConvertBfsPrintsTheStorageOfABfsPlan") {
  const auto cli = dbs_test::sibling_binary("dbsparse");
  REQUIRE_MESSAGE(!cli.empty(), "dbsparse binary not found");
  auto run = [](const std::string& args) { return dbs_test::run_tool("dbsparse", args).second; };
  const std::string out = run("convert stencil2d:n=20 --bfs");
  CHECK(out.find("400 vertices") != std::string::npos);
  CHECK(out.find("symmetric: one view") != std::string::npos);
  // A rectangular matrix is no graph: the error names the shape.
  const auto dir = dbs_test::temp_dir("convert-bfs");
  const auto file = (dir / "rect.mtx").string();
  FILE* f = std::fopen(file.c_str(), "w");
  REQUIRE(f);
  std::fputs("%%MatrixMarket matrix coordinate real general\n2 3 1\n1 3 1.0\n", f);
  std::fclose(f);
  const std::string bad = run("convert " + file + " --bfs");
  CHECK(bad.find("2x3") != std::string::npos);
  CHECK(bad.find("square") != std::string::npos);
}

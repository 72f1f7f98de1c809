// The applications' host side without a GPU: the labels file (read_labels: each bad line named),
// seeded random labels, the MCL kernel key, and `dbsparse contract` / `mcl` / `square` / `triangles` rejecting
// bad input before any GPU work (exit 1, one line naming the file, line or option).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/keys/mcl_key.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/io.hpp"
#include "test_support.hpp"
#include "tools/bench/spgemm_apps_check.hpp"

using namespace dbsparse;
namespace fs = std::filesystem;

namespace {

fs::path write_file(const fs::path& dir, const std::string& name, const std::string& text) {
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p;
}

// read_labels on `text` throws InputError at `line`, its message holding `needle`.
void check_bad(const fs::path& dir, const std::string& text, long line, const std::string& needle) {
  CAPTURE(text);
  const fs::path p = write_file(dir, "bad.txt", text);
  try {
    (void)read_labels(p.string());
    FAIL("read_labels accepted a bad file");
  } catch (const InputError& e) {
    CHECK(e.line() == line);
    CHECK(e.file() == p.string());
    const std::string what = e.what();
    CHECK(what.find(p.string() + ":" + std::to_string(line) + ": expected") != std::string::npos);
    CHECK(what.find(needle) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("ReadLabelsReadsOnePerLineAndNamesEachBadLine") {
  const fs::path dir = dbs_test::temp_dir("labels");
  const fs::path good = write_file(dir, "good.txt", "# a comment\n3\n  0 \n\n7\t\r\n2147483646\n");
  CHECK(read_labels(good.string()) == std::vector<int32_t>{3, 0, 7, 2147483646});
  CHECK(read_labels(write_file(dir, "empty.txt", "").string()).empty());
  CHECK(read_labels(write_file(dir, "nonl.txt", "1\n2").string()) == std::vector<int32_t>{1, 2});
  check_bad(dir, "1\n2\n-3\n", 3, "'-3'");
  check_bad(dir, "1\n+2\n", 2, "'+2'");
  check_bad(dir, "1.5\n", 1, "'1.5'");
  check_bad(dir, "1\n\n4 5\n", 3, "'4 5'");
  check_bad(dir, "0\nabc\n", 2, "'abc'");
  check_bad(dir, "2147483647\n", 1, "[0, 2^31-1)");
  check_bad(dir, "99999999999999999999\n", 1, "'99999999999999999999'");
  CHECK_THROWS_AS(read_labels((dir / "missing.txt").string()), InputError);
  CHECK_THROWS_AS(read_labels(dir.string()), InputError);  // a directory
  // write_labels -> read_labels.
  const std::vector<int32_t> labels = {5, 0, 0, 12, 3};
  write_labels((dir / "out.txt").string(), labels);
  CHECK(read_labels((dir / "out.txt").string()) == labels);
  fs::remove_all(dir);
}

TEST_CASE("RandomLabelsAreSeededAndInRange") {
  const auto a = tools::random_labels(1000, 7, 42);
  CHECK(a == tools::random_labels(1000, 7, 42));
  CHECK(a != tools::random_labels(1000, 7, 43));
  std::vector<int> seen(7, 0);
  for (int32_t l : a) {
    REQUIRE(l >= 0);
    REQUIRE(l < 7);
    ++seen[l];
  }
  for (int c : seen) CHECK(c > 0);
  CHECK(tools::random_labels(0, 3, 1).empty());
  CHECK_THROWS_AS(tools::random_labels(10, 0, 1), UsageError);
  const auto same = tools::check_labels(a, a);
  CHECK(same.ok);
  auto b = a;
  b[17] = (b[17] + 1) % 7;
  const auto diff = tools::check_labels(b, a);
  CHECK_FALSE(diff.ok);
  CHECK(diff.differ == 1);
  CHECK(diff.note.find("first 17") != std::string::npos);
}

TEST_CASE("MclKeyRoundTripsAndRejectsMalformedText") {
  using codegen::MclKey;
  for (const auto& k : codegen::mcl_search_space()) CHECK(MclKey::parse(k.to_string()) == k);
  CHECK(MclKey{}.to_string() == "mcl.f64.b256");
  for (const char* bad : {"mcl.f16.b256", "mcl.f32.b100", "mcl.f32.b0", "mcl.f32.b2048", "mcl.f32", "mcl.f32.256",
                          "spgemm.f32.b256", "mcl.f32.b256.x", "mcl.f32.b25x"})
    CHECK_THROWS_AS(MclKey::parse(bad), UsageError);
  const auto ks = codegen::make_source(MclKey{});
  CHECK(ks.name_expressions ==
        std::vector<std::string>{"dbs::mcl_prune<double, 256>", "dbs::mcl_gather<double, 256>",
                                 "dbs::mcl_change<double, 256>", "dbs::mcl_start_count<double, 256>",
                                 "dbs::mcl_start_scatter<double, 256>", "dbs::mcl_rows_merge<double, 256>",
                                 "dbs::mcl_start_scale<double, 256>", "dbs::mcl_cc_hook<double, 256>",
                                 "dbs::mcl_cc_init<256>", "dbs::mcl_cc_compress<256>", "dbs::mcl_cc_label<256>"});
}

TEST_CASE("ContractMclSquareAndTrianglesRejectBadInputBeforeAnyGpuWork") {
  REQUIRE_MESSAGE(!dbs_test::sibling_binary("dbsparse").empty(), "dbsparse binary not found beside the test binary");
  const fs::path dir = dbs_test::temp_dir("apps-cli");
  auto check_error = [](const std::string& args, const std::string& needle) {
    CAPTURE(args);
    auto [code, out] = dbs_test::run_tool("dbsparse", args);
    CAPTURE(out);
    CHECK(code == 1);
    CHECK(out.find(needle) != std::string::npos);
  };
  const fs::path bad = write_file(dir, "bad.txt", "0\n1\nx\n");
  check_error("contract stencil2d:n=2 --labels " + bad.string(), bad.string() + ":3: expected");
  const fs::path few = write_file(dir, "few.txt", "0\n1\n");
  check_error("contract stencil2d:n=2 --labels " + few.string(), "4 labels, one per vertex");
  const fs::path ok = write_file(dir, "ok.txt", "0\n1\n1\n5\n");
  check_error("contract stencil2d:n=2 --labels " + ok.string() + " --k 3", "has label 5");
  check_error("contract stencil2d:n=2", "either --labels FILE or --random-labels K");
  check_error("contract stencil2d:n=2 --random-labels 4 --k 2", "below --random-labels 4");
  check_error("mcl stencil2d:n=4 --inflation 0.5", "'inflation'");
  check_error("mcl stencil2d:n=4 --top-k 0", "'keep_top_k'");
  check_error("square no-such-file.mtx", "no-such-file.mtx");
  check_error("triangles no-such-file.mtx", "no-such-file.mtx");
  const fs::path rect = write_file(dir, "rect.mtx", "%%MatrixMarket matrix coordinate real general\n2 3 1\n1 3 1.0\n");
  check_error("triangles " + rect.string(), "2x3; a graph's adjacency matrix is square");
  {
    auto [code, out] = dbs_test::run_tool("dbsparse", "contract stencil2d:n=2 --labels x --random-labels 3");
    CHECK(code != 0);  // CLI11: the two exclude each other
  }
  // With the input fine and no GPU: the no-device exit (3); with a GPU that is the gpu tier's business.
  for (const char* args : {"square stencil2d:n=4", "triangles stencil2d:n=4"}) {
    auto [code, out] = dbs_test::run_tool("dbsparse", args);
    if (out.find("no CUDA device") != std::string::npos) CHECK(code == 3);
  }
  fs::remove_all(dir);
}

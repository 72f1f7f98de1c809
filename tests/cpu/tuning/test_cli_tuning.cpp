// `dbsparse explain` and `dbsparse explore` from the command line: bad input gets one clear
// error line naming what was wrong and exit code 1; explain works without a GPU.
#include <doctest/doctest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

fs::path cli_path() { return dbs_test::sibling_binary("dbsparse"); }

// Runs the CLI with `args`; returns {exit code, stdout + stderr}.
std::pair<int, std::string> run(const std::string& args) { return dbs_test::run_tool("dbsparse", args); }

// The CLI run with `args` exits 1 and its output names `needle`.
void check_error(const std::string& args, const std::string& needle) {
  CAPTURE(args);
  auto [code, out] = run(args);
  CHECK(code == 1);
  CHECK(out.find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("ExploreAndExplainRejectBadInputWithClearErrors") {
  REQUIRE_MESSAGE(!cli_path().empty(), "dbsparse binary not found beside the test binary");
  check_error("explore stencil2d:n=10 --op spmspv --param th9 --range 1:2", "'th9' is not a parameter of spmspv");
  check_error("explore stencil2d:n=10 --op spmspv --param th3 --range 0:2 --log", "LO > 0 with --log");
  check_error("explore stencil2d:n=10 --op spmspv --param th3 --range abc", "--range");
  auto [code, out] = run("explore stencil2d:n=10 --op nosuchop --param th3 --range 1:2");
  CHECK(code != 0);  // rejected by the option check, with CLI11's message
  CHECK(out.find("nosuchop") != std::string::npos);
  check_error("explain no-such-file.mtx --op spmv", "no-such-file.mtx");
}

// spmv's strategy is a name, not a number: explore once read every parameter as a double and died
// on a JSON type error. Its values are checked against the config before any GPU work.
TEST_CASE("ExploreTakesAChoiceParameterByName") {
  REQUIRE_MESSAGE(!cli_path().empty(), "dbsparse binary not found beside the test binary");
  check_error("explore stencil2d:n=10 --op spmv --param strategy --range 1:2", "strategy takes names, not a range");
  check_error("explore stencil2d:n=10 --op spmv --param strategy --values classified,bogus", "bogus");
  check_error("explore stencil2d:n=10 --op spmv --param strategy --values uniform --log", "--log needs a numeric");
  check_error("explore stencil2d:n=10 --op spmspv --param th3 --values 0.1,abc", "'abc' is not a number");
  // Accepted: without a GPU it stops there (exit 3); with one it sweeps both names.
  const fs::path dir = fs::temp_directory_path() / fmt::format("dbsparse-explore-{}", getpid());
  fs::create_directories(dir);
  auto [code, out] = run(fmt::format(
      "explore stencil2d:n=10 --op spmv --param strategy --values classified,scalar --samples 1 --svg '{}' --db '{}'",
      (dir / "plot.svg").string(), (dir / "t.db").string()));
  CAPTURE(out);
  CHECK(out.find("type_error") == std::string::npos);
  CHECK(out.find("internal error") == std::string::npos);
  if (out.find("no CUDA device") != std::string::npos) {
    CHECK(code == 3);
  } else {
    CHECK(code == 0);
    CHECK(out.find("classified") != std::string::npos);
    CHECK(out.find("scalar") != std::string::npos);
    CHECK(out.find("2 points stored") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("ExplainNamesTheConfigSource") {
  REQUIRE(!cli_path().empty());
  auto [code, out] = run("explain stencil2d:n=10 --op spmspv");
  CHECK(code == 0);
  // Without a GPU: the defaults, said to be per device; with one: the source and the plan.
  const bool no_gpu = out.find("no CUDA device") != std::string::npos;
  CHECK((no_gpu ? out.find("th3") != std::string::npos : out.find("config:") != std::string::npos));
}

TEST_CASE("BenchConfigIsCheckedBeforeAnyGpuWork") {
  REQUIRE_MESSAGE(!cli_path().empty(), "dbsparse binary not found beside the test binary");
  check_error("bench spmspv stencil2d:n=10 --config '{bad'", "--config '{bad': not JSON");
  check_error("bench spmspv stencil2d:n=10 --config '{\"th2\":1e999}'", "number overflow");
  check_error("bench spmspv stencil2d:n=10 --config '[1,2]'", "expected a JSON object");
  check_error("bench spmv stencil2d:n=10 --config '{}'", "--config does not apply to bench spmv");
  check_error("bench spgemm stencil2d:n=10 --config '{\"t0\":63}'", "t0");
  check_error("bench spgemm stencil2d:n=10 --n 32", "--n does not apply to bench spgemm");
}

TEST_CASE("BenchSpgemmWithoutAGpuSaysSoAndExits") {
  REQUIRE_MESSAGE(!cli_path().empty(), "dbsparse binary not found beside the test binary");
  auto [code, out] = run("bench spgemm stencil2d:n=10 --precision f32,f64");
  CAPTURE(out);
  if (out.find("no CUDA device") == std::string::npos) return;  // a GPU is here: that is the gpu tier's
  CHECK(code == 3);
}

TEST_CASE("BenchSpgemmAppOptionsAreCheckedBeforeAnyGpuWork") {
  REQUIRE_MESSAGE(!cli_path().empty(), "dbsparse binary not found beside the test binary");
  check_error("bench spmv stencil2d:n=10 --contract-k 4", "--contract-k does not apply to bench spmv");
  check_error("bench spmm stencil2d:n=10 --mcl-iters 2", "--mcl-iters does not apply to bench spmm");
  check_error("bench spmv stencil2d:n=10 --epilogue relu", "--epilogue does not apply to bench spmv");
  check_error("bench spmv stencil2d:n=10 --reduce max", "--reduce does not apply to bench spmv");
  check_error("bench sddmm stencil2d:n=10 --reduce mean", "--reduce does not apply to bench sddmm");
  check_error("bench sddmm stencil2d:n=10 --reorder degree", "--reorder does not apply to bench sddmm");
  {
    auto [code, out] = run("bench spgemm stencil2d:n=10 --contract-k 0");
    CAPTURE(out);
    CHECK(code != 0);  // CLI11's range check: k >= 1
    CHECK(out.find("--contract-k") != std::string::npos);
  }
  {
    auto [code, out] = run("bench spgemm stencil2d:n=10 --mcl-iters -1");
    CAPTURE(out);
    CHECK(code != 0);
    CHECK(out.find("--mcl-iters") != std::string::npos);
  }
  // Accepted by spgemm: what follows is the GPU's (exit 3 without one).
  auto [code, out] = run("bench spgemm stencil2d:n=10 --contract-k 4 --mcl-iters 0");
  CAPTURE(out);
  if (out.find("no CUDA device") != std::string::npos) CHECK(code == 3);
}

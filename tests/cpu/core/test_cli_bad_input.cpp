// The CLI's answers to the hostile sweep's findings (tools/hostile/sweep.sh, 2026-12-04): an
// unknown command named, NaN refused by range checks, output that never reached its file a
// failure, an empty tuning DB reported rather than fatal, a target with no kernels a failure.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

std::string bin(const char* tool) { return "'" + dbs_test::sibling_binary(tool).string() + "'"; }
}  // namespace

TEST_CASE("CliNamesAnUnknownCommand") {
  const auto [rc, out] = dbs_test::run_tool("dbsparse", "frobnicate");
  CHECK(rc == 106);
  CHECK(out.find("unknown command 'frobnicate'") != std::string::npos);
  CHECK(out.find("convert") != std::string::npos);  // the list
}

TEST_CASE("CliRangeChecksRefuseNaNAndInf") {
  for (const char* args :
       {"convert stencil2d:n=10 --th2 nan", "convert stencil2d:n=10 --th0 inf",
        "explore stencil2d:n=10 --op spmspv --param th0 --density nan", "bench spmspv stencil2d:n=10 --density nan"}) {
    CAPTURE(args);
    const auto [rc, out] = dbs_test::run_tool("dbsparse", args);
    CHECK(rc != 0);
    CHECK(out.find("not a finite number") != std::string::npos);
  }
  const auto [rc, out] = dbs_test::run_tool("dbtune", "--budget nan --quick");
  CHECK(rc != 0);
  CHECK(out.find("not a finite number") != std::string::npos);
}

// /dev/full takes no byte: a report printed there, or a --json written there, is not a success.
// (It is a character device: the --json write goes through it, and it stays one.)
TEST_CASE("CliOutputThatFailsToWriteIsAFailure") {
  REQUIRE(fs::exists("/dev/full"));
  const fs::path err = dbs_test::temp_dir("cli-dev-full") / "stderr.txt";
  const std::string cmd = "'" + dbs_test::sibling_binary("dbsparse").string() +
                          "' convert stencil2d:n=10 >/dev/full 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  std::ifstream in(err);
  const std::string out1((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(out1.find("could not write the output to stdout") != std::string::npos);
  const auto [rc2, out2] = dbs_test::run_tool("dbsparse", "convert stencil2d:n=10 --json /dev/full");
  CHECK(rc2 != 0);
  CHECK(out2.find("/dev/full") != std::string::npos);
  struct stat st {};
  REQUIRE(::stat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("CliInfoReportsAnEmptyTuningDbAndAFileForACacheFolder") {
  const fs::path dir = dbs_test::temp_dir("cli-info-empty");
  const fs::path db = dir / "tuning.db", cache = dir / "cache-file";
  std::ofstream(db).close();  // `touch tuning.db`
  std::ofstream(cache) << "not a folder";
  const std::string cmd =
      "DBSPARSE_DB='" + db.string() + "' DBSPARSE_CACHE_DIR='" + cache.string() + "' " + bin("dbsparse") + " info";
  const auto [rc, out] = dbs_test::run_shell(cmd);
  CAPTURE(out);
  CHECK(rc == 0);
  CHECK(out.find("no dbsparse tables") != std::string::npos);
  CHECK(out.find("not a directory") != std::string::npos);
  CHECK(fs::file_size(db) == 0);  // read-only: left as it was
}

TEST_CASE("DbtuneFailsWhenNoKernelCompiles") {
  const fs::path dir = dbs_test::temp_dir("dbtune-no-kernels");
  // No device visible, so that --arch decides (a GPU's own arch would win on the H200).
  const auto [rc, out] = dbs_test::run_shell("CUDA_VISIBLE_DEVICES= " + bin("dbtune") +
                                             " --arch sm_1 --quick --ops spmv --db '" + (dir / "t.db").string() + "'");
  CAPTURE(out);
  CHECK(rc != 0);
  CHECK(out.find("no kernel compiled for sm_1") != std::string::npos);
}

TEST_CASE("DbtuneFailsWhenANamedMatrixIsSkipped") {
  const fs::path dir = dbs_test::temp_dir("dbtune-partial");
  const auto [rc, out] =
      dbs_test::run_shell("CUDA_VISIBLE_DEVICES= " + bin("dbtune") + " --ops spmv --db '" + (dir / "t.db").string() +
                          "' --matrices '" + (dir / "missing.mtx").string() + "' --matrices stencil2d:n=16");
  CAPTURE(out);
  CHECK(rc == 2);  // the rest stored, the run a partial failure
  CHECK(out.find("1 of 2 matrices skipped") != std::string::npos);
  CHECK(out.find("missing.mtx") != std::string::npos);
}

TEST_CASE("CommunityGeneratorIsSizedBeforeItRuns") {
  // Under an address-space limit (ulimit -v) as under DBSPARSE_HOST_MEMORY: refused by name at once.
  const auto [rc, out] = dbs_test::run_shell("ulimit -v 4000000; " + bin("dbsparse") +
                                             " convert community:n=200000000,k=100,p_in=1e-8,p_out=0");
  CAPTURE(out);
  CHECK(rc != 0);
  CHECK(out.find("community:n=200000000") != std::string::npos);
  CHECK(out.find("host memory") != std::string::npos);
  const auto [rc2, out2] = dbs_test::run_tool("dbsparse", "convert community:n=2000000000,k=100");
  CAPTURE(out2);
  CHECK(rc2 != 0);
  CHECK(out2.find("2^31-1 nonzeros") != std::string::npos);
}

// Bare matrix names on the command line ("add32") find the file among the shared matrices.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tools/bench/suites.hpp"

namespace fs = std::filesystem;

TEST_CASE("BareMatrixNamesResolveToTheSharedFiles") {
  const fs::path dir = fs::temp_directory_path() / "dbsparse-suites-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "tiny.mtx") << "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1.0\n";
  const char* old = std::getenv("DBSPARSE_MATRICES");
  const std::string previous = old ? old : "";
  setenv("DBSPARSE_MATRICES", dir.c_str(), 1);
  const std::string want = fs::weakly_canonical(dir / "tiny.mtx").string();
  CHECK(dbsparse::tools::resolve_shared_name("tiny") == want);
  CHECK(dbsparse::tools::resolve_shared_name("tiny.mtx") == want);
  // Generator strings, paths and unknown names pass through for the loader to judge.
  CHECK(dbsparse::tools::resolve_shared_name("rmat:scale=10") == "rmat:scale=10");
  CHECK(dbsparse::tools::resolve_shared_name("nosuch") == "nosuch");
  CHECK(dbsparse::tools::resolve_shared_name("./x/tiny") == "./x/tiny");
  old ? setenv("DBSPARSE_MATRICES", previous.c_str(), 1) : unsetenv("DBSPARSE_MATRICES");
  fs::remove_all(dir);
}

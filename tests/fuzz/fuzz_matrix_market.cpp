// libFuzzer: Matrix Market files (plain and gzip: the reader sniffs the magic bytes). Any input
// either reads into a valid CSR matrix or throws dbsparse::Error; anything else (a crash, a
// sanitizer report, another exception) is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "dbsparse/error.hpp"
#include "dbsparse/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/dbs-fuzz-mm-" + std::to_string(getpid()) + ".mtx";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    const auto a = dbsparse::read_matrix_market(path);
    dbsparse::validate(a);  // what was accepted holds the CSR invariants
  } catch (const dbsparse::Error&) {
  }
  return 0;
}

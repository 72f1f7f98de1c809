// libFuzzer: Matrix Market files (plain and gzip: the reader sniffs the magic bytes). Any input
// either reads into a valid CSR matrix or throws dbsparse::Error; anything else (a crash, a
// sanitizer report, another exception) is a finding.
#include <cstdint>
#include <cstdio>
#include <string>

#include "dbsparse/error.hpp"
#include "fuzz_file.hpp"
#include "dbsparse/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string* file = fuzz_input_file("-mm.mtx", data, size);
  if (!file) return 0;
  const std::string& path = *file;
  try {
    const auto a = dbsparse::read_matrix_market(path);
    dbsparse::validate(a);  // what was accepted holds the CSR invariants
  } catch (const dbsparse::Error&) {
  }
  return 0;
}

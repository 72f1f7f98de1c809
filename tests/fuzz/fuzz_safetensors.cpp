// libFuzzer: safetensors files (header JSON and tensor bytes). Any input opens and reads each
// tensor as f32, or throws dbsparse::Error.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "dbsparse/error.hpp"
#include "dbsparse/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/dbs-fuzz-st-" + std::to_string(getpid()) + ".safetensors";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    auto file = dbsparse::SafetensorsFile::open(path);
    for (const auto& t : file.tensors()) (void)file.read_f32(t.name);
  } catch (const dbsparse::Error&) {
  }
  return 0;
}

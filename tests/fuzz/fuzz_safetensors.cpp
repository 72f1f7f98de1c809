// libFuzzer: safetensors files (header JSON and tensor bytes). Any input opens and reads each
// tensor as f32, or throws dbsparse::Error.
#include <cstdint>
#include <cstdio>
#include <string>

#include "dbsparse/error.hpp"
#include "fuzz_file.hpp"
#include "dbsparse/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string* file = fuzz_input_file("-st.safetensors", data, size);
  if (!file) return 0;
  const std::string& path = *file;
  try {
    auto file = dbsparse::SafetensorsFile::open(path);
    for (const auto& t : file.tensors()) (void)file.read_f32(t.name);
  } catch (const dbsparse::Error&) {
  }
  return 0;
}

// The harnesses whose parser takes a path: the input written to one temp file per process.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

inline const std::string* fuzz_input_file(const char* suffix, const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/dbs-fuzz-" + std::to_string(getpid()) + suffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return nullptr;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  return &path;
}

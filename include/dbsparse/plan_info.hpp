#pragma once
#include <string>

namespace dbsparse {

// How a plan got its kernel: the variant's key, where the binary came from (memory, disk or
// compiled) and what that cost. Printed by `dbsparse info --jit-timing` and the bench.
struct KernelInfo {
  std::string key;
  std::string origin;     // "memory", "disk", "compiled", or "loaded" when the context had it
  double acquire_ms = 0;  // cache lookup, disk read or NVRTC compile
  double load_ms = 0;     // cuModuleLoadData + cuModuleGetFunction; 0 when already loaded
};

}  // namespace dbsparse

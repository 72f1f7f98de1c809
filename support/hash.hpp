#pragma once
// FNV-1a 64: stable across machines and builds, which is what cache keys and fingerprints need.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace dbsparse {

class Fnv1a64 {
 public:
  Fnv1a64& add(const void* data, size_t n) {
    auto p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ULL;
    return *this;
  }
  Fnv1a64& add(std::string_view s) { return add(s.data(), s.size()); }
  uint64_t value() const { return h_; }
  std::string hex() const { return fmt::format("{:016x}", h_); }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

inline std::string fnv1a64_hex(std::string_view s) { return Fnv1a64().add(s).hex(); }

}  // namespace dbsparse

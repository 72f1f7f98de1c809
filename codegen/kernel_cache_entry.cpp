// One kernel cache entry's bytes (codegen/kernel_cache.hpp): header (magic, format, metadata
// length, cubin length, crc32 of the rest), JSON metadata, cubin. Pure functions, apart from the
// cache's files, so that the fuzz harness (tests/fuzz/fuzz_cache_entry.cpp) reaches them alone.
#include <zlib.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "codegen/kernel_cache.hpp"

namespace dbsparse::codegen {
namespace {
constexpr char kMagic[8] = {'D', 'B', 'S', 'K', 'C', 'A', 'C', 'H'};
constexpr uint32_t kFormat = 2;  // 2: lowered names as an ordered array
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 4;
}  // namespace

std::string encode_cache_entry(const std::string& full_key, const CompiledKernel& k) {
  nlohmann::json meta = {{"full_key", full_key}, {"lowered_names", nlohmann::json::array()}};
  for (const auto& [expr, lowered] : k.lowered_names) meta["lowered_names"].push_back({expr, lowered});
  std::string m = meta.dump();
  std::string body = m + std::string(k.cubin.begin(), k.cubin.end());
  uint32_t format = kFormat, meta_len = static_cast<uint32_t>(m.size());
  uint64_t cubin_len = k.cubin.size();
  uint32_t crc = static_cast<uint32_t>(
      crc32_z(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<z_size_t>(body.size())));
  std::string bytes(kMagic, 8);
  bytes.append(reinterpret_cast<const char*>(&format), 4);
  bytes.append(reinterpret_cast<const char*>(&meta_len), 4);
  bytes.append(reinterpret_cast<const char*>(&cubin_len), 8);
  bytes.append(reinterpret_cast<const char*>(&crc), 4);
  bytes += body;
  return bytes;
}

std::optional<CompiledKernel> decode_cache_entry(std::span<const char> buf, const std::string& full_key,
                                                 const char** why) {
  const auto bad = [&](const char* w) {
    *why = w;
    return std::nullopt;
  };
  *why = nullptr;
  const uint64_t size = buf.size();
  if (size < kHeaderBytes || std::memcmp(buf.data(), kMagic, 8) != 0) return bad("bad magic");
  uint32_t format = 0, meta_len = 0, crc = 0;
  uint64_t cubin_len = 0;
  std::memcpy(&format, buf.data() + 8, 4);
  std::memcpy(&meta_len, buf.data() + 12, 4);
  std::memcpy(&cubin_len, buf.data() + 16, 8);
  std::memcpy(&crc, buf.data() + 24, 4);
  if (format != kFormat) return bad("unknown format version");
  // Each length against what is left, never their sum: a crafted cubin_len near 2^64 wrapped the
  // sum around to the file size and sent the metadata read past the buffer (found by valgrind).
  if (meta_len > size - kHeaderBytes || cubin_len != size - kHeaderBytes - meta_len) return bad("truncated or padded");
  const auto* body = reinterpret_cast<const Bytef*>(buf.data() + kHeaderBytes);
  if (crc32_z(0L, body, static_cast<z_size_t>(size - kHeaderBytes)) != crc) return bad("checksum mismatch");
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(buf.begin() + kHeaderBytes, buf.begin() + kHeaderBytes + meta_len);
  } catch (const std::exception&) {
    return bad("unreadable metadata");
  }
  // Same file name but another key: a hash collision, so a miss that the next write replaces.
  if (!meta.is_object() || meta.value("full_key", "") != full_key) return std::nullopt;
  CompiledKernel k;
  try {
    // An array of [expression, lowered] pairs: the order is the name expressions' order.
    for (const auto& pair : meta.at("lowered_names"))
      k.lowered_names.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
  } catch (const std::exception&) {
    return bad("unreadable metadata");
  }
  k.cubin.assign(buf.begin() + kHeaderBytes + meta_len, buf.end());
  return k;
}

}  // namespace dbsparse::codegen

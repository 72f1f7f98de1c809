// One kernel cache entry's bytes (codegen/kernel_cache.hpp): header (magic, format, metadata
// length, cubin length, crc32 of the rest), JSON metadata, cubin. Pure functions, apart from the
// cache's files, so that the fuzz harness (tests/fuzz/fuzz_cache_entry.cpp) reaches them alone.
// An AOT entry is the same bytes deflated (zlib, best compression) behind a header of its own
// (magic, inflated length): cubins shrink about 4x, and an installed set of archs is the size that
// matters there (docs/decisions/aot-kernels.md).
#include <zlib.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "codegen/kernel_cache.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/json_limits.hpp"

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
  if (json_too_deep(std::string_view(buf.data() + kHeaderBytes, meta_len))) return bad("unreadable metadata");
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

namespace dbsparse::codegen {
namespace {
constexpr char kAotMagic[8] = {'D', 'B', 'S', 'K', 'Z', 'L', 'I', 'B'};
constexpr size_t kAotHeaderBytes = 8 + 8;  // magic, inflated length
}  // namespace

std::string encode_aot_entry(const std::string& full_key, const CompiledKernel& k) {
  const std::string raw = encode_cache_entry(full_key, k);
  uLongf packed_len = compressBound(static_cast<uLong>(raw.size()));
  std::string out(kAotHeaderBytes + packed_len, '\0');
  std::memcpy(out.data(), kAotMagic, 8);
  const uint64_t raw_len = raw.size();
  std::memcpy(out.data() + 8, &raw_len, 8);
  if (compress2(reinterpret_cast<Bytef*>(out.data() + kAotHeaderBytes), &packed_len,
                reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), Z_BEST_COMPRESSION) != Z_OK)
    throw Error("zlib could not compress the kernel entry of " + full_key);
  out.resize(kAotHeaderBytes + packed_len);
  return out;
}

std::optional<CompiledKernel> decode_aot_entry(std::span<const char> buf, const std::string& full_key,
                                               uint64_t max_inflated, const char** why) {
  *why = nullptr;
  if (buf.size() < kAotHeaderBytes || std::memcmp(buf.data(), kAotMagic, 8) != 0) {
    *why = "bad magic";
    return std::nullopt;
  }
  uint64_t raw_len = 0;
  std::memcpy(&raw_len, buf.data() + 8, 8);
  if (raw_len > max_inflated) {
    *why = "larger than any kernel";
    return std::nullopt;
  }
  std::vector<char> raw(raw_len);
  uLongf got = static_cast<uLongf>(raw_len);
  if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &got,
                 reinterpret_cast<const Bytef*>(buf.data()) + kAotHeaderBytes,
                 static_cast<uLong>(buf.size() - kAotHeaderBytes)) != Z_OK ||
      got != raw_len) {
    *why = "damaged compressed data";
    return std::nullopt;
  }
  return decode_cache_entry(raw, full_key, why);
}

}  // namespace dbsparse::codegen

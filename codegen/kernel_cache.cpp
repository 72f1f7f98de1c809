#include "codegen/kernel_cache.hpp"

#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/embedded_templates.hpp"
#include "dbsparse/error.hpp"
#include "support/atomic_file.hpp"
#include "support/hash.hpp"

namespace dbsparse::codegen {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'D', 'B', 'S', 'K', 'C', 'A', 'C', 'H'};
constexpr uint32_t kFormat = 2;  // 2: lowered names as an ordered array
// magic, format, meta length, cubin length, crc32 of meta+cubin
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 4;
constexpr uint64_t kMaxEntryBytes = uint64_t{256} << 20;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string sanitize(const std::string& key) {
  std::string s = key;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
          c == '+' || c == '='))
      c = '_';
  return s;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const char* to_string(CacheOrigin o) {
  switch (o) {
    case CacheOrigin::Memory: return "memory";
    case CacheOrigin::Disk: return "disk";
    case CacheOrigin::Compiled: return "compiled";
  }
  return "?";
}

std::string KernelCache::default_dir() {
  if (const char* d = std::getenv("DBSPARSE_CACHE_DIR"); d && *d) return d;
  std::string home = env_or("HOME", "/tmp");
  return env_or("XDG_CACHE_HOME", home + "/.cache") + "/dbsparse";
}

KernelCache& KernelCache::global() {
  static KernelCache cache = [] {
    std::string dir = default_dir();
    bool persistent = dir != "off";
    return KernelCache(persistent ? dir : std::string(), persistent);
  }();
  return cache;
}

KernelCache::KernelCache(std::string dir, bool persistent)
    : dir_(std::move(dir)), persistent_(persistent) {}

std::string KernelCache::full_key(const KernelSource& ks, const std::string& arch) const {
  std::string names;
  for (const auto& n : ks.name_expressions) names += n + ";";
  return fmt::format(
      "key={}\ntemplates={}\nsource={}\noptions={}\nnames={}\narch={}\nnvrtc={}\nlibrary={}\n",
      ks.key, templates_hash(), fnv1a64_hex(ks.source), join_options(ks.options), names, arch,
      nvrtc_version(), DBSPARSE_VERSION);
}

fs::path KernelCache::entry_path(const KernelSource& ks, const std::string& arch) const {
  return fs::path(dir_) / fmt::format("{}-{}.cubin", sanitize(ks.key), fnv1a64_hex(full_key(ks, arch)));
}

CachedKernel KernelCache::get(const KernelSource& ks, const std::string& arch) {
  auto t0 = std::chrono::steady_clock::now();
  CachedKernel out;
  out.cache_key = full_key(ks, arch);
  {
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(out.cache_key); it != memory_.end()) {
      ++stats_.memory_hits;
      out.kernel = it->second;
      out.origin = CacheOrigin::Memory;
      out.ms = ms_since(t0);
      return out;
    }
  }
  fs::path path;
  if (persistent_) {
    path = entry_path(ks, arch);
    if (auto k = read_entry(path, out.cache_key)) {
      std::lock_guard lock(mu_);
      ++stats_.disk_hits;
      memory_.emplace(out.cache_key, k);
      out.kernel = k;
      out.origin = CacheOrigin::Disk;
      out.ms = ms_since(t0);
      return out;
    }
  }
  // Compiled outside the lock: NVRTC takes ~100 ms and other keys must not wait for it.
  auto k = std::make_shared<const CompiledKernel>(compile_to_cubin(ks, arch));
  if (persistent_) write_entry(path, out.cache_key, *k);
  std::lock_guard lock(mu_);
  ++stats_.compiles;
  auto [it, inserted] = memory_.emplace(out.cache_key, k);
  out.kernel = it->second;
  out.origin = CacheOrigin::Compiled;
  out.ms = ms_since(t0);
  return out;
}

void KernelCache::clear_memory() {
  std::lock_guard lock(mu_);
  memory_.clear();
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
  // sum around to the file size and sent the metadata read past the buffer (issue 36, valgrind).
  if (meta_len > size - kHeaderBytes || cubin_len != size - kHeaderBytes - meta_len)
    return bad("truncated or padded");
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

std::shared_ptr<const CompiledKernel> KernelCache::read_entry(const fs::path& p,
                                                              const std::string& full_key) {
  std::error_code ec;
  auto size = fs::file_size(p, ec);
  if (ec) return nullptr;  // absent: a plain miss
  auto drop = [&](const char* why) -> std::shared_ptr<const CompiledKernel> {
    std::fprintf(stderr, "dbsparse: dropping corrupt kernel cache entry %s (%s)\n", p.c_str(), why);
    fs::remove(p, ec);
    std::lock_guard lock(mu_);
    ++stats_.dropped_corrupt;
    return nullptr;
  };
  // A cubin is a few MB at most: a larger entry is not one of ours (and would be read whole).
  if (size > kMaxEntryBytes) return drop("larger than any kernel");
  std::ifstream in(p, std::ios::binary);
  std::vector<char> buf(size);
  if (!in.read(buf.data(), static_cast<std::streamsize>(size))) return drop("short read");
  const char* why = nullptr;
  auto k = decode_cache_entry(buf, full_key, &why);
  if (!k) return why ? drop(why) : nullptr;
  return std::make_shared<const CompiledKernel>(std::move(*k));
}

void KernelCache::write_entry(const fs::path& p, const std::string& full_key, const CompiledKernel& k) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  nlohmann::json meta = {{"full_key", full_key}, {"lowered_names", nlohmann::json::array()}};
  for (const auto& [expr, lowered] : k.lowered_names) meta["lowered_names"].push_back({expr, lowered});
  std::string m = meta.dump();
  std::string body = m + std::string(k.cubin.begin(), k.cubin.end());
  uint32_t format = kFormat, meta_len = static_cast<uint32_t>(m.size());
  uint64_t cubin_len = k.cubin.size();
  uint32_t crc = crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));

  std::string bytes(kMagic, 8);
  bytes.append(reinterpret_cast<const char*>(&format), 4);
  bytes.append(reinterpret_cast<const char*>(&meta_len), 4);
  bytes.append(reinterpret_cast<const char*>(&cubin_len), 8);
  bytes.append(reinterpret_cast<const char*>(&crc), 4);
  bytes += body;
  try {
    support::write_file_atomic(p, bytes);
  } catch (const Error& e) {
    // A read-only or full cache directory costs a recompile per process, never a failed plan.
    std::lock_guard lock(mu_);
    if (stats_.write_failures++ == 0)
      std::fprintf(stderr, "dbsparse: warning: cannot write kernel cache in %s; caching in memory only (%s)\n",
                   dir_.c_str(), e.what());
  }
}

CacheStats KernelCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

DiskUsage KernelCache::disk_usage() const {
  DiskUsage u;
  std::error_code ec;
  if (!persistent_ || !fs::is_directory(dir_, ec)) return u;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() == ".cubin") {
      ++u.entries;
      u.bytes += static_cast<int64_t>(e.file_size(ec));
    }
  }
  return u;
}

}  // namespace dbsparse::codegen

#include "codegen/kernel_cache.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "codegen/embedded_templates.hpp"
#include "dbsparse/error.hpp"
#include "support/atomic_file.hpp"
#include "support/hash.hpp"

namespace dbsparse::codegen {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kMaxEntryBytes = uint64_t{256} << 20;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string sanitize(const std::string& key) {
  std::string s = key;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+' || c == '='))
      c = '_';
  return s;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const char* to_string(CacheOrigin o) {
  switch (o) {
    case CacheOrigin::Memory:
      return "memory";
    case CacheOrigin::Disk:
      return "disk";
    case CacheOrigin::Aot:
      return "aot";
    case CacheOrigin::Compiled:
      return "compiled";
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
    return KernelCache(persistent ? dir : std::string(), persistent, default_aot_dirs());
  }();
  return cache;
}

KernelCache::KernelCache(std::string dir, bool persistent, std::vector<std::string> aot_dirs)
    : dir_(std::move(dir)), persistent_(persistent) {
  for (const auto& d : aot_dirs) add_aot_dir(d);
}

void KernelCache::add_aot_dir(const std::string& dir) {
  if (dir.empty()) return;
  std::lock_guard lock(mu_);
  if (std::find(aot_dirs_.begin(), aot_dirs_.end(), dir) == aot_dirs_.end()) aot_dirs_.push_back(dir);
}

std::vector<std::string> KernelCache::aot_dirs() const {
  std::lock_guard lock(mu_);
  return aot_dirs_;
}

namespace {
std::string key_text(const KernelSource& ks, const std::string& arch, const std::string& nvrtc) {
  std::string names;
  for (const auto& n : ks.name_expressions) names += n + ";";
  return fmt::format("key={}\ntemplates={}\nsource={}\noptions={}\nnames={}\narch={}\nnvrtc={}\nlibrary={}\n", ks.key,
                     templates_hash(), fnv1a64_hex(ks.source), join_options(ks.options), names, arch, nvrtc,
                     DBSPARSE_VERSION);
}
}  // namespace

// NVRTC's major from the soname, not its loaded version: a user-cache hit then never loads NVRTC
// (its dlopen costs ~7 ms, ~140 ms from a cold page cache, in a first call), and cubins of one
// major run alike, as the AOT entries (no NVRTC version at all) already assume.
std::string KernelCache::full_key(const KernelSource& ks, const std::string& arch) const {
  return key_text(ks, arch, std::to_string(kNvrtcSonameMajor));
}

std::string KernelCache::aot_key(const KernelSource& ks, const std::string& arch) { return key_text(ks, arch, "aot"); }

fs::path KernelCache::entry_path(const KernelSource& ks, const std::string& arch) const {
  return user_entry_path(ks, full_key(ks, arch));
}

fs::path KernelCache::user_entry_path(const KernelSource& ks, const std::string& full_key) const {
  return fs::path(dir_) / fmt::format("{}-{}.cubin", sanitize(ks.key), fnv1a64_hex(full_key));
}

fs::path KernelCache::aot_entry_path(const fs::path& dir, const KernelSource& ks, const std::string& arch) {
  return dir / sanitize(arch) / fmt::format("{}-{}.cubin", sanitize(ks.key), fnv1a64_hex(aot_key(ks, arch)));
}

int64_t KernelCache::write_aot_entry(const fs::path& dir, const KernelSource& ks, const std::string& arch,
                                     const CompiledKernel& k) {
  const fs::path p = aot_entry_path(dir, ks, arch);
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  const std::string bytes = encode_aot_entry(aot_key(ks, arch), k);
  support::write_file_atomic(p, bytes);
  return static_cast<int64_t>(bytes.size());
}

std::shared_ptr<const CompiledKernel> KernelCache::remember(const std::string& key,
                                                            std::shared_ptr<const CompiledKernel> k,
                                                            int64_t CacheStats::*counter) {
  std::lock_guard lock(mu_);
  ++(stats_.*counter);
  return memory_.emplace(key, std::move(k)).first->second;  // another thread's, where it won the race
}

std::vector<std::string> aot_arch_fallbacks(const std::string& arch) {
  std::vector<std::string> out{arch};
  // sm_<major><minor> with one minor digit, no feature suffix (sm_90a runs on sm_90 alone).
  if (arch.size() < 5 || arch.rfind("sm_", 0) != 0) return out;
  const std::string digits = arch.substr(3);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return out;
  const std::string major = digits.substr(0, digits.size() - 1);
  for (int minor = digits.back() - '0' - 1; minor >= 0; --minor) out.push_back("sm_" + major + std::to_string(minor));
  return out;
}

std::shared_ptr<const CompiledKernel> KernelCache::read_aot(const KernelSource& ks, const std::string& arch,
                                                            const std::string& key) {
  const auto dirs = aot_dirs();
  if (dirs.empty()) return nullptr;
  for (const auto& target : aot_arch_fallbacks(arch)) {
    const std::string target_key = target == arch ? key : aot_key(ks, target);
    for (const auto& dir : dirs)
      if (auto k = read_entry(aot_entry_path(dir, ks, target), target_key, /*ours=*/false)) return k;
  }
  return nullptr;
}

CachedKernel KernelCache::get(const KernelSource& ks, const std::string& arch) {
  auto t0 = std::chrono::steady_clock::now();
  CachedKernel out;
  out.cache_key = aot_key(ks, arch);
  std::promise<std::shared_ptr<const CompiledKernel>> mine;
  {
    std::unique_lock lock(mu_);
    if (auto it = memory_.find(out.cache_key); it != memory_.end()) {
      ++stats_.memory_hits;
      out.kernel = it->second;
      out.origin = CacheOrigin::Memory;
      out.ms = ms_since(t0);
      return out;
    }
    // Another thread is reading or compiling this key (a pool precompiling what a plan asks for
    // now): wait for its kernel rather than compile the same source twice.
    if (auto it = inflight_.find(out.cache_key); it != inflight_.end()) {
      auto pending = it->second;
      ++stats_.inflight_waits;
      lock.unlock();
      out.kernel = pending.get();  // rethrows the other thread's compile error
      out.origin = CacheOrigin::Memory;
      out.ms = ms_since(t0);
      return out;
    }
    inflight_.emplace(out.cache_key, mine.get_future().share());
  }
  try {
    out.kernel = load_or_compile(ks, arch, out.cache_key, out.origin);
    mine.set_value(out.kernel);
  } catch (...) {
    mine.set_exception(std::current_exception());
    std::lock_guard lock(mu_);
    inflight_.erase(out.cache_key);
    throw;
  }
  std::lock_guard lock(mu_);
  inflight_.erase(out.cache_key);
  out.ms = ms_since(t0);
  return out;
}

std::shared_ptr<const CompiledKernel> KernelCache::load_or_compile(const KernelSource& ks, const std::string& arch,
                                                                   const std::string& key, CacheOrigin& origin) {
  if (auto k = read_aot(ks, arch, key)) {
    origin = CacheOrigin::Aot;
    return remember(key, std::move(k), &CacheStats::aot_hits);
  }
  // The user cache is read without NVRTC (full_key); the compile below reports a missing NVRTC.
  std::string user_key;
  if (persistent_ && dir_usable()) user_key = full_key(ks, arch);
  fs::path path;
  if (!user_key.empty()) {
    path = user_entry_path(ks, user_key);
    if (auto k = read_entry(path, user_key, /*ours=*/true)) {
      origin = CacheOrigin::Disk;
      return remember(key, std::move(k), &CacheStats::disk_hits);
    }
  }
  // Compiled outside the lock: NVRTC takes ~100 ms and other keys must not wait for it.
  auto k = std::make_shared<const CompiledKernel>(compile_to_cubin(ks, arch));
  // A compiler of another major (the unversioned fallback) is not written under this one's key.
  if (!user_key.empty() && nvrtc_is_soname_major()) write_entry(path, user_key, *k);
  origin = CacheOrigin::Compiled;
  return remember(key, std::move(k), &CacheStats::compiles);
}

namespace {
const char* describe(fs::file_type t) {
  switch (t) {
    case fs::file_type::regular:
      return "a regular file";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a directory";
  }
}
}  // namespace

bool KernelCache::dir_usable() {
  std::call_once(dir_checked_, [this] {
    std::error_code ec;
    const fs::file_status st = fs::status(dir_, ec);  // follows symlinks: a link to a directory is fine
    std::string why;
    if (ec && st.type() != fs::file_type::not_found)
      why = ec.message();  // a symlink loop, a component that cannot be searched
    else if (fs::exists(st) && !fs::is_directory(st))
      why = fmt::format("it is {}, not a directory", describe(st.type()));
    if (why.empty()) return;
    dir_usable_ = false;
    std::fprintf(stderr, "dbsparse: warning: cannot write kernel cache in %s (%s); caching in memory only\n",
                 dir_.c_str(), why.c_str());
  });
  return dir_usable_;
}

void KernelCache::clear_memory() {
  std::lock_guard lock(mu_);
  memory_.clear();
}

std::shared_ptr<const CompiledKernel> KernelCache::read_entry(const fs::path& p, const std::string& full_key,
                                                              bool ours) {
  std::error_code ec;
  auto size = fs::file_size(p, ec);
  if (ec) return nullptr;  // absent: a plain miss
  auto drop = [&](const char* why) -> std::shared_ptr<const CompiledKernel> {
    if (!ours) {  // an installed file: not ours to delete; compiled instead, as if absent
      std::fprintf(stderr, "dbsparse: ignoring damaged precompiled kernel %s (%s)\n", p.c_str(), why);
      std::lock_guard lock(mu_);
      ++stats_.ignored_aot;
      return nullptr;
    }
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
  auto k = ours ? decode_cache_entry(buf, full_key, &why) : decode_aot_entry(buf, full_key, kMaxEntryBytes, &why);
  if (!k) return why ? drop(why) : nullptr;
  return std::make_shared<const CompiledKernel>(std::move(*k));
}

void KernelCache::write_entry(const fs::path& p, const std::string& full_key, const CompiledKernel& k) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  const std::string bytes = encode_cache_entry(full_key, k);
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
    if (e.path().extension() == ".cubin" && e.is_regular_file(ec)) {  // not a folder named so
      ++u.entries;
      u.bytes += static_cast<int64_t>(e.file_size(ec));
    }
  }
  return u;
}

}  // namespace dbsparse::codegen

#pragma once
// Compiled kernels, in memory (thread-safe) and on disk. The cache key covers everything that can
// invalidate a binary (docs/DESIGN.md §4): key text, template hash, generated source, canonical options,
// arch, NVRTC version and library version. A mismatch is a miss; a corrupt entry is dropped and
// rebuilt; writes go to a temp file and are renamed into place, so readers never see a torn entry.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "codegen/kernel_source.hpp"
#include "codegen/nvrtc_compiler.hpp"

namespace dbsparse::codegen {

enum class CacheOrigin { Memory, Disk, Compiled };
const char* to_string(CacheOrigin o);

struct CachedKernel {
  std::shared_ptr<const CompiledKernel> kernel;
  CacheOrigin origin = CacheOrigin::Compiled;
  double ms = 0;  // time this get() took: a lookup, a disk read or a compile
  std::string cache_key;
};

struct CacheStats {
  int64_t memory_hits = 0, disk_hits = 0, compiles = 0, dropped_corrupt = 0, write_failures = 0;
};

struct DiskUsage {
  int64_t entries = 0, bytes = 0;
};

// One cache entry's bytes decoded (pure: the fuzz harness calls it): the kernel, or nullopt with
// *why set when the bytes are damaged (why stays null for an intact entry of another key).
std::optional<CompiledKernel> decode_cache_entry(std::span<const char> bytes, const std::string& full_key,
                                                 const char** why);
// The bytes decode_cache_entry reads back (codegen/kernel_cache_entry.cpp).
std::string encode_cache_entry(const std::string& full_key, const CompiledKernel& k);

class KernelCache {
 public:
  // $DBSPARSE_CACHE_DIR, else $XDG_CACHE_HOME/dbsparse, else $HOME/.cache/dbsparse.
  static std::string default_dir();
  // The process-wide cache at default_dir(); DBSPARSE_CACHE_DIR=off keeps it in memory only.
  static KernelCache& global();

  explicit KernelCache(std::string dir, bool persistent = true);

  CachedKernel get(const KernelSource& ks, const std::string& arch);
  // Drops the in-memory entries (the disk stays): how tests and `info --jit-timing` measure a load
  // from disk without starting a new process.
  void clear_memory();

  std::string full_key(const KernelSource& ks, const std::string& arch) const;
  std::filesystem::path entry_path(const KernelSource& ks, const std::string& arch) const;
  const std::string& dir() const { return dir_; }
  bool persistent() const { return persistent_; }
  CacheStats stats() const;
  DiskUsage disk_usage() const;

 private:
  std::shared_ptr<const CompiledKernel> read_entry(const std::filesystem::path& p, const std::string& full_key);
  void write_entry(const std::filesystem::path& p, const std::string& full_key, const CompiledKernel& k);

  std::string dir_;
  bool persistent_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CompiledKernel>> memory_;
  CacheStats stats_;
};

}  // namespace dbsparse::codegen

#pragma once
// Compiled kernels, in memory (thread-safe), in read-only ahead-of-time (AOT) folders and in the
// user's disk cache. The cache key covers everything that can invalidate a binary (docs/DESIGN.md
// §4): key text, template hash, generated source, canonical options, arch, NVRTC version and library
// version. A mismatch is a miss; a corrupt user entry is dropped and rebuilt; writes go to a temp
// file and are renamed into place, so readers never see a torn entry.
//
// Lookup order: memory, the AOT folders, the user's disk cache, NVRTC. AOT entries (written by
// `dbsparse precompile --aot` at build time and installed with the library) are keyed without the
// NVRTC version (aot_key): a cubin is valid whatever NVRTC the user has, or none. They are tried
// before the user's cache because the user cache's key needs NVRTC's version, and asking for it
// loads NVRTC (a dlopen of a large library): an AOT hit loads no NVRTC. Both entries of one key hold
// a kernel from the same source, options, arch and library version, so which one is read does not
// change what runs (docs/decisions/aot-kernels.md). get() never writes or cleans an AOT folder
// (write_aot_entry is precompile's): a damaged AOT entry is ignored (the kernel is compiled as if it
// were absent), never deleted. AOT entries are the cache's entry bytes, deflated (encode_aot_entry).
#include <cstdint>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "codegen/nvrtc_compiler.hpp"

namespace dbsparse::codegen {

enum class CacheOrigin { Memory, Disk, Aot, Compiled };
const char* to_string(CacheOrigin o);

struct CachedKernel {
  std::shared_ptr<const CompiledKernel> kernel;
  CacheOrigin origin = CacheOrigin::Compiled;
  double ms = 0;          // time this get() took: a lookup, a disk read or a compile
  std::string cache_key;  // aot_key: the in-memory key, the same whichever source the kernel came from
};

struct CacheStats {
  int64_t memory_hits = 0, disk_hits = 0, aot_hits = 0, compiles = 0, dropped_corrupt = 0, write_failures = 0;
  int64_t inflight_waits = 0;  // gets that waited for another thread's read or compile of the same key
  int64_t ignored_aot = 0;     // damaged AOT entries passed over (left in place)
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
// An AOT entry: encode_cache_entry's bytes deflated behind a header of their own (magic, inflated
// length). decode_aot_entry inflates (at most max_inflated bytes, else damaged) and decodes, with
// decode_cache_entry's contract; a damaged stream sets *why.
std::string encode_aot_entry(const std::string& full_key, const CompiledKernel& k);
std::optional<CompiledKernel> decode_aot_entry(std::span<const char> bytes, const std::string& full_key,
                                               uint64_t max_inflated, const char** why);

// The archs whose AOT cubins a device of `arch` runs, nearest first: arch itself, then the lower
// minor versions of its major (a cubin runs on any later minor of the same major: sm_86's on
// sm_87 and sm_89, sm_120's on sm_121). An arch with a feature suffix (sm_90a) has only itself.
std::vector<std::string> aot_arch_fallbacks(const std::string& arch);

class KernelCache {
 public:
  // $DBSPARSE_CACHE_DIR, else $XDG_CACHE_HOME/dbsparse, else $HOME/.cache/dbsparse.
  static std::string default_dir();
  // The process-wide cache at default_dir() with default_aot_dirs(); DBSPARSE_CACHE_DIR=off keeps
  // it in memory only (AOT folders still apply).
  static KernelCache& global();
  // The AOT folders, in lookup order: $DBSPARSE_AOT_DIR (a colon-separated list), then
  // <prefix>/share/dbsparse/kernels beside the running executable or the module holding this library
  // (<prefix>/bin/x or <prefix>/lib/x), then the install prefix's compiled in; the last two only
  // where they exist. DBSPARSE_AOT_DIR=off: none (aot_disabled()).
  static std::vector<std::string> default_aot_dirs();
  static bool aot_disabled();

  // A cache on `dir` reading the AOT folders `aot_dirs` (none by default: tests and tools name them).
  explicit KernelCache(std::string dir, bool persistent = true, std::vector<std::string> aot_dirs = {});
  // Adds an AOT folder after those already given (the Python package's own, at import); an empty
  // path or one already listed is ignored. Entries already in memory stay.
  void add_aot_dir(const std::string& dir);
  std::vector<std::string> aot_dirs() const;

  CachedKernel get(const KernelSource& ks, const std::string& arch);
  // Drops the in-memory entries (the disk stays): how tests and `info --jit-timing` measure a load
  // from disk without starting a new process.
  void clear_memory();

  // The user cache's key: needs NVRTC's version, so it loads NVRTC (throws Error when absent).
  std::string full_key(const KernelSource& ks, const std::string& arch) const;
  // The AOT entries' key and the in-memory one: full_key with "aot" for the NVRTC version. Pure.
  static std::string aot_key(const KernelSource& ks, const std::string& arch);
  std::filesystem::path entry_path(const KernelSource& ks, const std::string& arch) const;
  // Where an AOT folder holds ks for arch: <dir>/<arch>/<key>-<hash of aot_key>.cubin.
  static std::filesystem::path aot_entry_path(const std::filesystem::path& dir, const KernelSource& ks,
                                              const std::string& arch);
  // Writes k as ks's AOT entry under dir (atomic, like the cache's own writes); returns its bytes.
  // Throws InputError naming the file when it cannot be written.
  static int64_t write_aot_entry(const std::filesystem::path& dir, const KernelSource& ks, const std::string& arch,
                                 const CompiledKernel& k);
  const std::string& dir() const { return dir_; }
  bool persistent() const { return persistent_; }
  CacheStats stats() const;
  DiskUsage disk_usage() const;

 private:
  std::filesystem::path user_entry_path(const KernelSource& ks, const std::string& full_key) const;
  // ours: an entry of the user's cache (a damaged one is deleted); else an AOT one (left in place).
  std::shared_ptr<const CompiledKernel> read_entry(const std::filesystem::path& p, const std::string& full_key,
                                                   bool ours);
  std::shared_ptr<const CompiledKernel> read_aot(const KernelSource& ks, const std::string& arch,
                                                 const std::string& key);
  std::shared_ptr<const CompiledKernel> remember(const std::string& key, std::shared_ptr<const CompiledKernel> k,
                                                 int64_t CacheStats::*counter);
  void write_entry(const std::filesystem::path& p, const std::string& full_key, const CompiledKernel& k);
  // After a memory miss: the AOT folders, the user's cache, else NVRTC (origin says which).
  std::shared_ptr<const CompiledKernel> load_or_compile(const KernelSource& ks, const std::string& arch,
                                                        const std::string& key, CacheOrigin& origin);

  // The cache directory, checked once per cache before its first use: a path that exists and is
  // not a directory (a file, FIFO, device, symlink loop) turns the disk cache off for this
  // process with one warning line, so nothing is read from or written under it.
  bool dir_usable();

  std::string dir_;
  bool persistent_;
  std::once_flag dir_checked_;
  bool dir_usable_ = true;
  std::vector<std::string> aot_dirs_;  // under mu_
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CompiledKernel>> memory_;
  // Keys a thread is reading or compiling now (under mu_): later gets of them wait for it.
  std::map<std::string, std::shared_future<std::shared_ptr<const CompiledKernel>>> inflight_;
  CacheStats stats_;
};

}  // namespace dbsparse::codegen

// Precompiled (AOT) kernel folders: what `dbsparse precompile --aot` writes, a fresh cache with an
// empty user folder reads without compiling, a damaged entry passed over and left in place, and
// DBSPARSE_AOT_DIR (a list, or off). Uses the real NVRTC (no GPU needed), compiling for sm_90.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "codegen/kernel_cache.hpp"
#include "codegen/keys/spmv_key.hpp"
#include "test_support.hpp"

using namespace dbsparse::codegen;
namespace fs = std::filesystem;

namespace {

const char* const kKey = "spmv.scalar.f32.b256";

const KernelSource& sample() {
  static const KernelSource ks = make_source(SpmvKey::parse(kKey));
  return ks;
}

int count_files(const fs::path& dir) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) n += e.is_regular_file();
  return n;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string cli() { return "'" + dbs_test::sibling_binary("dbsparse").string() + "'"; }

// The sample's AOT entry under dir, written by `precompile --aot` (the CLI, its user cache in
// `user`, no AOT folder read).
fs::path precompile_sample(const fs::path& dir, const fs::path& user, const std::string& arch = "sm_90") {
  const auto [rc, out] =
      dbs_test::run_shell("DBSPARSE_CACHE_DIR='" + user.string() + "' DBSPARSE_AOT_DIR=off " + cli() +
                          " precompile --aot '" + dir.string() + "' --arch " + arch + " --op spmv --key " + kKey);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(out.find("AOT total: 1 kernels") != std::string::npos);
  return KernelCache::aot_entry_path(dir, sample(), arch);
}

// Sets an environment variable for a scope, then restores it.
struct ScopedEnv {
  std::string name, old;
  bool had;
  ScopedEnv(const char* n, const std::string& value) : name(n), had(std::getenv(n) != nullptr) {
    if (had) old = std::getenv(n);
    setenv(n, value.c_str(), 1);
  }
  ~ScopedEnv() { had ? setenv(name.c_str(), old.c_str(), 1) : unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("AotEntryServesAFreshCacheWithoutCompilingAndMatchesACompile") {
  const auto root = dbs_test::temp_dir("aot-hit");
  const fs::path aot = root / "aot", user = root / "user";
  fs::create_directories(user);
  const fs::path entry = precompile_sample(aot, root / "build-cache");
  REQUIRE(fs::exists(entry));
  CHECK(entry.parent_path().filename() == "sm_90");

  KernelCache cache(user.string(), /*persistent=*/true, {aot.string()});
  const CachedKernel k = cache.get(sample(), "sm_90");
  CHECK(k.origin == CacheOrigin::Aot);
  CHECK(std::string(to_string(k.origin)) == "aot");
  CHECK(cache.stats().aot_hits == 1);
  CHECK(cache.stats().compiles == 0);
  CHECK(count_files(user) == 0);  // an AOT hit is never copied into the user's cache
  CHECK(cache.get(sample(), "sm_90").origin == CacheOrigin::Memory);

  // The reference: the same source compiled here, by this process's NVRTC.
  KernelCache memory_only("", /*persistent=*/false);
  const CachedKernel ref = memory_only.get(sample(), "sm_90");
  REQUIRE(ref.origin == CacheOrigin::Compiled);
  CHECK(k.kernel->cubin == ref.kernel->cubin);
  CHECK(k.kernel->lowered_names == ref.kernel->lowered_names);
  fs::remove_all(root);
}

TEST_CASE("DamagedAotEntryIsCompiledAroundAndLeftUntouched") {
  const auto root = dbs_test::temp_dir("aot-damaged");
  const fs::path aot = root / "aot", user = root / "user";
  const fs::path entry = precompile_sample(aot, root / "build-cache");
  std::string bytes = read_all(entry);
  REQUIRE(bytes.size() > 200);
  bytes[bytes.size() / 2] ^= 0x5a;  // inside the cubin: the checksum no longer holds
  { std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes; }

  KernelCache cache(user.string(), /*persistent=*/true, {aot.string()});
  const CachedKernel k = cache.get(sample(), "sm_90");
  CHECK(k.origin == CacheOrigin::Compiled);
  CHECK(cache.stats().ignored_aot == 1);
  CHECK(cache.stats().compiles == 1);
  CHECK(cache.stats().dropped_corrupt == 0);
  REQUIRE(fs::exists(entry));            // not ours to delete
  CHECK(read_all(entry) == bytes);       // nor to rewrite
  CHECK(count_files(user) == 1);         // the compile went to the user's cache as usual
  CHECK(k.kernel->cubin.at(0) == 0x7f);  // ELF

  // An empty file and a folder in an entry's place are passed over the same way.
  { std::ofstream(entry, std::ios::binary | std::ios::trunc); }
  KernelCache again("", /*persistent=*/false, {aot.string()});
  CHECK(again.get(sample(), "sm_90").origin == CacheOrigin::Compiled);
  CHECK(fs::exists(entry));
  fs::remove(entry);
  fs::create_directories(entry);
  KernelCache folder("", /*persistent=*/false, {aot.string()});
  CHECK(folder.get(sample(), "sm_90").origin == CacheOrigin::Compiled);
  CHECK(fs::is_directory(entry));
  fs::remove_all(root);
}

TEST_CASE("AotDirEnvironmentListsFoldersInOrderAndOffDisablesThem") {
  {
    ScopedEnv env("DBSPARSE_AOT_DIR", "/x/first:/y/second");
    const auto dirs = KernelCache::default_aot_dirs();
    REQUIRE(dirs.size() >= 2);
    CHECK(dirs[0] == "/x/first");
    CHECK(dirs[1] == "/y/second");
    CHECK_FALSE(KernelCache::aot_disabled());
  }
  ScopedEnv env("DBSPARSE_AOT_DIR", "off");
  CHECK(KernelCache::aot_disabled());
  CHECK(KernelCache::default_aot_dirs().empty());
}

// Through the CLI, as a new process: an empty user cache and the AOT folder named in the
// environment serve the kernel with no compile and without loading NVRTC at all; under
// DBSPARSE_AOT_DIR=off the same call compiles and fills the user's cache.
TEST_CASE("FreshProcessWithEmptyUserCacheHitsAotWithoutNvrtcAndOffCompiles") {
  const auto root = dbs_test::temp_dir("aot-process");
  const fs::path aot = root / "aot", user = root / "user", user_off = root / "user-off";
  precompile_sample(aot, root / "build-cache");
  const std::string args = " precompile --arch sm_90 --op spmv --key " + std::string(kKey);

  const auto [rc, out] = dbs_test::run_shell("DBSPARSE_CACHE_DIR='" + user.string() + "' DBSPARSE_AOT_DIR='" +
                                             aot.string() + "' LD_DEBUG=libs " + cli() + args);
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find(std::string(kKey) + " ") != std::string::npos);
  CHECK(out.find(" aot ") != std::string::npos);
  CHECK(out.find("libnvrtc") == std::string::npos);  // the dynamic loader never looked for it
  CHECK(count_files(user) == 0);

  const auto [rc_off, out_off] =
      dbs_test::run_shell("DBSPARSE_CACHE_DIR='" + user_off.string() + "' DBSPARSE_AOT_DIR=off " + cli() + args);
  INFO(out_off);
  CHECK(rc_off == 0);
  CHECK(out_off.find(" compiled ") != std::string::npos);
  CHECK(count_files(user_off) == 1);
  fs::remove_all(root);
}

// A device of a later minor version runs the nearest lower minor's cubin of its major.
TEST_CASE("AotEntryOfALowerMinorArchServesALaterOne") {
  using V = std::vector<std::string>;
  CHECK(aot_arch_fallbacks("sm_89") ==
        V{"sm_89", "sm_88", "sm_87", "sm_86", "sm_85", "sm_84", "sm_83", "sm_82", "sm_81", "sm_80"});
  CHECK(aot_arch_fallbacks("sm_121") == V{"sm_121", "sm_120"});
  CHECK(aot_arch_fallbacks("sm_90") == V{"sm_90"});
  CHECK(aot_arch_fallbacks("sm_100") == V{"sm_100"});
  CHECK(aot_arch_fallbacks("sm_90a") == V{"sm_90a"});
  CHECK(aot_arch_fallbacks("compute_90") == V{"compute_90"});
  const auto root = dbs_test::temp_dir("aot-minor");
  const fs::path aot = root / "aot";
  precompile_sample(aot, root / "build-cache", "sm_86");
  KernelCache cache("", /*persistent=*/false, {aot.string()});
  CHECK(cache.get(sample(), "sm_87").origin == CacheOrigin::Aot);
  CHECK(cache.get(sample(), "sm_80").origin == CacheOrigin::Compiled);  // a lower minor: not served
  CHECK(cache.stats().aot_hits == 1);
  fs::remove_all(root);
}

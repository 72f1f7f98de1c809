// The persistent kernel cache: hits, misses, atomic writes and corrupt entries. Uses the real NVRTC
// (no GPU needed), compiling for sm_90.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <zlib.h>

#include "codegen/kernel_cache.hpp"
#include "codegen/keys/spmspv_key.hpp"
#include "codegen/keys/spmv_key.hpp"
#include "test_support.hpp"

using namespace dbsparse::codegen;
namespace fs = std::filesystem;

namespace {
const KernelSource& sample() {
  static const KernelSource ks = make_source(SpmvKey{ValueType::F32, SpmvStrategy::Scalar, 256});
  return ks;
}
int count_files(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}
}  // namespace

TEST_CASE("KernelCacheCompilesThenServesFromMemoryAndDisk") {
  auto dir = dbs_test::temp_dir("cache-basic");
  KernelCache first(dir.string());
  auto a = first.get(sample(), "sm_90");
  CHECK(a.origin == CacheOrigin::Compiled);
  REQUIRE(a.kernel->cubin.size() > 4);
  CHECK(a.kernel->cubin[0] == 0x7f);  // ELF
  CHECK(first.get(sample(), "sm_90").origin == CacheOrigin::Memory);
  CHECK(fs::exists(first.entry_path(sample(), "sm_90")));
  CHECK(count_files(dir) == 1);  // no temp file left behind

  KernelCache second(dir.string());  // as a new process would see it
  auto b = second.get(sample(), "sm_90");
  CHECK(b.origin == CacheOrigin::Disk);
  CHECK(b.kernel->cubin == a.kernel->cubin);
  CHECK(b.kernel->lowered_names == a.kernel->lowered_names);
  CHECK(second.stats().disk_hits == 1);
  fs::remove_all(dir);
}

TEST_CASE("KernelCacheKeyCoversArchAndSource") {
  auto dir = dbs_test::temp_dir("cache-key");
  KernelCache cache(dir.string());
  CHECK(cache.full_key(sample(), "sm_90") != cache.full_key(sample(), "sm_80"));
  auto other = make_source(SpmvKey{ValueType::F32, SpmvStrategy::Scalar, 512});
  CHECK(cache.full_key(sample(), "sm_90") != cache.full_key(other, "sm_90"));
  CHECK(cache.entry_path(sample(), "sm_90") != cache.entry_path(sample(), "sm_80"));
  // Changing only the options changes the key: options can change the binary.
  auto opt = sample();
  opt.options.push_back("-lineinfo");
  CHECK(cache.full_key(sample(), "sm_90") != cache.full_key(opt, "sm_90"));
  // NVRTC's soname major, not its loaded version: a disk hit needs no NVRTC loaded to find its key.
  CHECK(cache.full_key(sample(), "sm_90").find(fmt::format("\nnvrtc={}\n", kNvrtcSonameMajor)) != std::string::npos);
  CHECK(nvrtc_is_soname_major());  // the toolkit this test runs with
  fs::remove_all(dir);
}

TEST_CASE("KernelCacheDropsCorruptOrTruncatedEntries") {
  auto dir = dbs_test::temp_dir("cache-corrupt");
  std::vector<char> good;
  {
    KernelCache c(dir.string());
    good = c.get(sample(), "sm_90").kernel->cubin;
  }
  auto path = KernelCache(dir.string()).entry_path(sample(), "sm_90");
  auto size = fs::file_size(path);

  SUBCASE("a flipped byte") {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    char ch = 0;
    f.read(&ch, 1);
    f.seekp(static_cast<std::streamoff>(size / 2));
    ch = static_cast<char>(ch ^ 0x5a);
    f.write(&ch, 1);
  }
  SUBCASE("truncated") { fs::resize_file(path, size / 3); }
  SUBCASE("garbage") { std::ofstream(path, std::ios::binary | std::ios::trunc) << "not a cubin"; }

  KernelCache c(dir.string());
  auto k = c.get(sample(), "sm_90");
  CHECK(k.origin == CacheOrigin::Compiled);
  CHECK(c.stats().dropped_corrupt == 1);
  CHECK(k.kernel->cubin == good);
  // The rebuilt entry is whole again.
  KernelCache d(dir.string());
  CHECK(d.get(sample(), "sm_90").origin == CacheOrigin::Disk);
  fs::remove_all(dir);
}

TEST_CASE("KernelCacheIsSafeUnderConcurrentGets") {
  auto dir = dbs_test::temp_dir("cache-threads");
  KernelCache cache(dir.string());
  std::vector<std::thread> threads;
  std::vector<std::vector<char>> bins(4);
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { bins[t] = cache.get(sample(), "sm_90").kernel->cubin; });
  for (auto& th : threads) th.join();
  for (int t = 1; t < 4; ++t) CHECK(bins[t] == bins[0]);
  CHECK(count_files(dir) == 1);
  fs::remove_all(dir);
}

TEST_CASE("KernelCacheKeepsWorkingWhenItsDirectoryIsUnwritable") {
  auto dir = dbs_test::temp_dir("cache-ro");
  fs::path file = dir / "not-a-dir";
  std::ofstream(file) << "x";
  KernelCache cache((file / "sub").string());  // cannot be created: a file is in the way
  auto k = cache.get(sample(), "sm_90");
  CHECK(k.origin == CacheOrigin::Compiled);
  CHECK(cache.stats().write_failures == 1);
  CHECK(cache.get(sample(), "sm_90").origin == CacheOrigin::Memory);
  fs::remove_all(dir);
}

TEST_CASE("KernelCacheDirThatIsNotADirectoryIsNeverWritten") {
  auto dir = dbs_test::temp_dir("cache-notdir");
  SUBCASE("a regular file") {
    const fs::path file = dir / "cache";
    std::ofstream(file) << "mine";
    KernelCache cache(file.string());
    CHECK(cache.get(sample(), "sm_90").origin == CacheOrigin::Compiled);
    CHECK(cache.stats().write_failures == 0);  // not even tried
    std::ifstream in(file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text == "mine");
  }
  SUBCASE("a FIFO") {
    const fs::path fifo = dir / "cache";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    KernelCache cache(fifo.string());
    CHECK(cache.get(sample(), "sm_90").origin == CacheOrigin::Compiled);
    CHECK(cache.get(sample(), "sm_90").origin == CacheOrigin::Memory);
    CHECK(cache.stats().write_failures == 0);
    CHECK(fs::is_fifo(fifo));
  }
  CHECK(count_files(dir) <= 1);  // nothing but what the case made
  fs::remove_all(dir);
}

TEST_CASE("KernelCacheKeepsEntryPointOrderThroughDisk") {
  // The entry points' order is how plans find their kernels: it must survive a disk round trip
  // even when the names do not sort in that order.
  auto dir = dbs_test::temp_dir("cache-order");
  auto ks = make_source(SpmspvKey{Direction::Pull, ValueType::F32, Semiring::PlusTimes, 1});
  std::vector<std::pair<std::string, std::string>> first;
  {
    KernelCache c(dir.string());
    first = c.get(ks, "sm_90").kernel->lowered_names;
  }
  KernelCache c(dir.string());
  auto k = c.get(ks, "sm_90");
  CHECK(k.origin == CacheOrigin::Disk);
  CHECK(k.kernel->lowered_names == first);
  REQUIRE(first.size() == ks.name_expressions.size());
  for (size_t i = 0; i < first.size(); ++i) CHECK(first[i].first == ks.name_expressions[i]);
  fs::remove_all(dir);
}

// Lengths crafted so that their sum wraps around to the entry's size, with a valid checksum: the
// decoder refuses them (it read past its buffer before; issue 36), and the same bytes written as
// a cache entry are dropped and rebuilt.
TEST_CASE("KernelCacheRefusesEntriesWhoseLengthsWrapAround") {
  const std::string key = "k";
  std::string meta = R"({"full_key":"k","lowered_names":[]})";
  std::string body = meta + "CUBIN";
  std::string bytes("DBSKCACH", 8);
  const auto put = [&](auto v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  const uint32_t format = 2;
  const uint32_t meta_len = 0xFFFFFFF0u;                        // far past the buffer
  const uint64_t cubin_len = uint64_t(body.size()) - meta_len;  // wraps: 28 + meta_len + cubin_len == size
  put(format);
  put(meta_len);
  put(cubin_len);
  put(static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
  bytes += body;
  const char* why = nullptr;
  CHECK_FALSE(decode_cache_entry(bytes, key, &why).has_value());
  REQUIRE(why != nullptr);
  CHECK(std::string(why) == "truncated or padded");
  // The same header with honest lengths decodes.
  std::string ok = bytes.substr(0, 12);
  const uint32_t real_meta = static_cast<uint32_t>(meta.size());
  const uint64_t real_cubin = 5;
  ok.append(reinterpret_cast<const char*>(&real_meta), 4);
  ok.append(reinterpret_cast<const char*>(&real_cubin), 8);
  ok += bytes.substr(24);
  auto k = decode_cache_entry(ok, key, &why);
  REQUIRE(k.has_value());
  CHECK(std::string(k->cubin.begin(), k->cubin.end()) == "CUBIN");
}

// disk_usage counts entries: files named *.cubin, not a folder or anything else that is named so.
TEST_CASE("KernelCacheDiskUsageCountsOnlyEntryFiles") {
  const auto dir = dbs_test::temp_dir("cache-usage");
  std::filesystem::create_directories(dir / "not-an-entry.cubin");
  std::ofstream(dir / "a.cubin") << "1234";
  std::ofstream(dir / "notes.txt") << "x";
  KernelCache cache(dir.string());
  const auto u = cache.disk_usage();
  CHECK(u.entries == 1);
  CHECK(u.bytes == 4);
}

// support/atomic_file: the one way files that other processes read are replaced.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dbsparse/error.hpp"
#include "support/atomic_file.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using dbsparse::support::AtomicFile;
using dbsparse::support::write_file_atomic;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}
// The message of the InputError that f() throws, or a note that it threw none.
template <class F>
std::string input_error_of(F f) {
  try {
    f();
  } catch (const dbsparse::InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}
}  // namespace

TEST_CASE("atomic file: writes, overwrites, and leaves only the target") {
  auto dir = dbs_test::temp_dir("atomic-basic");
  auto target = dir / "out.bin";
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  write_file_atomic(target, big);
  CHECK(slurp(target) == big);
  write_file_atomic(target, "short");
  CHECK(slurp(target) == "short");
  write_file_atomic(target, "");
  CHECK(slurp(target).empty());
  CHECK(names_in(dir) == std::vector<std::string>{"out.bin"});

  // Streamed in pieces, as the Matrix Market writer does.
  {
    AtomicFile f(target);
    CHECK(f.temp_path().parent_path() == dir);
    f.write("a");
    f.write("bc");
    CHECK(slurp(target).empty());  // unchanged until commit
    f.commit();
  }
  CHECK(slurp(target) == "abc");
  CHECK(names_in(dir) == std::vector<std::string>{"out.bin"});
  fs::remove_all(dir);
}

TEST_CASE("atomic file: an abandoned write leaves the old content and no temp file") {
  auto dir = dbs_test::temp_dir("atomic-abandon");
  auto target = dir / "keep.txt";
  write_file_atomic(target, "old");
  try {
    AtomicFile f(target);
    f.write("new, half");
    throw std::runtime_error("caller failed mid-write");
  } catch (const std::runtime_error&) {
  }
  CHECK(slurp(target) == "old");
  CHECK(names_in(dir) == std::vector<std::string>{"keep.txt"});
  fs::remove_all(dir);
}

TEST_CASE("atomic file: concurrent writers never leave a torn file") {
  auto dir = dbs_test::temp_dir("atomic-race");
  auto target = dir / "shared.txt";
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) write_file_atomic(target, std::string(4096, static_cast<char>('a' + t)));
    });
  for (auto& th : threads) th.join();
  auto s = slurp(target);
  REQUIRE(s.size() == 4096);
  CHECK(s == std::string(4096, s[0]));
  CHECK(names_in(dir) == std::vector<std::string>{"shared.txt"});
  fs::remove_all(dir);
}

TEST_CASE("atomic file: an unwritable location throws InputError naming the path and the reason") {
  auto dir = dbs_test::temp_dir("atomic-fail");
  auto missing = dir / "no-such-dir" / "x.txt";
  auto msg = input_error_of([&] { write_file_atomic(missing, "x"); });
  CHECK(msg.find(missing.string()) != std::string::npos);
  CHECK(msg.find("No such file or directory") != std::string::npos);

  // A regular file where a directory should be.
  write_file_atomic(dir / "plain", "x");
  auto under_file = dir / "plain" / "x.txt";
  msg = input_error_of([&] { write_file_atomic(under_file, "x"); });
  CHECK(msg.find(under_file.string()) != std::string::npos);
  CHECK(msg.find("Not a directory") != std::string::npos);

  // A read-only directory; root ignores the mode bits, so only checked for other users.
  if (::geteuid() != 0) {
    auto ro = dir / "ro";
    fs::create_directories(ro);
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    msg = input_error_of([&] { write_file_atomic(ro / "x.txt", "x"); });
    CHECK(msg.find((ro / "x.txt").string()) != std::string::npos);
    CHECK(msg.find("Permission denied") != std::string::npos);
    fs::permissions(ro, fs::perms::owner_all);
    fs::remove(ro);
  }
  CHECK(names_in(dir) == std::vector<std::string>{"plain"});
  fs::remove_all(dir);
}

// A FIFO (as /dev/stdout or a device node would be) is written through and stays what it was: a
// rename over it put a regular file where a device node was (`info --json /dev/full` as root
// replaced /dev/full, hostile sweep 2026-12-04). A directory is refused.
TEST_CASE("atomic file: a FIFO target is written through, not replaced; a directory is refused") {
  const fs::path dir = dbs_test::temp_dir("atomic-fifo");
  const fs::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The read end first (non-blocking, so no writer is needed yet): a FIFO with no reader is an
  // error for the writer, not a wait.
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(rd >= 0);
  dbsparse::support::write_file_atomic(fifo, "through the pipe\n");
  std::string got(64, '\0');
  const ssize_t n = ::read(rd, got.data(), got.size());
  ::close(rd);
  got.resize(n > 0 ? static_cast<size_t>(n) : 0);
  CHECK(got == "through the pipe\n");
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);  // no temp file left
  CHECK(input_error_of([&] { write_file_atomic(fifo, "nobody reads"); }).find("open it for writing") !=
        std::string::npos);
  try {
    dbsparse::support::write_file_atomic(dir, "x");
    FAIL("a directory was written");
  } catch (const dbsparse::InputError& e) {
    CHECK(std::string(e.what()).find("directory") != std::string::npos);
  }
}

// Whether a path may be opened as the tuning DB: decided before SQLite touches it (SQLite creates
// side files, takes locks and blocks on a FIFO), and again under the write lock before the first
// write. See schema.hpp for the contract and docs/USAGE.md (Environment) for what users see.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/tuning_db.hpp"
#include "tuning_db/schema.hpp"

namespace dbsparse::schema {
namespace {

constexpr const char* kExpected =
    "the tuning DB must be dbsparse's own SQLite file (application_id 0x64625350) or a path that does not exist yet";

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

const char* describe(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

int64_t pragma_int(sqlite3* db, const char* sql) {
  sqlite::Stmt st(db, sql);
  return st.step() ? st.int64(0) : 0;
}

int32_t application_id(sqlite3* db) { return static_cast<int32_t>(pragma_int(db, "PRAGMA application_id")); }

[[noreturn]] void refuse_foreign(const std::string& path, int32_t id) {
  if (id != 0)
    throw DbError(
        fmt::format("{}: an SQLite database of another program (application_id 0x{:08x}); refused and left "
                    "untouched: {}",
                    path, static_cast<uint32_t>(id), kExpected));
  throw DbError(
      fmt::format("{}: an SQLite database without dbsparse's application_id or tables (another program's file?); "
                  "refused and left untouched: {}",
                  path, kExpected));
}

// The 100-byte SQLite header, or fewer bytes where the file is shorter.
size_t read_header(int fd, unsigned char (&h)[100]) {
  size_t got = 0;
  while (got < sizeof h) {
    const ssize_t n = ::pread(fd, h + got, sizeof h - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

// Legacy check on a read-only, immutable handle: no lock, no -shm, nothing written.
bool legacy_file(const std::string& path) {
  sqlite3* ro = sqlite::open_immutable(path);
  if (!ro) throw DbError(fmt::format("{}: not a usable database: SQLite cannot open it", path));
  try {
    const bool legacy = looks_like_legacy(ro);
    sqlite3_close_v2(ro);
    return legacy;
  } catch (const DbError& e) {
    sqlite3_close_v2(ro);
    throw DbError(fmt::format("{}: not a usable database: {}", path, e.what()));
  }
}

}  // namespace

bool looks_like_legacy(sqlite3* db) {
  const int64_t version = pragma_int(db, "PRAGMA user_version");
  if (version < 1 || version > TuningDb::kSchemaVersion) return false;
  // The tables each version created (schema.cpp's steps); a file missing one is not what we wrote.
  const int64_t want = version >= 2 ? 6 : 4;
  const int64_t have = pragma_int(db,
                                  "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('devices', "
                                  "'matrices', 'trials', 'configs', 'device_profiles', 'plan_choices')");
  return have >= want;
}

FileState check_file(const std::string& path) {
  // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    // ENOTDIR: a parent is a file; creating the directory reports that.
    if (err == ENOENT || err == ENOTDIR) return FileState::Absent;
    if (err == ELOOP) throw DbError(fmt::format("{}: a loop of symbolic links, not a file: {}", path, kExpected));
    throw DbError(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
  }
  Fd guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw DbError(fmt::format("{}: cannot inspect: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw DbError(fmt::format("{}: {}, not a regular file: {}", path, describe(st.st_mode), kExpected));
  if (st.st_size == 0) return FileState::Empty;
  unsigned char h[100];
  if (read_header(fd, h) < sizeof h || std::memcmp(h, "SQLite format 3", 16) != 0)
    throw DbError(fmt::format("{}: not a database (no SQLite header): {}", path, kExpected));
  const auto id = static_cast<int32_t>((uint32_t{h[68]} << 24) | (uint32_t{h[69]} << 16) | (uint32_t{h[70]} << 8) |
                                       uint32_t{h[71]});
  if (id == kApplicationId) return FileState::Ours;
  if (id != 0 || !legacy_file(path)) refuse_foreign(path, id);
  return FileState::Legacy;
}

void claim(sqlite3* db, const std::string& path) {
  if (application_id(db) == kApplicationId) return;
  sqlite::Transaction tx(db);
  const int32_t id = application_id(db);
  if (id == kApplicationId) return;  // another process claimed it while we waited; nothing written
  const bool fresh = id == 0 && pragma_int(db, "PRAGMA user_version") == 0 &&
                     pragma_int(db, "SELECT count(*) FROM sqlite_master") == 0;
  if (!fresh && !(id == 0 && looks_like_legacy(db))) refuse_foreign(path, id);
  // PRAGMA takes no bound parameters; the value is our constant.
  sqlite::exec(db, fmt::format("PRAGMA application_id = {}", kApplicationId), "marking the file as a tuning DB");
  tx.commit();
}

}  // namespace dbsparse::schema

#include "tuning_db/schema.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iterator>

#include "dbsparse/error.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse::sqlite {

void fail(sqlite3* db, const std::string& what) {
  const char* file = db ? sqlite3_db_filename(db, "main") : nullptr;
  throw DbError(
      fmt::format("{}: {}: {}", file && *file ? file : "(unnamed)", what, db ? sqlite3_errmsg(db) : "out of memory"));
}

Stmt::Stmt(sqlite3* db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    fail(db, fmt::format("preparing \"{}\"", sql));
  }
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::bind(int i, const std::string& v) {
  if (sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT) != SQLITE_OK)
    fail(db_, "binding a parameter");
  return *this;
}

Stmt& Stmt::bind(int i, int64_t v) {
  if (sqlite3_bind_int64(stmt_, i, v) != SQLITE_OK) fail(db_, "binding a parameter");
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  if (sqlite3_bind_double(stmt_, i, v) != SQLITE_OK) fail(db_, "binding a parameter");
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, fmt::format("running \"{}\"", sqlite3_sql(stmt_)));
}

void Stmt::run() {
  while (step()) {
  }
}

std::string Stmt::text(int col) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
}

int64_t Stmt::int64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::real(int col) const { return sqlite3_column_double(stmt_, col); }

void exec(sqlite3* db, const std::string& sql, const std::string& what) {
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
    fail(db, what.empty() ? fmt::format("running \"{}\"", sql) : what);
}

Transaction::Transaction(sqlite3* db) : db_(db) { exec(db, "BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  exec(db_, "COMMIT");
  done_ = true;
}

sqlite3* open_immutable(const std::string& path) {
  std::string uri = "file:";
  for (char c : std::filesystem::absolute(path).string()) {
    if (c == '%' || c == '?' || c == '#')
      uri += fmt::format("%{:02x}", static_cast<unsigned char>(c));
    else
      uri += c;
  }
  uri += "?mode=ro&immutable=1";
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) != SQLITE_OK) {
    sqlite3_close_v2(raw);
    return nullptr;
  }
  return raw;
}

}  // namespace dbsparse::sqlite

namespace dbsparse::schema {
namespace {

// Step i takes the file from version i to version i + 1. Append only: a released step is never
// edited, because files in users' hands have already run it.
constexpr const char* kSteps[] = {
    // v0 -> v1
    R"sql(
CREATE TABLE devices (
  id INTEGER PRIMARY KEY,
  fingerprint TEXT UNIQUE NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  cc_major INTEGER NOT NULL DEFAULT 0,
  cc_minor INTEGER NOT NULL DEFAULT 0,
  sm_count INTEGER NOT NULL DEFAULT 0,
  memory_bytes INTEGER NOT NULL DEFAULT 0,
  driver_version INTEGER NOT NULL DEFAULT 0,
  first_seen INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE matrices (
  id INTEGER PRIMARY KEY,
  fingerprint TEXT UNIQUE NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  rows INTEGER NOT NULL DEFAULT 0,
  cols INTEGER NOT NULL DEFAULT 0,
  nnz INTEGER NOT NULL DEFAULT 0,
  features_json TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE trials (
  id INTEGER PRIMARY KEY,
  device_fp TEXT NOT NULL,
  matrix_fp TEXT NOT NULL,
  op TEXT NOT NULL,
  bucket TEXT NOT NULL DEFAULT '',
  params_json TEXT NOT NULL,
  status TEXT NOT NULL,
  time_us REAL NOT NULL DEFAULT 0,
  detail TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX trials_by_problem ON trials(device_fp, matrix_fp, op);
CREATE TABLE configs (
  device_fp TEXT NOT NULL,
  matrix_fp TEXT NOT NULL,
  op TEXT NOT NULL,
  bucket TEXT NOT NULL DEFAULT '',
  params_json TEXT NOT NULL,
  time_us REAL NOT NULL DEFAULT 0,
  speedup REAL NOT NULL DEFAULT 1,
  updated_at INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (device_fp, matrix_fp, op, bucket)
);
)sql",
    // v1 -> v2: the measured device profile (include/dbsparse/device_profile.hpp) and the outcomes
    // of plan-time trials (a plan that timed its close candidates on the real input).
    R"sql(
CREATE TABLE device_profiles (
  device_fp TEXT PRIMARY KEY,
  profile_json TEXT NOT NULL,
  measured_at INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE plan_choices (
  device_fp TEXT NOT NULL,
  matrix_fp TEXT NOT NULL,
  op TEXT NOT NULL,
  setting TEXT NOT NULL DEFAULT '',
  choice TEXT NOT NULL,
  detail_json TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (device_fp, matrix_fp, op, setting)
);
)sql",
};

static_assert(std::size(kSteps) == TuningDb::kSchemaVersion, "each schema version needs exactly one migration step");

}  // namespace

std::string quick_check(sqlite3* db) {
  sqlite3_stmt* st = nullptr;
  std::string result;
  if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, nullptr) != SQLITE_OK) {
    result = sqlite3_errmsg(db);
  } else {
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      result = p ? p : "";
    } else {
      result = sqlite3_errmsg(db);
    }
  }
  sqlite3_finalize(st);
  // Findings may span lines; callers put this in a one-line warning.
  if (result.starts_with("*** in database main ***")) result.erase(0, 24);
  for (char& ch : result)
    if (ch == '\n') ch = ' ';
  if (auto first = result.find_first_not_of(' '); first != std::string::npos) result.erase(0, first);
  return result;
}

int user_version(sqlite3* db) {
  sqlite::Stmt st(db, "PRAGMA user_version");
  return st.step() ? static_cast<int>(st.int64(0)) : 0;
}

void migrate(sqlite3* db) {
  for (int target = 1; target <= TuningDb::kSchemaVersion; ++target) {
    if (user_version(db) >= target) continue;
    sqlite::Transaction tx(db);
    // Another process may have migrated while we waited for the write lock.
    if (user_version(db) >= target) continue;
    const auto what = fmt::format("migrating to schema v{}", target);
    sqlite::exec(db, kSteps[target - 1], what);
    // PRAGMA takes no bound parameters; target is our own integer.
    sqlite::exec(db, fmt::format("PRAGMA user_version = {}", target), what);
    tx.commit();
  }
}

}  // namespace dbsparse::schema

#pragma once
// Private to tuning_db/: the schema and its migrations, and a thin RAII layer over sqlite3 so that
// every query binds its parameters and every failure becomes a DbError that names the file.
#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace dbsparse::sqlite {

// Throws DbError: "<file>: <what>: <sqlite message>".
[[noreturn]] void fail(sqlite3* db, const std::string& what);

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Parameters are numbered from 1, as in SQLite.
  Stmt& bind(int i, const std::string& v);
  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }

  bool step();  // true while there is a row
  void run();   // steps a statement that returns no rows

  // Columns are numbered from 0, as in SQLite.
  std::string text(int col) const;
  int64_t int64(int col) const;
  double real(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE takes the write lock up front, so concurrent writers queue on the busy timeout
// instead of failing when a read transaction tries to upgrade. Rolls back unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  sqlite3* db_;
  bool done_ = false;
};

// The file as an immutable read-only URI (file:...?mode=ro&immutable=1): no locks, no -shm, no
// WAL read, nothing written; null when it will not open.
sqlite3* open_immutable(const std::string& path);

// Runs one or more statements without parameters; `what` names the job in the error.
void exec(sqlite3* db, const std::string& sql, const std::string& what = "");

}  // namespace dbsparse::sqlite

namespace dbsparse::schema {

// "ok" for a sound database, else what is wrong (SQLite's error or quick_check's first finding).
// Reads only.
std::string quick_check(sqlite3* db);

int user_version(sqlite3* db);

// The SQLite application_id that marks a file as dbsparse's tuning DB: "dbSP" in ASCII. Written
// when the file is created (or adopted, below) and never changed.
inline constexpr int32_t kApplicationId = 0x64625350;

// What check_file found at a path, before SQLite has opened it.
enum class FileState {
  Absent,  // nothing there (a dangling symlink included): SQLite will create it as ours
  Empty,   // a regular file of 0 bytes: nothing to damage; taken as a new DB
  Ours,    // an SQLite file with kApplicationId
  Legacy,  // no application_id, but the tables and user_version (1 .. kSchemaVersion) of a DB
           // written by a dbsparse from before the marker: adopted (the marker is set on the
           // first writable open)
};

// Looks at the path without SQLite and without writing anything: no lock, no side file, never
// blocks. Throws DbError naming the path and what was expected when it is not a regular file (a
// directory, FIFO, device, socket, a symlink loop), cannot be read, is not an SQLite file, or is
// an SQLite file of another program (another application_id, or none and not our tables).
FileState check_file(const std::string& path);

// True when the open database holds, without any application_id, exactly what dbsparse wrote
// before the marker existed: user_version 1 .. kSchemaVersion and that version's tables.
bool looks_like_legacy(sqlite3* db);

// For a writable open, before anything else is written: sets kApplicationId on a new (empty)
// database or on a legacy one, in one transaction that re-checks under the write lock (another
// process may be creating the same file). Throws DbError, writing nothing, when the file turned
// out not to be ours after all.
void claim(sqlite3* db, const std::string& path);

// Applies the migration steps from the file's user_version up to TuningDb::kSchemaVersion, one
// transaction each. Safe against another process migrating the same file at the same time.
void migrate(sqlite3* db);

}  // namespace dbsparse::schema

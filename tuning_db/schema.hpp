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

// Runs one or more statements without parameters; `what` names the job in the error.
void exec(sqlite3* db, const std::string& sql, const std::string& what = "");

}  // namespace dbsparse::sqlite

namespace dbsparse::schema {

// "ok" for a sound database, else what is wrong (SQLite's error or quick_check's first finding).
// Reads only.
std::string quick_check(sqlite3* db);

int user_version(sqlite3* db);

// Applies the migration steps from the file's user_version up to TuningDb::kSchemaVersion, one
// transaction each. Safe against another process migrating the same file at the same time.
void migrate(sqlite3* db);

}  // namespace dbsparse::schema

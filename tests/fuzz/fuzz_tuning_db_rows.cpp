// libFuzzer: tuning-DB rows, as a DB that outlived versions or was edited by hand would hold them.
// A valid DB (this build's schema) gets the input's fields as its rows' text: a best config's
// params for the matrix looked up and for another one, two matrices' features, a trial's params and
// status. Then every read a plan or a command makes: lookup (tuned, then predicted from the nearest
// matrix's features), trials, counts, find_matrix. Only dbsparse::Error may come out of them.
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/features.hpp"
#include "dbsparse/op_config.hpp"
#include "dbsparse/spgemm.hpp"
#include "dbsparse/tuning_db.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path& dir() {
  static const fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("dbs-fuzz-db-" + std::to_string(getpid()));
    fs::create_directories(p);
    { auto db = dbsparse::TuningDb::open((p / "template.db").string()); }
    return p;
  }();
  return d;
}

void exec(sqlite3* db, const char* sql, const std::vector<std::string_view>& text) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) __builtin_trap();
  for (size_t i = 0; i < text.size(); ++i)
    sqlite3_bind_text(st, static_cast<int>(i + 1), text[i].data(), static_cast<int>(text[i].size()), SQLITE_TRANSIENT);
  (void)sqlite3_step(st);  // a constraint (NOT NULL, UNIQUE) may refuse a row: fine
  sqlite3_finalize(st);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string_view> f;  // fields split at '\x01'
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  for (size_t at = 0; f.size() < 6;) {
    const size_t end = in.find('\x01', at);
    f.push_back(in.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  while (f.size() < 6) f.push_back("{}");
  const fs::path path = dir() / "case.db";
  fs::copy_file(dir() / "template.db", path, fs::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) __builtin_trap();
  exec(db, "INSERT INTO matrices(fingerprint, name, rows, cols, nnz, features_json) VALUES('m1', 'a', 10, 10, 30, ?)",
       {f[0]});
  exec(db, "INSERT INTO matrices(fingerprint, name, rows, cols, nnz, features_json) VALUES('m2', 'b', 10, 10, 30, ?)",
       {f[1]});
  exec(db,
       "INSERT INTO configs(device_fp, matrix_fp, op, bucket, params_json, time_us, speedup) "
       "VALUES('d', 'm1', 'spgemm', '', ?, 1.0, 1.5)",
       {f[2]});
  exec(db,
       "INSERT INTO configs(device_fp, matrix_fp, op, bucket, params_json, time_us, speedup) "
       "VALUES('d', 'm2', 'spgemm', '', ?, 1.0, 1.5)",
       {f[3]});
  exec(
      db,
      "INSERT INTO trials(device_fp, matrix_fp, op, params_json, status, time_us) VALUES('d', 'm1', 'spgemm', ?, ?, 2)",
      {f[4], f[5]});
  sqlite3_close(db);
  try {
    auto t = dbsparse::TuningDb::open(path.string(), /*read_only=*/true);
    const dbsparse::OpConfigInfo op = dbsparse::config_info<dbsparse::SpgemmConfig>();
    auto features = [] { return dbsparse::MatrixFeatures{}; };
    for (const char* m : {"m1", "m2", "m3"}) {
      try {
        const dbsparse::Config c = t->lookup("d", m, op, "", features);
        (void)dbsparse::config_from_json<dbsparse::SpgemmConfig>(c.params);
      } catch (const dbsparse::Error&) {
      }
    }
    (void)t->trials("d", "m1", "spgemm");
    (void)t->counts();
    (void)t->find_matrix("m1");
  } catch (const dbsparse::Error&) {
  }
  return 0;
}

#include "dbsparse/tuning_db.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <thread>

#include "dbsparse/error.hpp"
#include "dbsparse/json_limits.hpp"
#include "tuning_db/internal.hpp"
#include "tuning_db/schema.hpp"

namespace dbsparse {
namespace {

using internal::handle;
using internal::parse_json;
using sqlite::Stmt;
using sqlite::Transaction;

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

struct Closer {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};

}  // namespace

nlohmann::json internal::parse_json(const std::string& text, const std::string& path, const char* column) {
  if (auto why = json_too_deep(text)) throw DbError(fmt::format("{}: malformed {}: expected {}", path, column, *why));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw DbError(fmt::format("{}: malformed {}: {}", path, column, e.what()));
  }
}

const char* to_string(ConfigSource s) {
  switch (s) {
    case ConfigSource::Tuned:
      return "tuned";
    case ConfigSource::Predicted:
      return "predicted";
    case ConfigSource::Default:
      return "default";
    case ConfigSource::Explicit:
      return "explicit";
  }
  return "?";
}

const char* to_string(TrialStatus s) {
  switch (s) {
    case TrialStatus::Ok:
      return "ok";
    case TrialStatus::CompileFailed:
      return "compile_failed";
    case TrialStatus::LaunchFailed:
      return "launch_failed";
    case TrialStatus::WrongResult:
      return "wrong_result";
    case TrialStatus::Skipped:
      return "skipped";
  }
  return "?";
}

TrialStatus trial_status_from_string(const std::string& s) {
  for (auto t : {TrialStatus::Ok, TrialStatus::CompileFailed, TrialStatus::LaunchFailed, TrialStatus::WrongResult,
                 TrialStatus::Skipped})
    if (s == to_string(t)) return t;
  throw DbError(fmt::format("unknown trial status '{}'", s));
}

// ---- opening ----------------------------------------------------------------------------------

std::string TuningDb::default_path() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (auto p = env("DBSPARSE_DB"); !p.empty()) return p;
  if (auto x = env("XDG_DATA_HOME"); !x.empty()) return x + "/dbsparse/tuning.db";
  if (auto h = env("HOME"); !h.empty()) return h + "/.local/share/dbsparse/tuning.db";
  return "dbsparse-tuning.db";  // no home at all (a bare container): the working directory
}

TuningDb::TuningDb(std::string path, void* handle) : path_(std::move(path)), db_(handle) {}

TuningDb::~TuningDb() { sqlite3_close_v2(handle(db_)); }

std::unique_ptr<TuningDb> TuningDb::open(const std::string& path, bool read_only) {
  // Before SQLite sees the path: anything that is not a regular file of ours (or nothing yet) is
  // refused here, so that it is never locked, blocked on, given side files or written.
  const schema::FileState state = schema::check_file(path);
  if (state == schema::FileState::Absent) {
    if (read_only) throw DbError(fmt::format("{}: does not exist", path));
    std::error_code ec;
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) throw DbError(fmt::format("{}: cannot create its directory: {}", path, ec.message()));
  }
  sqlite3* raw = nullptr;
  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<sqlite3, Closer> db(raw);
  if (rc != SQLITE_OK)
    throw DbError(fmt::format("{}: cannot open: {}", path, raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  sqlite3_busy_timeout(raw, 10000);

  // Everything up to here only reads, so a file that is not ours (or is newer) stays byte-identical.
  if (auto check = schema::quick_check(raw); check != "ok") {
    // A WAL database that we may only read, in a directory we may not write (a shared install's
    // DB): SQLite cannot make its -shm file and refuses even to read. Read it as immutable then (no
    // locks, no -shm): a read-only command must work on a read-only DB.
    sqlite3* ro = read_only ? sqlite::open_immutable(path) : nullptr;
    if (!ro) throw DbError(fmt::format("{}: not a usable database: {}", path, check));
    db.reset(ro);
    raw = ro;
    if (auto again = schema::quick_check(raw); again != "ok")
      throw DbError(fmt::format("{}: not a usable database: {}", path, again));
  }
  int version = schema::user_version(raw);
  // dbsparse writes 0 .. kSchemaVersion; a negative one was set by something else, and migrating
  // it failed with "table devices already exists".
  if (version < 0)
    throw DbError(
        fmt::format("{}: schema version {} is not one dbsparse writes (0 .. {}): another program changed "
                    "the file; move it aside and run dbtune",
                    path, version, kSchemaVersion));
  if (version > kSchemaVersion)
    throw DbError(fmt::format("{}: written by a newer dbsparse (schema v{}; this build reads up to v{})", path, version,
                              kSchemaVersion));

  if (!read_only) {
    // The marker first: nothing else is written to a file that is not (or not yet) marked ours.
    schema::claim(raw, path);
    // The switch to WAL needs the file to itself, and SQLite answers "database is locked" at once
    // rather than wait while another connection holds it (two dbtune runs starting on a new DB
    // at the same time: one failed). Retry for up to 10 s, as long as
    // the busy timeout; the last try reports what SQLite says.
    for (int attempt = 0; attempt < 500; ++attempt) {
      const int rc = sqlite3_exec(raw, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK || (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    sqlite::exec(raw, "PRAGMA journal_mode=WAL", "switching to WAL");
    // In WAL mode NORMAL survives a killed process; only a power cut may lose the last trials.
    sqlite::exec(raw, "PRAGMA synchronous=NORMAL");
    schema::migrate(raw);
  }
  return std::unique_ptr<TuningDb>(new TuningDb(path, db.release()));
}

std::unique_ptr<TuningDb> TuningDb::try_open(const std::string& path, bool read_only, std::string* warning) {
  if (warning) warning->clear();
  // Nothing there yet: nothing tuned, no warning. A path that cannot be looked at (a symlink loop)
  // goes on to open, which names the problem.
  std::error_code ec;
  if (read_only && !std::filesystem::exists(path, ec) && !ec) return nullptr;
  try {
    return open(path, read_only);
  } catch (const DbError& e) {
    if (warning) *warning = e.what();
    return nullptr;
  }
}

int TuningDb::schema_version() const { return schema::user_version(handle(db_)); }

// ---- writes -----------------------------------------------------------------------------------

void TuningDb::upsert_device(const DeviceRecord& d) {
  Transaction tx(handle(db_));
  Stmt(handle(db_),
       "INSERT INTO devices (fingerprint, name, cc_major, cc_minor, sm_count, memory_bytes,"
       " driver_version, first_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
       " ON CONFLICT (fingerprint) DO UPDATE SET name = excluded.name,"
       " cc_major = excluded.cc_major, cc_minor = excluded.cc_minor, sm_count = excluded.sm_count,"
       " memory_bytes = excluded.memory_bytes, driver_version = excluded.driver_version")
      .bind(1, d.fingerprint)
      .bind(2, d.name)
      .bind(3, d.cc_major)
      .bind(4, d.cc_minor)
      .bind(5, d.sm_count)
      .bind(6, d.memory_bytes)
      .bind(7, d.driver_version)
      .bind(8, unix_now())
      .run();
  tx.commit();
}

void TuningDb::upsert_matrix(const MatrixRecord& m) {
  Transaction tx(handle(db_));
  Stmt(handle(db_),
       "INSERT INTO matrices (fingerprint, name, rows, cols, nnz, features_json)"
       " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
       " ON CONFLICT (fingerprint) DO UPDATE SET name = excluded.name, rows = excluded.rows,"
       " cols = excluded.cols, nnz = excluded.nnz, features_json = excluded.features_json")
      .bind(1, m.fingerprint)
      .bind(2, m.name)
      .bind(3, m.features.rows)
      .bind(4, m.features.cols)
      .bind(5, m.features.nnz)
      .bind(6, m.features.to_json().dump())
      .run();
  tx.commit();
}

void TuningDb::add_trial(const Trial& t) {
  Transaction tx(handle(db_));
  Stmt(handle(db_),
       "INSERT INTO trials (device_fp, matrix_fp, op, bucket, params_json, status, time_us,"
       " detail, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
      .bind(1, t.device_fp)
      .bind(2, t.matrix_fp)
      .bind(3, t.op)
      .bind(4, t.bucket)
      .bind(5, t.params.dump())
      .bind(6, std::string(to_string(t.status)))
      .bind(7, t.time_us)
      .bind(8, t.detail)
      .bind(9, t.created_at != 0 ? t.created_at : unix_now())
      .run();
  tx.commit();
}

void TuningDb::set_best(const std::string& device_fp, const std::string& matrix_fp, const std::string& op,
                        const std::string& bucket, const nlohmann::json& params, double time_us, double speedup) {
  Transaction tx(handle(db_));
  Stmt(handle(db_),
       "INSERT INTO configs (device_fp, matrix_fp, op, bucket, params_json, time_us, speedup,"
       " updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
       " ON CONFLICT (device_fp, matrix_fp, op, bucket) DO UPDATE SET"
       " params_json = excluded.params_json, time_us = excluded.time_us,"
       " speedup = excluded.speedup, updated_at = excluded.updated_at")
      .bind(1, device_fp)
      .bind(2, matrix_fp)
      .bind(3, op)
      .bind(4, bucket)
      .bind(5, params.dump())
      .bind(6, time_us)
      .bind(7, speedup)
      .bind(8, unix_now())
      .run();
  tx.commit();
}

// ---- reads ------------------------------------------------------------------------------------

std::optional<MatrixRecord> TuningDb::find_matrix(const std::string& fingerprint) const {
  Stmt st(handle(db_), "SELECT name, features_json FROM matrices WHERE fingerprint = ?1");
  st.bind(1, fingerprint);
  if (!st.step()) return std::nullopt;
  return MatrixRecord{fingerprint, st.text(0),
                      MatrixFeatures::from_json(parse_json(st.text(1), path_, "features_json"))};
}

std::vector<Trial> TuningDb::trials(const std::string& device_fp, const std::string& matrix_fp,
                                    const std::string& op) const {
  Stmt st(handle(db_),
          "SELECT bucket, params_json, status, time_us, detail, created_at FROM trials"
          " WHERE device_fp = ?1 AND matrix_fp = ?2 AND op = ?3 ORDER BY id");
  st.bind(1, device_fp).bind(2, matrix_fp).bind(3, op);
  std::vector<Trial> out;
  while (st.step()) {
    Trial t;
    t.device_fp = device_fp;
    t.matrix_fp = matrix_fp;
    t.op = op;
    t.bucket = st.text(0);
    t.params = parse_json(st.text(1), path_, "params_json");
    t.status = trial_status_from_string(st.text(2));
    t.time_us = st.real(3);
    t.detail = st.text(4);
    t.created_at = st.int64(5);
    out.push_back(std::move(t));
  }
  return out;
}

std::optional<nlohmann::json> TuningDb::best(const std::string& device_fp, const std::string& matrix_fp,
                                             const std::string& op, const std::string& bucket) const {
  Stmt st(handle(db_),
          "SELECT params_json FROM configs"
          " WHERE device_fp = ?1 AND matrix_fp = ?2 AND op = ?3 AND bucket = ?4");
  st.bind(1, device_fp).bind(2, matrix_fp).bind(3, op).bind(4, bucket);
  if (!st.step()) return std::nullopt;
  return parse_json(st.text(0), path_, "params_json");
}

DbCounts TuningDb::counts() const {
  // One statement, so the four counts come from one snapshot.
  Stmt st(handle(db_),
          "SELECT (SELECT count(*) FROM devices), (SELECT count(*) FROM matrices),"
          " (SELECT count(*) FROM trials), (SELECT count(*) FROM configs)");
  st.step();
  return DbCounts{st.int64(0), st.int64(1), st.int64(2), st.int64(3)};
}

namespace {
// The stored keys over the defaults; keys the op does not have (any more) are left out and named.
void overlay(Config& c, const nlohmann::json& stored) {
  std::string dropped;
  for (auto it = stored.begin(); it != stored.end(); ++it) {
    if (c.params.contains(it.key()))
      c.params[it.key()] = it.value();
    else
      dropped += (dropped.empty() ? "" : ", ") + it.key();
  }
  if (!dropped.empty()) c.note += fmt::format(" (stored keys {} are not {} parameters: ignored)", dropped, c.op);
}
}  // namespace

Config TuningDb::lookup(const std::string& device_fp, const std::string& matrix_fp, const OpConfigInfo& op,
                        const std::string& bucket, const std::function<MatrixFeatures()>& features) const {
  Config c{op.op, op.defaults, ConfigSource::Default, ""};
  // A read-only handle on an older file cannot migrate it: what v1 has (the configs) is read,
  // what later versions added (profiles, plan choices) is missing until dbtune opens it.
  if (int v = schema_version(); v < 1) {
    c.note = fmt::format("{} has schema v{} (this build needs v1 or later); nothing tuned", path_, v);
    return c;
  }
  if (auto tuned = best(device_fp, matrix_fp, op.op, bucket); tuned && tuned->is_object()) {
    c.source = ConfigSource::Tuned;
    c.note = fmt::format("tuned for this device and matrix ({})", path_);
    overlay(c, *tuned);  // tuned keys win; keys added to the defaults later still get a value
    return c;
  }
  std::optional<MatrixFeatures> f;
  if (auto rec = find_matrix(matrix_fp))
    f = rec->features;
  else if (features)
    f = features();
  if (f) {
    if (auto p = predict(device_fp, op, bucket, *f, matrix_fp); p && p->too_far) {
      c.note = fmt::format("nothing tuned near this matrix: the nearest, {}, is {:.2f} away (> {}); defaults",
                           p->neighbour, p->distance, kPredictionRadius);
      return c;
    } else if (p) {
      c.source = ConfigSource::Predicted;
      c.note = fmt::format("predicted: best config of the nearest tuned matrix, {} (distance {:.2f})", p->neighbour,
                           p->distance);
      overlay(c, p->params);
      return c;
    }
  }
  c.note = fmt::format("nothing tuned for this device and matrix in {}", path_);
  return c;
}

// ---- the process-wide lookup ------------------------------------------------------------------

namespace {

// The default DB, opened read-only once per process and shared by every look-up.
struct SharedDb {
  std::mutex mu;
  bool opened = false;
  bool warned = false;
  std::string path;
  std::unique_ptr<TuningDb> db;
  std::string reason;  // why the DB is unusable; empty when it is usable or simply absent

  void warn(std::string why) {
    // DbError's text repeats "tuning db: <path>: "; the line below already says both.
    for (const std::string& prefix : {std::string("tuning db: "), path + ": "})
      if (why.starts_with(prefix)) why.erase(0, prefix.size());
    std::replace(why.begin(), why.end(), '\n', ' ');
    reason = why;
    if (!warned)
      std::fprintf(stderr, "dbsparse: warning: tuning db %s unusable (%s); using defaults\n", path.c_str(),
                   why.c_str());
    warned = true;
  }

  // Opens or reopens as needed; call with mu held.
  void refresh() {
    // A DB that did not exist at the first look-up may have been written since (by dbtune in
    // another process): look again, as long as nothing was wrong with it. A changed $DBSPARSE_DB
    // means another DB altogether.
    if (opened && TuningDb::default_path() != path) {
      db.reset();
      opened = warned = false;
      reason.clear();
    } else if (std::error_code ec; opened && !db && reason.empty() && std::filesystem::exists(path, ec)) {
      opened = false;
    }
    if (!opened) {
      opened = true;
      path = TuningDb::default_path();
      std::string warning;
      db = TuningDb::try_open(path, /*read_only=*/true, &warning);
      if (!warning.empty()) warn(warning);
    }
  }
};

SharedDb& shared_db() {
  static SharedDb s;
  return s;
}

// f(db) on the shared read-only DB, nullopt when there is none or f threw (damage found after a
// clean open: planning must still go on).
template <class F>
auto read_shared(F&& f) -> std::optional<decltype(f(std::declval<const TuningDb&>()))> {
  SharedDb& s = shared_db();
  std::lock_guard lock(s.mu);
  s.refresh();
  if (!s.db) return std::nullopt;
  try {
    return f(*s.db);
  } catch (const std::exception& e) {
    s.warn(e.what());
    return std::nullopt;
  }
}

}  // namespace

Config lookup_config(const std::string& device_fp, const std::string& matrix_fp, const OpConfigInfo& op,
                     const std::string& bucket, const std::function<MatrixFeatures()>& features) {
  if (auto c = read_shared([&](const TuningDb& db) { return db.lookup(device_fp, matrix_fp, op, bucket, features); }))
    return *c;
  SharedDb& s = shared_db();
  std::lock_guard lock(s.mu);
  Config c{op.op, op.defaults, ConfigSource::Default, ""};
  c.note = s.reason.empty() ? fmt::format("no tuning db at {}", s.path)
                            : fmt::format("tuning db {} unusable ({})", s.path, s.reason);
  return c;
}

std::optional<nlohmann::json> lookup_device_profile_json(const std::string& device_fp) {
  auto r = read_shared([&](const TuningDb& db) { return db.device_profile(device_fp); });
  return r ? *r : std::nullopt;
}

std::optional<PlanChoice> lookup_plan_choice(const std::string& device_fp, const std::string& matrix_fp,
                                             const std::string& op, const std::string& setting) {
  auto r = read_shared([&](const TuningDb& db) { return db.plan_choice(device_fp, matrix_fp, op, setting); });
  return r ? *r : std::nullopt;
}

bool record_plan_choice(const PlanChoice& c, std::string* why) {
  const std::string path = TuningDb::default_path();
  {
    // A DB this process found damaged is left alone: writing could only make it worse.
    SharedDb& s = shared_db();
    std::lock_guard lock(s.mu);
    s.refresh();
    if (!s.reason.empty()) {
      if (why) *why = fmt::format("tuning db {} unusable ({})", s.path, s.reason);
      return false;
    }
  }
  try {
    TuningDb::open(path)->set_plan_choice(c);
    return true;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

}  // namespace dbsparse

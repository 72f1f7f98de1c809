#pragma once
// The SQLite tuning database. Thresholds are data (docs/DESIGN.md §6): a lookup returns the tuned config
// for (device, matrix, op, bucket), else a prediction, else the defaults, and says which.
#include <cstdint>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/features.hpp"
#include "dbsparse/op_config.hpp"

namespace dbsparse {

// Explicit: the caller passed the config (the tuner's candidates, ablations); never from the DB.
enum class ConfigSource { Tuned, Predicted, Default, Explicit };
const char* to_string(ConfigSource s);

struct Config {
  std::string op;
  nlohmann::json params = nlohmann::json::object();
  ConfigSource source = ConfigSource::Default;
  std::string note;  // why this source: e.g. the warning when the DB could not be read
};

struct DeviceRecord {
  std::string fingerprint;  // stable text: name|cc|sms|mem|driver
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int driver_version = 0;
};

struct MatrixRecord {
  std::string fingerprint;
  std::string name;
  MatrixFeatures features;
};

enum class TrialStatus { Ok, CompileFailed, LaunchFailed, WrongResult, Skipped };
const char* to_string(TrialStatus s);
TrialStatus trial_status_from_string(const std::string& s);

struct Trial {
  std::string device_fp, matrix_fp, op, bucket;
  nlohmann::json params;
  TrialStatus status = TrialStatus::Ok;
  double time_us = 0;      // median; 0 when not Ok
  std::string detail;      // error text for failures
  int64_t created_at = 0;  // unix seconds; filled by add_trial when 0
};

// A config predicted for an unseen matrix: the best config of the nearest tuned matrix on this
// device (features: shape, row-length moments, bandwidth, 16x16 block-density histogram).
// Farther than kPredictionRadius (in feature units: decades of size, octaves of row length) the
// nearest matrix says little: the defaults are used instead (too_far). Set from dbtune --evaluate:
// docs/decisions/tuning-prediction-radius.md.
inline constexpr double kPredictionRadius = 2.0;
struct Prediction {
  nlohmann::json params;  // the neighbour's best config; the op's defaults when too_far
  std::string neighbour, neighbour_fp;
  double distance = 0;
  bool too_far = false;
};

// The feature vector prediction compares (documented where it is built); block_features adds the
// 16x16 block terms (OpConfigInfo::block_features).
std::vector<double> prediction_features(const MatrixFeatures& f, bool block_features);

struct PlanChoice {
  std::string device_fp, matrix_fp, op, setting;  // setting: what else decided it (e.g. "n32.f32")
  std::string choice;
  nlohmann::json detail = nlohmann::json::object();
  int64_t created_at = 0;  // unix seconds; filled by set_plan_choice when 0
};

struct DbCounts {
  int64_t devices = 0, matrices = 0, trials = 0, configs = 0;
};

class TuningDb {
 public:
  // Default path: $DBSPARSE_DB, else $XDG_DATA_HOME/dbsparse/tuning.db, else ~/.local/share/dbsparse/tuning.db.
  static std::string default_path();

  // Opens (creating and migrating when writable). WAL mode, busy timeout 10 s.
  // Only a regular file that is dbsparse's own (SQLite application_id 0x64625350, set at creation;
  // a file from before the marker is recognised by its tables and user_version, and marked on its
  // first writable open), an empty file, or a path that does not exist yet (writable: created) is
  // opened. Throws DbError naming the path when it is anything else (a directory, FIFO, device,
  // symlink loop, another program's SQLite file, not a database), is corrupt, or has a schema this
  // build does not write; the file is never modified, and no side file is made, in that case.
  static std::unique_ptr<TuningDb> open(const std::string& path, bool read_only = false);
  // Like open, but returns nullptr and fills *warning instead of throwing (a missing file in
  // read-only mode is not a warning: there is simply nothing tuned yet).
  static std::unique_ptr<TuningDb> try_open(const std::string& path, bool read_only, std::string* warning);
  ~TuningDb();
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;

  static constexpr int kSchemaVersion = 2;
  int schema_version() const;
  const std::string& path() const { return path_; }

  void upsert_device(const DeviceRecord& d);
  void upsert_matrix(const MatrixRecord& m);
  std::optional<MatrixRecord> find_matrix(const std::string& fingerprint) const;
  void add_trial(const Trial& t);
  std::vector<Trial> trials(const std::string& device_fp, const std::string& matrix_fp, const std::string& op) const;
  // Stores the best config for (device, matrix, op, bucket) with its speed-up over the defaults.
  void set_best(const std::string& device_fp, const std::string& matrix_fp, const std::string& op,
                const std::string& bucket, const nlohmann::json& params, double time_us, double speedup);
  std::optional<nlohmann::json> best(const std::string& device_fp, const std::string& matrix_fp, const std::string& op,
                                     const std::string& bucket) const;
  DbCounts counts() const;

  // The device's measured profile (device_profile.hpp), replacing an earlier one.
  void set_device_profile(const std::string& device_fp, const nlohmann::json& profile, int64_t measured_at);
  // nullopt where none was measured (or the file predates profiles).
  std::optional<nlohmann::json> device_profile(const std::string& device_fp) const;
  // A plan-time trial's outcome for (device, matrix, op, setting): the candidate that won and the
  // times ({"us": {candidate: time}}), so that the next plan of the matrix takes it without timing.
  void set_plan_choice(const PlanChoice& c);
  std::optional<PlanChoice> plan_choice(const std::string& device_fp, const std::string& matrix_fp,
                                        const std::string& op, const std::string& setting) const;

  // Nearest tuned matrix on this device for op and bucket, leaving out `exclude_fp`
  // (leave-one-out evaluation); nullopt when this device has tuned nothing else for op.
  std::optional<Prediction> predict(const std::string& device_fp, const OpConfigInfo& op, const std::string& bucket,
                                    const MatrixFeatures& features, const std::string& exclude_fp = "") const;
  // Matrices with a best config for (device, op, bucket).
  std::vector<std::string> tuned_matrices(const std::string& device_fp, const std::string& op,
                                          const std::string& bucket = "") const;

  // Tuned config, else predicted from this device's tuned matrices (features from the DB's matrix
  // record, else from `features`, computed only when needed), else defaults. The params returned
  // are complete: the op's defaults with the stored keys over them (keys the op no longer has are
  // dropped and named in the note).
  Config lookup(const std::string& device_fp, const std::string& matrix_fp, const OpConfigInfo& op,
                const std::string& bucket = "", const std::function<MatrixFeatures()>& features = {}) const;

 private:
  TuningDb(std::string path, void* handle);
  std::string path_;
  void* db_;  // sqlite3*
};

// The lookup every plan uses: opens the default DB read-only; a missing, unreadable or corrupt DB
// gives the defaults, with the reason in Config::note (and one warning line on stderr per process).
Config lookup_config(const std::string& device_fp, const std::string& matrix_fp, const OpConfigInfo& op,
                     const std::string& bucket = "", const std::function<MatrixFeatures()>& features = {});

// The default DB's measured profile of the device, read-only (nullopt when none, or the DB is
// missing or unusable: the warning is lookup_config's).
std::optional<nlohmann::json> lookup_device_profile_json(const std::string& device_fp);
// The default DB's recorded plan choice, read-only; nullopt when none.
std::optional<PlanChoice> lookup_plan_choice(const std::string& device_fp, const std::string& matrix_fp,
                                             const std::string& op, const std::string& setting);
// Records a plan choice in the default DB, opening it writable for the one write. Never throws:
// a DB that cannot be written ($DBSPARSE_DB read-only, damaged) costs the next plan its trial
// again, nothing else; returns false then, with the reason in *why.
bool record_plan_choice(const PlanChoice& c, std::string* why = nullptr);

}  // namespace dbsparse

// The tuning DB's device profiles and plan choices (schema v2; include/dbsparse/tuning_db.hpp).
#include <ctime>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/tuning_db.hpp"
#include "tuning_db/internal.hpp"
#include "tuning_db/schema.hpp"

namespace dbsparse {
namespace {

using internal::handle;
using internal::parse_json;
using sqlite::Stmt;
using sqlite::Transaction;

constexpr int kProfilesSince = 2;

}  // namespace

void TuningDb::set_device_profile(const std::string& device_fp, const nlohmann::json& profile, int64_t measured_at) {
  Transaction tx(handle(db_));
  Stmt(handle(db_),
       "INSERT INTO device_profiles (device_fp, profile_json, measured_at) VALUES (?1, ?2, ?3)"
       " ON CONFLICT (device_fp) DO UPDATE SET profile_json = excluded.profile_json,"
       " measured_at = excluded.measured_at")
      .bind(1, device_fp)
      .bind(2, profile.dump())
      .bind(3, measured_at)
      .run();
  tx.commit();
}

std::optional<nlohmann::json> TuningDb::device_profile(const std::string& device_fp) const {
  if (schema_version() < kProfilesSince) return std::nullopt;
  Stmt st(handle(db_), "SELECT profile_json FROM device_profiles WHERE device_fp = ?1");
  st.bind(1, device_fp);
  if (!st.step()) return std::nullopt;
  return parse_json(st.text(0), path_, "profile_json");
}

void TuningDb::set_plan_choice(const PlanChoice& c) {
  Transaction tx(handle(db_));
  Stmt(handle(db_),
       "INSERT INTO plan_choices (device_fp, matrix_fp, op, setting, choice, detail_json, created_at)"
       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (device_fp, matrix_fp, op, setting) DO UPDATE SET"
       " choice = excluded.choice, detail_json = excluded.detail_json, created_at = excluded.created_at")
      .bind(1, c.device_fp)
      .bind(2, c.matrix_fp)
      .bind(3, c.op)
      .bind(4, c.setting)
      .bind(5, c.choice)
      .bind(6, c.detail.dump())
      .bind(7, c.created_at ? c.created_at : static_cast<int64_t>(std::time(nullptr)))
      .run();
  tx.commit();
}

std::optional<PlanChoice> TuningDb::plan_choice(const std::string& device_fp, const std::string& matrix_fp,
                                                const std::string& op, const std::string& setting) const {
  if (schema_version() < kProfilesSince) return std::nullopt;
  Stmt st(handle(db_),
          "SELECT choice, detail_json, created_at FROM plan_choices"
          " WHERE device_fp = ?1 AND matrix_fp = ?2 AND op = ?3 AND setting = ?4");
  st.bind(1, device_fp).bind(2, matrix_fp).bind(3, op).bind(4, setting);
  if (!st.step()) return std::nullopt;
  PlanChoice c{device_fp,  matrix_fp, op, setting, st.text(0), parse_json(st.text(1), path_, "detail_json"),
               st.int64(2)};
  return c;
}

}  // namespace dbsparse

// Config parameters: each op's defaults (one place for them), the paper's published defaults, and
// typed access that turns a value of the wrong kind into a UsageError naming its key.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "dbsparse/error.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

nlohmann::json default_params(const std::string& op) {
  if (op == "spmspv") return {{"th0", 32}, {"th1", 128}, {"th2", 2.0}, {"th3", 0.4}, {"th3_scale", "nnz_per_block"},
                              {"pull_coo", "lane"}};
  // Reasons for each SpMV cutoff: runtime/spmv_strategy.hpp.
  if (op == "spmv")
    return {{"strategy", "classified"}, {"block_size", 256},  {"lane_entries_f32", 8}, {"lane_entries_f64", 4},
            {"v1_lanes", 2},            {"v2_lanes", 4},      {"v3_lanes", 8},         {"v4_lanes", 32},
            {"block_max_len", 4096},    {"longrow_chunk", 2048}, {"fold_share", 0.02},  {"fuse_bins", 1}};
  return nlohmann::json::object();
}

static const nlohmann::json& config_value(const nlohmann::json& params, const nlohmann::json& defaults,
                                          const std::string& op, const std::string& key) {
  if (params.is_object() && params.contains(key)) return params.at(key);
  if (!defaults.contains(key)) throw UsageError(fmt::format("{} config: no value and no default for '{}'", op, key));
  return defaults.at(key);
}

double config_number(const nlohmann::json& params, const std::string& op, const std::string& key) {
  const nlohmann::json d = default_params(op);
  const auto& v = config_value(params, d, op, key);
  if (!v.is_number()) throw UsageError(fmt::format("{} config: '{}' must be a number, got {}", op, key, v.dump()));
  return v.get<double>();
}

std::string config_string(const nlohmann::json& params, const std::string& op, const std::string& key) {
  const nlohmann::json d = default_params(op);
  const auto& v = config_value(params, d, op, key);
  if (!v.is_string()) throw UsageError(fmt::format("{} config: '{}' must be a string, got {}", op, key, v.dump()));
  return v.get<std::string>();
}

std::string config_choice(const nlohmann::json& params, const std::string& op, const std::string& key,
                          const std::vector<std::string>& allowed) {
  std::string v = config_string(params, op, key);
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    throw UsageError(fmt::format("{} config: {} '{}' (expected {})", op, key, v, fmt::join(allowed, " or ")));
  return v;
}

nlohmann::json paper_params(const std::string& op) {
  // DB-SpMSpV (ICPP'26) section 3.2-3.3: th0 = 32, th1 = 128, th2 = 2.0 (after CB-SpMV), and
  // push while xb_sparsity < th3 = 0.01, compared directly.
  if (op == "spmspv") return {{"th0", 32}, {"th1", 128}, {"th2", 2.0}, {"th3", 0.01}, {"th3_scale", "none"}};
  return nlohmann::json::object();
}

}  // namespace dbsparse

// libFuzzer: op configs as JSON (a tuning-DB row's params, a --config argument). Every input is a
// config of each op or a UsageError; a config read back from its own JSON is the same config.
// Only dbsparse::Error may escape config_from_json: anything else (nlohmann's type_error on a
// strange value, an out_of_range) is a finding.
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dbsparse/bfs.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/spgemm.hpp"
#include "dbsparse/spmm.hpp"
#include "dbsparse/spmspv.hpp"
#include "dbsparse/spmv.hpp"

// SpmspvConfig::check lives in runtime/spmspv/spmspv_plan.cpp with the plan (CUDA driver calls),
// which this harness does not build; it has no rule between fields (that file says why).
void dbsparse::SpmspvConfig::check() const {}

namespace {

template <class Cfg>
void one(const nlohmann::json& j) {
  try {
    const Cfg c = dbsparse::config_from_json<Cfg>(j);
    const nlohmann::json back = dbsparse::config_to_json(c);
    if (dbsparse::config_to_json(dbsparse::config_from_json<Cfg>(back)) != back) __builtin_trap();
  } catch (const dbsparse::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  one<dbsparse::SpmvConfig>(j);
  one<dbsparse::SpmspvConfig>(j);
  one<dbsparse::SpmmConfig>(j);
  one<dbsparse::SpgemmConfig>(j);
  one<dbsparse::BfsConfig>(j);
  return 0;
}

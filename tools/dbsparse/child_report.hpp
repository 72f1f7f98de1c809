#pragma once
// What a child process of the CLI (`first-call --child`) reported: a JSON object on its last line,
// after whatever it printed before (warnings). A report holds nested objects, so the line, not the
// last '{', is what is parsed.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dbsparse/json_limits.hpp"

namespace dbsparse::cli {

inline std::optional<nlohmann::json> last_line_json(const std::string& out) {
  const size_t end = out.find_last_not_of("\r\n");
  if (end == std::string::npos) return std::nullopt;
  const size_t nl = out.rfind('\n', end);
  const size_t first = nl == std::string::npos ? 0 : nl + 1;
  const std::string line = out.substr(first, end + 1 - first);
  if (line[0] != '{' || json_too_deep(line)) return std::nullopt;
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

}  // namespace dbsparse::cli

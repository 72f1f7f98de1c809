#include "dbsparse/json_limits.hpp"

#include <algorithm>

namespace dbsparse {

int json_nesting_depth(std::string_view text, int stop_at) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest >= stop_at) return stop_at;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::optional<std::string> json_too_deep(std::string_view text) {
  if (json_nesting_depth(text) <= kJsonMaxDepth) return std::nullopt;
  return "JSON nested at most " + std::to_string(kJsonMaxDepth) + " levels deep (arrays and objects)";
}

namespace {
std::string scalar_brief(const nlohmann::json& v, size_t max) {
  std::string s = v.dump();  // a scalar: no recursion
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}
}  // namespace

std::string json_brief(const nlohmann::json& v, size_t max) {
  if (!v.is_structured()) return scalar_brief(v, max);
  std::string out =
      v.is_array() ? "an array of " + std::to_string(v.size()) : "an object of " + std::to_string(v.size()) + " keys";
  std::string items;
  size_t shown = 0;
  for (auto it = v.begin(); it != v.end() && shown < 4; ++it, ++shown) {
    std::string item = it->is_structured() ? (it->is_array() ? "[...]" : "{...}") : scalar_brief(*it, max / 4 + 4);
    if (v.is_object()) item = "\"" + it.key().substr(0, max / 4) + "\": " + item;
    items += (shown ? ", " : "") + item;
  }
  if (!items.empty())
    out += v.is_array() ? " [" + items + (v.size() > shown ? ", ...]" : "]")
                        : " {" + items + (v.size() > shown ? ", ...}" : "}");
  return out;
}

}  // namespace dbsparse

#pragma once
// Helpers shared by the key parsers: keys are dot-separated words.
#include <string_view>
#include <vector>

namespace dbsparse::codegen {

inline std::vector<std::string_view> split_key(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace dbsparse::codegen

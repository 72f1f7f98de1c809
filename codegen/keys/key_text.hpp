#pragma once
// Helpers shared by the key parsers: keys are dot-separated words.
#include <charconv>
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

// "<prefix><int>" -> int, or -1 when the text is not of that form.
inline int number_after(std::string_view word, char prefix) {
  if (word.size() < 2 || word[0] != prefix) return -1;
  int v = -1;
  const auto [ptr, ec] = std::from_chars(word.data() + 1, word.data() + word.size(), v);
  if (ec != std::errc() || ptr != word.data() + word.size() || v < 0) return -1;
  return v;
}

}  // namespace dbsparse::codegen

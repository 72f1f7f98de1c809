// Vertex label files (include/dbsparse/io.hpp): one integer per line, so that a clustering from
// one tool (or `dbsparse mcl --labels-out`) feeds a contraction without a format of its own.
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/io.hpp"
#include "support/atomic_file.hpp"

namespace dbsparse {

std::vector<int32_t> read_labels(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, 0, "a readable file");
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "a readable file");
  std::vector<int32_t> labels;
  std::string line;
  long number = 0;
  while (std::getline(in, line)) {
    ++number;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t last = line.find_last_not_of(" \t\r");
    const char* b = line.data() + first;
    const char* e = line.data() + last + 1;
    int64_t v = -1;
    // from_chars takes no '+' and, for a signed type, reads '-': a sign is caught by the range check.
    const auto [ptr, err] = std::from_chars(b, e, v);
    if (err != std::errc() || ptr != e || v < 0 || v >= std::numeric_limits<int32_t>::max())
      throw InputError(path, number,
                       fmt::format("one label per line, an integer in [0, 2^31-1), got '{}'", std::string(b, e)));
    labels.push_back(static_cast<int32_t>(v));
  }
  if (in.bad()) throw InputError(path, number, "a readable file");
  return labels;
}

void write_labels(const std::string& path, std::span<const int32_t> labels) {
  std::string out;
  out.reserve(labels.size() * 4);
  for (int32_t l : labels) fmt::format_to(std::back_inserter(out), "{}\n", l);
  support::write_file_atomic(path, out);
}

}  // namespace dbsparse

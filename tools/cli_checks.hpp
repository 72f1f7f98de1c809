#pragma once
// Option checks for floating-point values. CLI11's Range and NonNegativeNumber compare, and NaN
// fails every comparison, so `--density nan` and `dbtune --budget nan` went through; these also refuse NaN, inf and trailing junk.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace dbsparse::cli {

inline CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        double v = 0;
        size_t used = 0;
        try {
          v = std::stod(s, &used);
        } catch (const std::exception&) {
          return fmt::format("'{}' is not a number", s);
        }
        if (used != s.size()) return fmt::format("'{}' is not a number", s);
        if (!std::isfinite(v)) return fmt::format("'{}' is not a finite number", s);
        if (v < lo || v > hi) return fmt::format("{} is not in {} .. {}", s, lo, hi);
        return "";
      },
      std::isinf(hi) ? fmt::format("FINITE >= {}", lo) : fmt::format("FINITE in [{} - {}]", lo, hi), "FINITE_RANGE");
}

inline CLI::Validator finite_non_negative() { return finite_range(0.0, std::numeric_limits<double>::infinity()); }

// A tool's exit code once its output is flushed: output that never reached stdout (a full disk,
// /dev/full, a closed pipe) is a failure, not exit 0. `tool` prefixes the message.
inline int exit_code_after_stdout(const char* tool, int rc) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return rc;
  std::fprintf(stderr, "%s: error: could not write the output to stdout (%s)\n", tool,
               errno ? std::strerror(errno) : "a write failed");
  return rc != 0 ? rc : 1;
}

// UsageError-worthy text when `out` names one of `inputs` (the same file by any path, a link
// included): an output must never overwrite what it is made from. Empty when it names none.
inline std::string output_is_an_input(const std::string& option, const std::string& out,
                                      const std::vector<std::string>& inputs) {
  for (const auto& in : inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(out, in, ec))
      return fmt::format("{} {}: the output names the input {}; choose another file", option, out, in);
  }
  return {};
}

}  // namespace dbsparse::cli

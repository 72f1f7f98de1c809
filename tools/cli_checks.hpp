#pragma once
// Option checks for floating-point values. CLI11's Range and NonNegativeNumber compare, and NaN
// fails every comparison, so `--density nan` and `dbtune --budget nan` went through (hostile
// sweep, 2026-12-04); these also refuse NaN, inf and trailing junk.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>

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

}  // namespace dbsparse::cli

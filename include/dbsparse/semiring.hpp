#pragma once
// The semiring an op computes over, as a parameter of keys, plans and the CPU reference (docs/DESIGN.md
// §"The DB format": BFS runs the same traversal with (OR, AND)). Plus-times is the numeric one;
// or-and is reachability, the semiring of plan_bfs (structure only: no value is read).
#include <string>
#include <string_view>

#include "dbsparse/error.hpp"

namespace dbsparse {

enum class Semiring { PlusTimes, OrAnd };

inline const char* to_string(Semiring s) {
  switch (s) {
    case Semiring::PlusTimes:
      return "plus_times";
    case Semiring::OrAnd:
      return "or_and";
  }
  return "?";
}

// The text form of keys and configs; UsageError for any other.
inline Semiring semiring_from_string(std::string_view s) {
  if (s == "plus_times") return Semiring::PlusTimes;
  if (s == "or_and") return Semiring::OrAnd;
  throw UsageError("unknown semiring '" + std::string(s) + "' (known: plus_times, or_and)");
}

}  // namespace dbsparse

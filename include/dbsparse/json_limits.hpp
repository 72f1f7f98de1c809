#pragma once
// Limits on JSON read from files, the tuning DB, the kernel cache and the command line: nesting
// depth checked by a flat scan before any parse (a parser or a dump that recursed over 100,000
// nested arrays overflowed the stack), and a bounded, non-recursive text of a value for messages.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dbsparse {

inline constexpr int kJsonMaxDepth = 64;

// The deepest nesting of arrays and objects in `text` (strings skipped, escapes honoured), without
// recursion; stops counting past `stop_at` and returns it.
int json_nesting_depth(std::string_view text, int stop_at = kJsonMaxDepth + 1);

// Null when `text` nests at most kJsonMaxDepth deep, else the reason, e.g. "nests arrays or objects
// deeper than 64 levels": for the caller's own error type (InputError, UsageError, DbError).
std::optional<std::string> json_too_deep(std::string_view text);

// A value for an error message: scalars as JSON (strings cut to `max` characters), arrays and
// objects as "an array of N" / "an object of N keys" with their first scalar items: never a walk
// of the whole value.
std::string json_brief(const nlohmann::json& v, size_t max = 60);

}  // namespace dbsparse

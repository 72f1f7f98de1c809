// Strict reading of typed op configs (include/dbsparse/op_config.hpp).
#include "dbsparse/op_config.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dbsparse/json_limits.hpp"

namespace dbsparse::config_detail {

void fail(const std::string& op, const std::string& key, const std::string& what) {
  throw UsageError(key.empty() ? fmt::format("{} config: {}", op, what)
                               : fmt::format("{} config: '{}' {}", op, key, what));
}

Reader::Reader(std::string op, const nlohmann::json& j) : op_(std::move(op)), j_(j) {}

const nlohmann::json* Reader::find(const char* key) {
  seen_.emplace_back(key);
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

namespace {
template <class I>
void read_integer(const std::string& op, const char* key, const nlohmann::json* v, I& out, int64_t lo, int64_t hi) {
  if (!v) return;
  // 4.0 from a JSON writer that prints every number as a double is still the integer 4.
  if (!v->is_number() || (v->is_number_float() && std::floor(v->get<double>()) != v->get<double>()))
    fail(op, key, fmt::format("must be an integer, got {}", json_brief(*v)));
  const double d = v->get<double>();
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
    fail(op, key, fmt::format("must be in [{}, {}], got {}", lo, hi, json_brief(*v)));
  out = static_cast<I>(v->get<int64_t>());
}
}  // namespace

void Reader::integer(const char* key, int& v, int64_t lo, int64_t hi, const char*) {
  read_integer(op_, key, find(key), v, lo, hi);
}
void Reader::integer(const char* key, int64_t& v, int64_t lo, int64_t hi, const char*) {
  read_integer(op_, key, find(key), v, lo, hi);
}

void Reader::number(const char* key, double& v, double lo, double hi, const char*) {
  const nlohmann::json* j = find(key);
  if (!j) return;
  if (!j->is_number()) fail(op_, key, fmt::format("must be a number, got {}", json_brief(*j)));
  const double d = j->get<double>();
  if (!(d >= lo && d <= hi)) fail(op_, key, fmt::format("must be in [{}, {}], got {}", lo, hi, json_brief(*j)));
  v = d;
}

void Reader::choice(const char* key, std::string& v, std::initializer_list<const char*> allowed, const char*) {
  const nlohmann::json* j = find(key);
  if (!j) return;
  if (!j->is_string()) fail(op_, key, fmt::format("must be a string, got {}", json_brief(*j)));
  const auto s = j->get<std::string>();
  if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return s == a; }))
    fail(op_, key, fmt::format("'{}' is not one of {}", s, fmt::join(allowed, ", ")));
  v = s;
}

void Reader::finish() const {
  for (auto it = j_.begin(); it != j_.end(); ++it)
    if (std::find(seen_.begin(), seen_.end(), it.key()) == seen_.end())
      fail(op_, it.key(), fmt::format("is not a {} parameter (known: {})", op_, fmt::join(seen_, ", ")));
}

}  // namespace dbsparse::config_detail

#pragma once
// Typed op configs (docs/DESIGN.md §11). Each op's config is a struct that lists its fields once, in a
// `visit` member; reading JSON, writing JSON and the search space's defaults all walk that list,
// so a quantity has one name from the tuning DB to the kernel and one default.
//
//   struct FooConfig {
//     int th0 = 32;
//     template <class V> void visit(V& v) { v.integer("th0", th0, 1, 256, "why it exists"); }
//   };
//
// Reading is strict: a key of the wrong kind, a value out of range, a choice not listed or a key
// the op does not have is a UsageError naming the op and the key.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/error.hpp"

namespace dbsparse {

// What the tuning DB needs to know of an op, without knowing the op: its name, the complete
// default config and which features predict its configs (the 16x16 block histogram matters to
// block formats, not to CSR SpMV: tuning_db/prediction.cpp says why).
struct OpConfigInfo {
  std::string op;
  nlohmann::json defaults;
  bool block_features = true;
};

namespace config_detail {

[[noreturn]] void fail(const std::string& op, const std::string& key, const std::string& what);

// Reads the keys present in `j` over the fields' current values (the defaults).
class Reader {
 public:
  Reader(std::string op, const nlohmann::json& j);
  void integer(const char* key, int& v, int64_t lo, int64_t hi, const char* doc);
  void integer(const char* key, int64_t& v, int64_t lo, int64_t hi, const char* doc);
  void number(const char* key, double& v, double lo, double hi, const char* doc);
  void choice(const char* key, std::string& v, std::initializer_list<const char*> allowed, const char* doc);
  // After visiting: every key of `j` must have been a field.
  void finish() const;

 private:
  const nlohmann::json* find(const char* key);
  std::string op_;
  nlohmann::json j_;  // a copy: callers pass temporaries
  std::vector<std::string> seen_;
};

class Writer {
 public:
  nlohmann::json j = nlohmann::json::object();
  void integer(const char* key, const int& v, int64_t, int64_t, const char*) { j[key] = v; }
  void integer(const char* key, const int64_t& v, int64_t, int64_t, const char*) { j[key] = v; }
  void number(const char* key, const double& v, double, double, const char*) { j[key] = v; }
  void choice(const char* key, const std::string& v, std::initializer_list<const char*>, const char*) { j[key] = v; }
};

}  // namespace config_detail

// JSON (a tuning-DB row, a --config argument) over Cfg's defaults, then Cfg::check() for the rules
// between fields. Throws UsageError naming the key.
template <class Cfg>
Cfg config_from_json(const nlohmann::json& j) {
  if (!j.is_object() && !j.is_null())
    config_detail::fail(Cfg::kOp, "", "a config must be a JSON object, got " + j.dump());
  Cfg c;
  config_detail::Reader r(Cfg::kOp, j.is_null() ? nlohmann::json::object() : j);
  c.visit(r);
  r.finish();
  c.check();
  return c;
}

// Every field, so a stored config stays complete when defaults change later.
template <class Cfg>
nlohmann::json config_to_json(Cfg c) {  // by value: visit takes its fields by reference
  config_detail::Writer w;
  c.visit(w);
  return w.j;
}

template <class Cfg>
OpConfigInfo config_info() {
  return OpConfigInfo{Cfg::kOp, config_to_json(Cfg{}), Cfg::kBlockFeatures};
}

}  // namespace dbsparse

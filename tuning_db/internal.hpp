#pragma once
// Helpers shared by the tuning DB's source files (tuning_db.cpp, prediction.cpp).
#include <string>

#include <nlohmann/json.hpp>

struct sqlite3;

namespace dbsparse::internal {

inline sqlite3* handle(void* p) { return static_cast<sqlite3*>(p); }

// A JSON column of the DB; a malformed one is a DbError naming the file and the column.
nlohmann::json parse_json(const std::string& text, const std::string& path, const char* column);

}  // namespace dbsparse::internal

// JSON limits: the nesting depth found by a flat scan (strings and escapes skipped), and the brief
// text of a value that error messages print instead of a full dump.
#include <doctest/doctest.h>

#include <string>

#include "dbsparse/json_limits.hpp"

using namespace dbsparse;

TEST_CASE("JsonDepthScanSkipsStringsAndStopsEarly") {
  CHECK(json_nesting_depth("{}") == 1);
  CHECK(json_nesting_depth("{\"a\":[1,[2,{\"b\":3}]]}") == 4);
  CHECK(json_nesting_depth("\"[[[[\"") == 0);            // brackets inside a string
  CHECK(json_nesting_depth("[\"\\\"[[[\", [1]]") == 2);  // an escaped quote does not end the string
  CHECK(json_nesting_depth(std::string(100000, '['), 65) == 65);
  CHECK(!json_too_deep(std::string(64, '[') + std::string(64, ']')));
  const auto deep = json_too_deep(std::string(65, '[') + std::string(65, ']'));
  REQUIRE(deep);
  CHECK(deep->find("64 levels") != std::string::npos);
}

TEST_CASE("JsonBriefNamesTheShapeWithoutWalkingIt") {
  CHECK(json_brief(nlohmann::json(3)) == "3");
  CHECK(json_brief(nlohmann::json("abc")) == "\"abc\"");
  CHECK(json_brief(nlohmann::json(std::string(200, 'x')), 10).size() < 20);
  CHECK(json_brief(nlohmann::json::array({1, 2})) == "an array of 2 [1, 2]");
  CHECK(json_brief(nlohmann::json::array({1, 2, 3, 4, 5})) == "an array of 5 [1, 2, 3, 4, ...]");
  CHECK(json_brief(nlohmann::json::parse("[[1],[2]]")) == "an array of 2 [[...], [...]]");
  CHECK(json_brief(nlohmann::json::parse("{\"k\":1}")) == "an object of 1 keys {\"k\": 1}");
}

// The CLI's reading of a child process's report (tools/dbsparse/child_report.hpp).
#include <doctest/doctest.h>

#include <string>

#include "tools/dbsparse/child_report.hpp"

using dbsparse::cli::last_line_json;

TEST_CASE("ChildReportIsTheLastLineWithItsNestedObjects") {
  const std::string report = R"({"op":"spmv","kernels":{"aot":2,"compiled":0},"plan_ms":2.5})";
  for (const std::string& out : {report, report + "\n", "warning: slow disk\n" + report + "\r\n\n"}) {
    const auto j = last_line_json(out);
    REQUIRE(j);
    CHECK((*j)["op"] == "spmv");
    CHECK((*j)["kernels"]["aot"] == 2);
    CHECK((*j)["plan_ms"] == 2.5);
  }
}

TEST_CASE("ChildReportIsNoneWhenTheLastLineIsNotAnObject") {
  CHECK_FALSE(last_line_json(""));
  CHECK_FALSE(last_line_json("\n\n"));
  CHECK_FALSE(last_line_json("dbsparse: no CUDA device\n"));
  CHECK_FALSE(last_line_json("{\"op\":\"spmv\"}\nthen an error\n"));
  CHECK_FALSE(last_line_json("{\"op\":"));
  CHECK_FALSE(last_line_json("[1,2]"));
  CHECK_FALSE(last_line_json(std::string(100, '{')));  // deeper than the JSON limit: not parsed
}

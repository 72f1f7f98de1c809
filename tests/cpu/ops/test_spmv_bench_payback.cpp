// bench spmv's column-order note: the order's host time over the time it saves a call against the
// same run's dbsparse-cols-none row.
#include <doctest/doctest.h>

#include "tools/bench/bench_spmv.hpp"

using dbsparse::tools::BenchRow;

namespace {

BenchRow row(const std::string& matrix, const std::string& impl, double us, bool reordered, double ms) {
  BenchRow r;
  r.matrix = matrix;
  r.precision = "f32";
  r.impl = impl;
  r.time_us = us;
  r.reordered = reordered;
  r.reorder_ms = ms;
  return r;
}

}  // namespace

TEST_CASE("SpmvBenchPaybackIsTheOrdersHostTimeOverTheTimeItSaves") {
  std::vector<BenchRow> rows{
      row("g", "dbsparse-cols-none", 283.0, false, 0), row("g", "dbsparse-cols-degree", 208.0, true, 150.0),
      row("g", "dbsparse-classified", 290.0, true, 150.0), row("other", "dbsparse-cols-degree", 100.0, true, 9.0)};
  dbsparse::tools::note_order_payback(rows, "g", "f32");
  // 150 ms / 75 us a call = 2000 calls.
  CHECK(rows[1].paid_back_after_calls == 2000);
  CHECK(rows[1].note.find("paid back after 2000 calls") != std::string::npos);
  // Slower than the user's order: never.
  CHECK(rows[2].paid_back_after_calls == 0);
  CHECK(rows[2].note.find("never paid back") != std::string::npos);
  // Rows in the user's order get no note; another matrix is not touched.
  CHECK(rows[0].note.empty());
  CHECK(rows[3].note.empty());
  CHECK(rows[3].paid_back_after_calls == -1);
  // Without a cols-none row: the host time alone.
  dbsparse::tools::note_order_payback(rows, "other", "f32");
  CHECK(rows[3].note == "columns in degree order: 9.0 ms on the host at plan time");
  CHECK(rows[3].paid_back_after_calls == -1);
  CHECK(rows[3].to_json()["column_order"]["host_ms"] == 9.0);
  CHECK(rows[1].to_json()["column_order"]["paid_back_after_calls"] == 2000);
}

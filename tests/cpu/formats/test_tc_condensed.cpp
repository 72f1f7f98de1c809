// Condensed TC windows (tc_condensed.hpp): every entry lands once, at its row and its column's
// slot, in mma fragment order; the rest of every tile is zero; slots name the window's distinct
// columns ascending; the fill is what condensed_fill predicts. The expected layout is rebuilt here
// from each window's std::set of columns, not from the library's own counting.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/spmm_cases.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/half.hpp"
#include "dbsparse/tc_condensed.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

float as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A's value as the tiles must hold it: f32 rounded to tf32, or to the 16-bit type.
float stored(float v, SpmmDtype d) {
  if (d == SpmmDtype::F32) return as_float(tf32_bits(v));
  return d == SpmmDtype::F16 ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v));
}

std::vector<std::pair<std::string, CsrMatrix<float>>> matrices() {
  auto out = dbs_test::spmm_test_matrices();
  for (const char* spec : {"pruned:rows=100,cols=90,density=0.5,block=1", "pruned:rows=64,cols=64,density=0.3,block=16",
                           "powerlaw:n=1200,avg=8,alpha=1.5,max=400"})
    out.emplace_back(spec, generate(spec).cast<float>());
  return out;
}

}  // namespace

TEST_CASE("CondensedTilesHoldEveryEntryOnceMatchesReference") {
  for (const auto& [name, a] : matrices()) {
    CAPTURE(name);
    for (int g : {1, 2, 4, 8})
      for (SpmmDtype d : {SpmmDtype::F32, SpmmDtype::F16, SpmmDtype::BF16}) {
        CAPTURE(g);
        CAPTURE(to_string(d));
        const CondensedTc m = csr_to_condensed(a, g, d);
        const int32_t windows = (a.rows + 15) / 16;
        REQUIRE(m.win_group.size() == static_cast<size_t>(windows) + 1);
        CHECK(m.win_group.front() == 0);
        CHECK(m.win_group.back() == m.groups());
        REQUIRE(m.old_col.size() == static_cast<size_t>(m.groups() * 8 * g));
        const int64_t words = (d == SpmmDtype::F32 ? g : (g + 1) / 2) * 32 * 4;
        REQUIRE(m.afrag.size() == static_cast<size_t>(m.groups() * words));
        int64_t capacity_blocks = 0;
        for (int32_t w = 0; w < windows; ++w) {
          CAPTURE(w);
          std::set<int32_t> cols;
          for (int32_t p = a.row_ptr[w * 16]; p < a.row_ptr[std::min(a.rows, w * 16 + 16)]; ++p)
            cols.insert(a.col_idx[p]);
          const int32_t q0 = m.win_group[w], q1 = m.win_group[w + 1];
          // As few groups as hold the window's columns, each named by its window.
          CHECK(q1 - q0 == static_cast<int32_t>((cols.size() + 8 * g - 1) / (8 * g)));
          for (int32_t q = q0; q < q1; ++q) CHECK(m.group_window[q] == w);
          size_t s = 0;
          for (int32_t c : cols) CHECK(m.old_col[static_cast<size_t>(q0) * 8 * g + s++] == c);
          for (; s < static_cast<size_t>(q1 - q0) * 8 * g; ++s) {
            CHECK(m.old_col[static_cast<size_t>(q0) * 8 * g + s] >= 0);  // padding: a valid row of B
            CHECK(m.old_col[static_cast<size_t>(q0) * 8 * g + s] < a.cols);
          }
          capacity_blocks += int64_t{q1 - q0} * g;
        }
        // Decoded back, the tiles are A (rounded) and nothing else: zeros elsewhere, padding included.
        const std::vector<float> dense = condensed_to_dense(m);
        std::vector<float> want(static_cast<size_t>(a.rows) * a.cols, 0.0f);
        for (int32_t r = 0; r < a.rows; ++r)
          for (int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p)
            want[static_cast<size_t>(r) * a.cols + a.col_idx[p]] += a.values[p];
        for (float& v : want) v = stored(v, d);
        CHECK(dense == want);
        CHECK(m.fill() == doctest::Approx(a.nnz() ? double(a.nnz()) / (capacity_blocks * 128.0) : 0.0));
        CHECK(condensed_fill(a, g) == doctest::Approx(m.fill()));
        CHECK(condensed_fill(a, g, 1 << 20) == doctest::Approx(m.fill()));  // more windows than there are: all
      }
  }
}

TEST_CASE("CondensedTilesHandleEmptyAndRaggedShapes") {
  // No entries at all, rows past the last full window, and a window with entries after empty ones.
  CsrMatrix<float> empty;
  empty.rows = 37;
  empty.cols = 5;
  empty.row_ptr.assign(38, 0);
  const CondensedTc none = csr_to_condensed(empty, 4);
  CHECK(none.groups() == 0);
  CHECK(none.win_group == std::vector<int32_t>(4, 0));
  CHECK(none.fill() == 0.0);
  CHECK(condensed_fill(empty, 4) == 0.0);
  const auto late = dbs_test::csr_from_entries<float>(40, 9, {{35, 8, 2.5}, {39, 0, -1.0}, {33, 8, 1.0}});
  const CondensedTc m = csr_to_condensed(late, 1);
  CHECK(m.win_group == std::vector<int32_t>{0, 0, 0, 1});
  CHECK(m.old_col[0] == 0);
  CHECK(m.old_col[1] == 8);
  for (int s = 2; s < 8; ++s) CHECK(m.old_col[s] == 8);  // padded with the last column
  CHECK(m.fill() == doctest::Approx(3.0 / 128.0));
  const auto dense = condensed_to_dense(m);
  CHECK(dense[35 * 9 + 8] == 2.5f);
  CHECK(dense[39 * 9 + 0] == -1.0f);
  CHECK(dense[33 * 9 + 8] == 1.0f);
  CHECK_THROWS_AS(csr_to_condensed(late, 3), UsageError);
  CHECK_THROWS_AS(condensed_fill(late, 16), UsageError);
}

// A sample of windows estimates the fill of a uniform matrix closely, and reads only those windows.
// A g the windows do not take is named as theirs, not BRP's (hostile sweep, 2026-12-04).
TEST_CASE("CondensedRefusesAGroupWidthNamingItself") {
  const auto a = generate("stencil2d:n=10").cast<float>();
  for (int g : {0, 3, 16}) {
    CAPTURE(g);
    try {
      (void)csr_to_condensed(a, g);
      FAIL("g accepted");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find("condensed TC windows g = " + std::to_string(g)) != std::string::npos);
    }
  }
}

TEST_CASE("CondensedFillFromASampleOfWindows") {
  const auto a = generate("pruned:rows=4096,cols=512,density=0.2,block=1").cast<float>();
  const double all = condensed_fill(a, 4);
  CHECK(condensed_fill(a, 4, 16) == doctest::Approx(all).epsilon(0.05));
  CHECK(condensed_fill(a, 4, 1) == doctest::Approx(all).epsilon(0.1));
}

TEST_CASE("Tf32BitsRoundToNearestTiesAway") {
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  CHECK(tf32_bits(1.0f) == 0x3F800000u);
  CHECK(tf32_bits(1.0f + 0x1p-12f) == 0x3F800000u);            // below half an ulp of tf32: down
  CHECK(tf32_bits(1.0f + 0x1p-11f) == bits(1.0f + 0x1p-10f));  // a tie: away from zero
  CHECK(tf32_bits(-1.0f - 0x1p-11f) == bits(-1.0f - 0x1p-10f));
  CHECK(tf32_bits(1.0f + 0x1p-11f + 0x1p-20f) == bits(1.0f + 0x1p-10f));
  CHECK((tf32_bits(0.1f) & 0x1FFFu) == 0u);
  CHECK(std::fabs(as_float(tf32_bits(0.1f)) - 0.1f) <= 0.1f * 0x1p-11f);
  CHECK(std::isinf(as_float(tf32_bits(std::numeric_limits<float>::infinity()))));
  CHECK(std::isnan(as_float(tf32_bits(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(std::isnan(as_float(tf32_bits(as_float(0x7F800001u)))));  // a NaN whose payload is in the low bits alone
}

TEST_CASE("ConvertFormatCondensedPrintsFillAndBytes") {
  const auto cli = dbs_test::sibling_binary("dbsparse");
  REQUIRE_MESSAGE(!cli.empty(), "dbsparse binary not found");
  auto run = [](const std::string& args) { return dbs_test::run_tool("dbsparse", args).second; };
  const auto dir = dbs_test::temp_dir("convert-condensed");
  const std::string json = (dir / "c.json").string();
  const std::string spec = "pruned:rows=64,cols=64,density=0.5,block=1";
  const std::string out = run("convert " + spec + " --format condensed --g 2 --json " + json);
  CHECK(out.find("condensed TC windows, g = 2") != std::string::npos);
  CHECK(out.find("fill") != std::string::npos);
  CHECK(out.find("SpMM auto") != std::string::npos);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  const CondensedTc m = csr_to_condensed(generate(spec).cast<float>(), 2);
  CHECK(j["groups"] == m.groups());
  CHECK(j["fill"].get<double>() == doctest::Approx(m.fill()));
  CHECK(j["bytes"]["total"] == m.device_bytes());
  CHECK(run("convert " + spec + " --format condensed --g 3").find("g = 3: allowed 1, 2, 4, 8") != std::string::npos);
  CHECK(run("convert " + spec + " --format condensed --f 2").find("--format brp") != std::string::npos);
  CHECK(run("convert " + spec + " --g 2").find("--format brp or condensed") != std::string::npos);
  std::filesystem::remove_all(dir);
}

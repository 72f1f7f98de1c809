// The BRP format of BRP-SpMM (brp.hpp): every nonzero lands once, in the place the definition
// gives it; groups are full and aligned; the round trip is exact; the CPU spec of the kernels
// (brp_spmm_cpu) matches the reference. The expected layout is rebuilt here from std::map, not
// from the library's own counting.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "dbsparse/brp.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "test_support.hpp"

using namespace dbsparse;

namespace {

constexpr int kFg[] = {1, 2, 4, 8};
const char* const kGenerated[] = {
    "uniform:n=1500,d=6", "rmat:scale=10,ef=8",         "stencil2d:n=30",
    "banded:n=700,bw=6",  "fem:nodes=600,k=3,blocks=4", "powerlaw:n=1200,avg=8,alpha=1.5,max=400"};

using dbs_test::Entry;  // (row, col, value)

template <class T>
CsrMatrix<T> from_entries(int32_t rows, int32_t cols, const std::vector<Entry>& e) {
  return dbs_test::csr_from_entries<T>(rows, cols, e);
}

// What the definition says, the slow way: per window, column -> its entries in row order; slots of
// f; groups of 8g slots. tc lists the groups' entries in array order as (window, col, row, value).
template <class T>
struct Expected {
  std::vector<std::tuple<int32_t, int32_t, int32_t, T>> tc;
  std::map<std::pair<int32_t, int32_t>, T> residual;  // (row, col) -> value
  int64_t groups = 0;
};

template <class T>
Expected<T> expected_split(const CsrMatrix<T>& a, int f, int g) {
  Expected<T> x;
  for (int32_t w = 0; w * 16 < a.rows; ++w) {
    std::map<int32_t, std::vector<std::pair<int32_t, T>>> by_col;
    for (int32_t r = w * 16; r < std::min(a.rows, w * 16 + 16); ++r)
      for (int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) by_col[a.col_idx[p]].emplace_back(r, a.values[p]);
    std::vector<std::vector<std::tuple<int32_t, int32_t, T>>> slots;  // each: f (col, row, value)
    for (const auto& [c, list] : by_col) {
      size_t k = 0;
      for (; k + static_cast<size_t>(f) <= list.size(); k += static_cast<size_t>(f)) {
        slots.emplace_back();
        for (int i = 0; i < f; ++i) slots.back().emplace_back(c, list[k + i].first, list[k + i].second);
      }
      for (; k < list.size(); ++k) x.residual[{list[k].first, c}] = list[k].second;
    }
    const size_t full = slots.size() / (8u * g) * (8u * g);
    for (size_t s = 0; s < slots.size(); ++s)
      for (auto [c, r, v] : slots[s]) {
        if (s < full)
          x.tc.emplace_back(w, c, r, v);
        else
          x.residual[{r, c}] = v;
      }
    x.groups += static_cast<int64_t>(full / (8u * g));
  }
  return x;
}

int64_t round_up_128(int64_t bytes) { return (bytes + 127) / 128 * 128; }
int64_t round_up_32(int64_t bytes) { return (bytes + 31) / 32 * 32; }

// Every property the format promises, checked on m = csr_to_brp(a, {f, g}).
template <class T>
void check_brp(const CsrMatrix<T>& a, const BrpMatrix<T>& m, int f, int g) {
  CAPTURE(f);
  CAPTURE(g);
  const Expected<T> x = expected_split(a, f, g);
  const int64_t gnnz = 8 * g * f;
  REQUIRE(m.groups() == x.groups);
  CHECK(m.tc_nnz() + m.residual_nnz() == a.nnz());
  CHECK(m.tc_nnz() == static_cast<int64_t>(x.tc.size()));
  CHECK(m.residual_nnz() == static_cast<int64_t>(x.residual.size()));

  // Strides: the smallest multiple of 128 bytes (values) or 32 bytes (local ids) that holds a
  // group's run.
  CHECK(m.value_stride * int64_t{sizeof(T)} == round_up_128(gnnz * int64_t{sizeof(T)}));
  CHECK(m.local_stride == round_up_32(gnnz));
  REQUIRE(m.old_col_id.size() == static_cast<size_t>(m.groups() * 8 * g));
  REQUIRE(m.values.size() == static_cast<size_t>(m.groups() * m.value_stride));
  REQUIRE(m.local_id.size() == static_cast<size_t>(m.groups() * m.local_stride));

  bool in_place = true, full = true, padded = true, aligned = true, ordered = true;
  for (int64_t q = 0; q < m.groups(); ++q) {
    aligned = aligned && (q * m.value_stride * int64_t{sizeof(T)}) % 128 == 0 && (q * m.local_stride) % 32 == 0;
    if (q > 0) ordered = ordered && m.group_window_id[q - 1] <= m.group_window_id[q];
    for (int64_t e = 0; e < gnnz; ++e) {
      const int lid = m.local_id[q * m.local_stride + e];
      full = full && lid < 128;
      const auto& [w, c, r, v] = x.tc[q * gnnz + e];
      in_place = in_place && m.group_window_id[q] == w && m.old_col_id[q * 8 * g + e / f] == c &&
                 lid == (r - 16 * w) * 8 + (e / f) % 8 && m.values[q * m.value_stride + e] == v;
    }
    for (int64_t e = gnnz; e < m.local_stride; ++e)
      padded = padded && m.local_id[q * m.local_stride + e] == kBrpPadLocalId;
    for (int64_t e = gnnz; e < m.value_stride; ++e) padded = padded && m.values[q * m.value_stride + e] == T(0);
  }
  CHECK_MESSAGE(in_place, "each group entry is the definition's (window, column, row, value)");
  CHECK_MESSAGE(full, "every group holds exactly 8*g*f entries");
  CHECK_MESSAGE(padded, "padding after each run: value 0, local id kBrpPadLocalId");
  CHECK_MESSAGE(aligned, "each group's values start at a multiple of 128 bytes, its local ids at one of 32");
  CHECK_MESSAGE(ordered, "group_window_id non-decreasing");

  // Residual: rows ascending, columns ascending within a row, exactly the expected entries.
  std::map<std::pair<int32_t, int32_t>, T> res;
  bool sorted = true;
  for (size_t i = 0; i < m.res_rows_id.size(); ++i) {
    if (i > 0) sorted = sorted && m.res_rows_id[i - 1] < m.res_rows_id[i];
    sorted = sorted && m.res_row_offset[i] < m.res_row_offset[i + 1];  // no empty residual rows
    for (int32_t p = m.res_row_offset[i]; p < m.res_row_offset[i + 1]; ++p) {
      if (p > m.res_row_offset[i]) sorted = sorted && m.res_col_id[p - 1] < m.res_col_id[p];
      res[{m.res_rows_id[i], m.res_col_id[p]}] = m.res_values[p];
    }
  }
  CHECK(sorted);
  CHECK(res == x.residual);

  const CsrMatrix<T> back = brp_to_csr(m);
  CHECK(back.rows == a.rows);
  CHECK(back.cols == a.cols);
  CHECK(back.row_ptr == a.row_ptr);
  CHECK(back.col_idx == a.col_idx);
  CHECK(back.values == a.values);

  const BrpStats s = brp_stats(m);
  const int64_t pad_per_group =
      (round_up_128(gnnz * int64_t{sizeof(T)}) - gnnz * int64_t{sizeof(T)}) + (round_up_32(gnnz) - gnnz);
  CHECK(s.padding_bytes == x.groups * pad_per_group);
  CHECK(s.tc_nnz == m.tc_nnz());
  CHECK(s.residual_nnz == m.residual_nnz());
  CHECK(s.groups == x.groups);
  CHECK(s.windows == (a.rows + 15) / 16);
  CHECK(s.residual_rows == static_cast<int64_t>(m.res_rows_id.size()));
  CHECK(s.bytes_csr == (int64_t{a.rows} + 1) * 4 + a.nnz() * (4 + int64_t{sizeof(T)}));
  CHECK(s.bytes == x.groups * (4 + 8 * g * 4 + round_up_32(gnnz) + round_up_128(gnnz * int64_t{sizeof(T)})) +
                       (2 * s.residual_rows + 1) * 4 + s.residual_nnz * (4 + int64_t{sizeof(T)}));
  CHECK(brp_group_share(a, f, g) == s.tc_share);
  CHECK(s.tc_share == (a.nnz() ? double(x.tc.size()) / double(a.nnz()) : 0.0));
}

// brp_spmm_cpu against reference_spmm, error relative to |alpha| sum |a||b| + |beta c0| per entry.
template <class T>
void check_spmm(const CsrMatrix<T>& a, const BrpMatrix<T>& m, int n, double tol) {
  CAPTURE(n);
  const auto b = dbs_test::random_vector<T>(static_cast<size_t>(a.cols) * n, 11 + n);
  const auto c0 = dbs_test::random_vector<T>(static_cast<size_t>(a.rows) * n, 23 + n);
  const T alpha = T(0.75), beta = T(-0.5);
  std::vector<T> ref = c0, got = c0;
  reference_spmm(a, b, n, ref, alpha, beta);
  brp_spmm_cpu(m, b, n, got, alpha, beta);
  REQUIRE(got.size() == ref.size());
  double worst = 0;
  for (int32_t i = 0; i < a.rows; ++i)
    for (int j = 0; j < n; ++j) {
      double scale = std::abs(double(beta) * double(c0[i * size_t(n) + j]));
      for (int32_t p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p)
        scale += std::abs(double(alpha) * double(a.values[p]) * double(b[a.col_idx[p] * size_t(n) + j]));
      const double err = std::abs(double(got[i * size_t(n) + j]) - double(ref[i * size_t(n) + j]));
      worst = std::max(worst, scale > 0 ? err / scale : err);
    }
  CHECK(worst <= tol);
}

template <class T>
void check_all_fg(const CsrMatrix<T>& a, bool spmm, double tol) {
  for (int f : kFg)
    for (int g : kFg) {
      const BrpMatrix<T> m = csr_to_brp(a, BrpParams{f, g});
      CHECK(m.f == f);
      CHECK(m.g == g);
      check_brp(a, m, f, g);
      if (spmm)
        for (int n : {1, 8, 33}) check_spmm(a, m, n, tol);
    }
}

// Hand-made shapes: empty, empty rows and windows, ragged edges.
std::vector<std::pair<std::string, CsrMatrix<double>>> edge_cases() {
  std::vector<std::pair<std::string, CsrMatrix<double>>> out;
  out.emplace_back("empty 0x0", from_entries<double>(0, 0, {}));
  out.emplace_back("no nonzeros 37x13", from_entries<double>(37, 13, {}));
  {  // rows 0..15 and 48..63 only: windows 1, 2 and 4 empty, many empty rows in between
    std::vector<Entry> e;
    for (int32_t r : {0, 3, 15, 48, 50, 63})
      for (int32_t c = r % 5; c < 50; c += 3) e.emplace_back(r, c, 1.0 + r * 0.01 + c * 0.001);
    out.emplace_back("empty windows 70x50", from_entries<double>(70, 50, e));
  }
  {  // M = 45, K = 21: neither a multiple of 16 / 8; fairly dense so that groups form
    std::vector<Entry> e;
    for (int32_t r = 0; r < 45; ++r)
      for (int32_t c = 0; c < 21; ++c)
        if ((r * 7 + c * 3) % 5 != 0) e.emplace_back(r, c, std::sin(r * 21.0 + c));
    out.emplace_back("ragged 45x21", from_entries<double>(45, 21, e));
  }
  {
    std::vector<Entry> e;
    for (int32_t r = 0; r < 16; ++r)
      for (int32_t c = 0; c < 16; ++c) e.emplace_back(r, c, 0.5 + r - 0.25 * c);
    out.emplace_back("dense 16x16", from_entries<double>(16, 16, e));
  }
  {  // a dense window as the last, partial window of a wider matrix
    std::vector<Entry> e;
    for (int32_t r = 32; r < 41; ++r)
      for (int32_t c = 0; c < 75; ++c) e.emplace_back(r, c, 1.0 / (1 + r + c));
    out.emplace_back("dense last window 41x75", from_entries<double>(41, 75, e));
  }
  return out;
}

}  // namespace

TEST_CASE("BrpParamsRejectValuesOutsideOneTwoFourEight") {
  CHECK_NOTHROW(validate(BrpParams{}));
  CHECK(BrpParams{}.f == 1);
  CHECK(BrpParams{}.g == 4);
  const auto a = from_entries<float>(16, 16, {{0, 0, 1.0}});
  for (auto [f, g] : {std::pair{3, 4}, {0, 4}, {16, 4}, {1, 0}, {1, 5}, {-1, 2}}) {
    CAPTURE(f);
    CAPTURE(g);
    const std::string bad =
        f == 3 || f == 0 || f == 16 || f == -1 ? fmt::format("f = {}", f) : fmt::format("g = {}", g);
    try {
      validate(BrpParams{f, g});
      FAIL("no UsageError");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find(bad) != std::string::npos);
      CHECK(std::string(e.what()).find("1, 2, 4, 8") != std::string::npos);
    }
    CHECK_THROWS_AS(csr_to_brp(a, BrpParams{f, g}), UsageError);
    CHECK_THROWS_AS(brp_group_share(a, f, g), UsageError);
  }
}

TEST_CASE("BrpConversionOfGeneratedMatricesMatchesDefinition") {
  for (const char* spec : kGenerated) {
    CAPTURE(spec);
    check_all_fg(generate(spec).cast<float>(), false, 0);
  }
}

TEST_CASE("BrpSpmmOfGeneratedMatricesMatchesReference") {
  for (const char* spec : kGenerated) {
    CAPTURE(spec);
    const auto a = generate(spec);
    for (int f : kFg)
      for (int g : kFg) {
        const auto af = a.cast<float>();
        const BrpMatrix<float> m = csr_to_brp(af, BrpParams{f, g});
        for (int n : {1, 8, 33}) check_spmm(af, m, n, 1e-5);
      }
    // One in double, at double's tolerance.
    const BrpMatrix<double> md = csr_to_brp(a, BrpParams{2, 4});
    check_brp(a, md, 2, 4);
    check_spmm(a, md, 33, 1e-12);
  }
}

TEST_CASE("BrpEdgeCasesMatchDefinitionAndReference") {
  for (const auto& [name, a] : edge_cases()) {
    CAPTURE(name);
    check_all_fg(a.cast<float>(), true, 1e-5);
    check_all_fg(a, true, 1e-12);
  }
}

TEST_CASE("BrpDenseWindowFillsGroupsByCount") {
  // 16 columns of 16 nonzeros: 16 * (16 / f) slots, of which whole groups of 8g go to the TC part.
  const auto a = edge_cases()[4].second.cast<float>();
  REQUIRE(a.nnz() == 256);
  for (int f : kFg)
    for (int g : kFg) {
      CAPTURE(f);
      CAPTURE(g);
      const BrpMatrix<float> m = csr_to_brp(a, BrpParams{f, g});
      const int slots = 16 * (16 / f);
      CHECK(m.groups() == slots / (8 * g));
      CHECK(m.tc_nnz() == int64_t{slots / (8 * g)} * 8 * g * f);
      CHECK(brp_stats(m).tc_windows == (m.groups() > 0 ? 1 : 0));
    }
  // f = 1, g = 4: 256 slots make 8 full groups, nothing left over.
  CHECK(csr_to_brp(a, BrpParams{1, 4}).residual_nnz() == 0);
  // f = 8, g = 8: 32 slots, short of one group of 64: all residual, all 16 rows.
  const BrpMatrix<float> m88 = csr_to_brp(a, BrpParams{8, 8});
  CHECK(m88.groups() == 0);
  CHECK(m88.res_rows_id.size() == 16);
}

TEST_CASE("BrpColumnsWithFAndFPlusOneNonzerosInAWindow") {
  // Window 1 of a 40 x 29 matrix: 8g columns with exactly f nonzeros make one group and no
  // residual; one more nonzero below the others in the last column is left over.
  for (int f : kFg)
    for (int g : kFg) {
      CAPTURE(f);
      CAPTURE(g);
      const int32_t cols = 3 * 8 * g + 5;
      std::vector<Entry> e;
      for (int i = 0; i < 8 * g; ++i)
        for (int r = 0; r < f; ++r) e.emplace_back(16 + r, 3 * i + 1, 1.0 + i + 0.1 * r);
      const auto exact = from_entries<float>(40, cols, e);
      const BrpMatrix<float> m = csr_to_brp(exact, BrpParams{f, g});
      check_brp(exact, m, f, g);
      CHECK(m.groups() == 1);
      CHECK(m.group_window_id == std::vector<int32_t>{1});
      CHECK(m.residual_nnz() == 0);

      const int32_t last = 3 * (8 * g - 1) + 1;
      e.emplace_back(16 + f, last, -7.0);  // row 16 + f <= 24: still window 1
      const auto plus = from_entries<float>(40, cols, e);
      const BrpMatrix<float> p = csr_to_brp(plus, BrpParams{f, g});
      check_brp(plus, p, f, g);
      CHECK(p.groups() == 1);
      REQUIRE(p.residual_nnz() == 1);
      if (f > 1) {
        // f + 1 nonzeros: one slot of f, the lowest row left over.
        CHECK(p.res_rows_id == std::vector<int32_t>{16 + f});
        CHECK(p.res_col_id == std::vector<int32_t>{last});
        CHECK(p.res_values == std::vector<float>{-7.0f});
      } else {
        // f = 1: two slots in the last column; the group is full, so its second slot is left over.
        CHECK(p.res_rows_id == std::vector<int32_t>{17});
        CHECK(p.res_col_id == std::vector<int32_t>{last});
      }
      for (int n : {1, 8, 33}) check_spmm(plus, p, n, 1e-5);
    }
}

TEST_CASE("BrpSpmmWithBetaZeroIgnoresC") {
  const auto a = generate("stencil2d:n=12").cast<float>();
  const auto b = dbs_test::random_vector<float>(static_cast<size_t>(a.cols) * 8, 5);
  std::vector<float> ref, got(static_cast<size_t>(a.rows) * 8, std::numeric_limits<float>::quiet_NaN());
  reference_spmm(a, b, 8, ref, 2.0f, 0.0f);
  brp_spmm_cpu(csr_to_brp(a, BrpParams{1, 1}), b, 8, got, 2.0f, 0.0f);
  REQUIRE(got.size() == ref.size());
  bool close = true;  // entries are sums of at most 5 products of values within [-4, 4] and [-1, 1]
  for (size_t i = 0; i < got.size(); ++i) close = close && std::abs(got[i] - ref[i]) <= 1e-4f;
  CHECK(close);
  // Wrong sizes are usage errors naming what was expected.
  std::vector<float> short_c(3);
  CHECK_THROWS_AS(brp_spmm_cpu(csr_to_brp(a, BrpParams{}), b, 8, short_c, 1.0f, 1.0f), UsageError);
  CHECK_THROWS_AS(reference_spmm(a, std::vector<float>(5), 8, ref, 1.0f, 0.0f), UsageError);
}

TEST_CASE("BrpCountsPastInt32AreUsageErrors") {
  CHECK_NOTHROW(check_brp_counts(1000, BrpParams{1, 4}, 4));
  // f = 1, g = 1: local_id pads each group's 8 bytes to 32, so 2^26 groups need 2^31 bytes (and
  // values as many: 32 bytes padded to 128, 32 floats; local_id is checked first).
  CHECK_NOTHROW(check_brp_counts((int64_t{1} << 26) - 1, BrpParams{1, 1}, 4));
  try {
    check_brp_counts(int64_t{1} << 26, BrpParams{1, 1}, 4);
    FAIL("no UsageError");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("local_id") != std::string::npos);
    CHECK(std::string(e.what()).find("2147483648") != std::string::npos);
  }
  CHECK_THROWS_AS(check_brp_counts(int64_t{1} << 31, BrpParams{8, 8}, 8), UsageError);
}

TEST_CASE("BrpMalformedMatrixIsUsageError") {
  const auto a = generate("stencil2d:n=30").cast<float>();
  BrpMatrix<float> m = csr_to_brp(a, BrpParams{1, 1});
  REQUIRE(m.groups() > 0);
  BrpMatrix<float> bad_id = m;
  bad_id.local_id[0] = static_cast<uint8_t>((bad_id.local_id[0] + 1) % 128);  // another slot
  CHECK_THROWS_AS(brp_to_csr(bad_id), UsageError);
  BrpMatrix<float> bad_col = m;
  bad_col.old_col_id[0] = a.cols;
  CHECK_THROWS_AS(brp_to_csr(bad_col), UsageError);
  BrpMatrix<float> short_values = m;
  short_values.values.pop_back();
  CHECK_THROWS_AS(brp_stats(short_values), UsageError);
  std::vector<float> c;
  CHECK_THROWS_AS(brp_spmm_cpu(bad_id, std::vector<float>(a.cols), 1, c, 1.0f, 0.0f), UsageError);
}

TEST_CASE("ConvertFormatBrpPrintsTheSplit") {
  const auto cli = dbs_test::sibling_binary("dbsparse");
  REQUIRE_MESSAGE(!cli.empty(), "dbsparse binary not found");
  auto run = [](const std::string& args) { return dbs_test::run_tool("dbsparse", args).second; };
  const std::string out = run("convert stencil2d:n=20 --format brp --f 2 --g 4 --stats");
  CHECK(out.find("f = 2, g = 4") != std::string::npos);
  CHECK(out.find("residual") != std::string::npos);
  CHECK(out.find("CSR") != std::string::npos);
  CHECK(run("convert stencil2d:n=20 --format brp --f 3").find("f = 3: allowed 1, 2, 4, 8") != std::string::npos);
  CHECK(run("convert stencil2d:n=20 --format brp --g 16").find("g = 16: allowed 1, 2, 4, 8") != std::string::npos);
  CHECK(run("convert stencil2d:n=20 --f 2").find("--format brp") != std::string::npos);
  // The DB format stays the default.
  CHECK(run("convert stencil2d:n=20").find("blocks") != std::string::npos);
  // --host: csr_to_brp even where there is a GPU; the JSON names where it ran and the memory bound.
  const auto dir = dbs_test::temp_dir("convert-brp");
  const std::string json = (dir / "brp.json").string();
  const std::string host = run("convert stencil2d:n=20 --format brp --host --stats --json " + json);
  CHECK(host.find("conversion on the host") != std::string::npos);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["converted_on"] == "host");
  CHECK(j["peak_extra_bytes"].is_null());
  CHECK(j["peak_bound_bytes"] == 4 * j["nnz"].get<int64_t>() * 8);
  CHECK(run("convert stencil2d:n=20 --host").find("--format brp") != std::string::npos);
  std::filesystem::remove_all(dir);
}

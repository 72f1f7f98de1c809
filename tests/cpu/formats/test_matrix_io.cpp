// Matrix Market I/O and the COO/CSR/CSC conversions.
#include <doctest/doctest.h>
#include <zlib.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/io.hpp"
#include "dbsparse/matrix.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using dbsparse::CsrMatrix;

const fs::path& dir() {
  static const fs::path d = dbs_test::temp_dir("matrix-io");
  return d;
}

std::string write_text(const std::string& name, const std::string& text) {
  auto p = (dir() / name).string();
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

void gzip_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gzFile gz = gzopen(to.c_str(), "wb");
  REQUIRE(gz != nullptr);
  REQUIRE(gzwrite(gz, data.data(), static_cast<unsigned>(data.size())) == static_cast<int>(data.size()));
  REQUIRE(gzclose(gz) == Z_OK);
}

// (row, col) -> value, 0-based: the easiest form to compare against what a test expects.
std::map<std::pair<int, int>, double> entries(const CsrMatrix<double>& a) {
  std::map<std::pair<int, int>, double> m;
  for (int r = 0; r < a.rows; ++r)
    for (int p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) m[{r, a.col_idx[p]}] = a.values[p];
  return m;
}

template <class T>
bool same(const CsrMatrix<T>& a, const CsrMatrix<T>& b) {
  return a.rows == b.rows && a.cols == b.cols && a.row_ptr == b.row_ptr && a.col_idx == b.col_idx &&
         a.values == b.values;
}

// Reading `path` must throw InputError at `line`, naming the file and (when given) `needle`.
void expect_input_error(const std::string& path, long line, const std::string& needle = "") {
  INFO("file: " << path);
  try {
    dbsparse::read_matrix_market(path);
    FAIL("no InputError");
  } catch (const dbsparse::InputError& e) {
    std::string what = e.what();
    INFO("what(): " << what);
    CHECK(e.line() == line);
    CHECK(e.file() == path);
    CHECK(what.find(path) != std::string::npos);
    if (line > 0) CHECK(what.find(path + ":" + std::to_string(line) + ":") != std::string::npos);
    if (!needle.empty()) CHECK(what.find(needle) != std::string::npos);
  }
}

CsrMatrix<double> random_csr(int rows, int cols, int per_row, uint64_t seed) {
  dbsparse::CooMatrix<double> coo;
  coo.rows = rows;
  coo.cols = cols;
  auto v = dbs_test::random_vector<double>(static_cast<size_t>(rows) * per_row * 3, seed);
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < per_row; ++k) {
      size_t i = (static_cast<size_t>(r) * per_row + k) * 3;
      coo.row.push_back(r);
      coo.col.push_back(static_cast<int>((v[i] + 1.0) * 0.5 * (cols - 1)));
      coo.values.push_back(v[i + 1]);
    }
  }
  return dbsparse::coo_to_csr(coo);
}

}  // namespace

TEST_CASE("matrix market: every field x symmetry reads correctly") {
  const std::string body_values = "3 3 3\n1 1 2\n3 1 5\n2 3 -4\n";
  const std::string body_pattern = "3 3 3\n1 1\n3 1\n2 3\n";
  struct Case {
    const char* field;
    const char* symmetry;
    std::map<std::pair<int, int>, double> want;
  };
  const std::vector<Case> cases = {
      {"real", "general", {{{0, 0}, 2}, {{2, 0}, 5}, {{1, 2}, -4}}},
      {"integer", "general", {{{0, 0}, 2}, {{2, 0}, 5}, {{1, 2}, -4}}},
      {"pattern", "general", {{{0, 0}, 1}, {{2, 0}, 1}, {{1, 2}, 1}}},
      {"real", "symmetric", {{{0, 0}, 2}, {{2, 0}, 5}, {{0, 2}, 5}, {{1, 2}, -4}, {{2, 1}, -4}}},
      {"integer", "symmetric", {{{0, 0}, 2}, {{2, 0}, 5}, {{0, 2}, 5}, {{1, 2}, -4}, {{2, 1}, -4}}},
      {"pattern", "symmetric", {{{0, 0}, 1}, {{2, 0}, 1}, {{0, 2}, 1}, {{1, 2}, 1}, {{2, 1}, 1}}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.field);
    CAPTURE(c.symmetry);
    bool pattern = std::string(c.field) == "pattern";
    auto path = write_text(std::string(c.field) + "-" + c.symmetry + ".mtx",
                           std::string("%%MatrixMarket matrix coordinate ") + c.field + " " + c.symmetry + "\n" +
                               (pattern ? body_pattern : body_values));
    auto a = dbsparse::read_matrix_market(path);
    CHECK(a.rows == 3);
    CHECK(a.cols == 3);
    CHECK(entries(a) == c.want);
    CHECK_NOTHROW(dbsparse::validate(a));
  }

  for (const char* field : {"real", "integer"}) {
    CAPTURE(field);
    auto path = write_text(std::string(field) + "-skew.mtx", std::string("%%MatrixMarket matrix coordinate ") + field +
                                                                 " skew-symmetric\n3 3 2\n3 1 5\n2 3 -4\n");
    auto a = dbsparse::read_matrix_market(path);
    std::map<std::pair<int, int>, double> want = {{{2, 0}, 5}, {{0, 2}, -5}, {{1, 2}, -4}, {{2, 1}, 4}};
    CHECK(entries(a) == want);
  }
  // The Matrix Market spec has no pattern skew-symmetric: there is no value to negate.
  expect_input_error(
      write_text("pattern-skew.mtx", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n"), 1,
      "skew-symmetric");
}

TEST_CASE("matrix market: banner case, comments, blank lines, CRLF, duplicates") {
  auto path = write_text("comments.mtx",
                         "%%matrixmarket MATRIX Coordinate REAL General\r\n"
                         "% a comment\r\n"
                         "\r\n"
                         "%another\n"
                         "  2 4   3\n"
                         "% comment between entries\n"
                         "1 4 1.5\n"
                         "\n"
                         "1\t4\t2.5\n"
                         "2 1 +3e-1\n"
                         "\n");
  auto a = dbsparse::read_matrix_market(path);
  CHECK(a.rows == 2);
  CHECK(a.cols == 4);
  CHECK(a.nnz() == 2);
  std::map<std::pair<int, int>, double> want = {{{0, 3}, 4.0}, {{1, 0}, 0.3}};
  CHECK(entries(a) == want);

  auto dup = write_text("dup-pattern.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 3\n1 2\n1 2\n2 2\n");
  std::map<std::pair<int, int>, double> want_dup = {{{0, 1}, 2.0}, {{1, 1}, 1.0}};
  CHECK(entries(dbsparse::read_matrix_market(dup)) == want_dup);

  // A symmetric diagonal entry is not mirrored twice.
  auto diag = write_text("sym-diag.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 7\n2 2 8\n");
  CHECK(dbsparse::read_matrix_market(diag).nnz() == 2);

  // A line longer than the reader's buffer, and line numbers still right after it.
  auto long_line = write_text("long-line.mtx", "%%MatrixMarket matrix coordinate real general\n%" +
                                                   std::string(9 << 20, 'x') + "\n2 2 1\n1 1 x\n");
  expect_input_error(long_line, 4, "finite");
  fs::remove(long_line);

  auto empty = write_text("empty.mtx", "%%MatrixMarket matrix coordinate real general\n0 0 0\n");
  auto e = dbsparse::read_matrix_market(empty);
  CHECK(e.rows == 0);
  CHECK(e.nnz() == 0);
  CHECK(e.row_ptr.size() == 1);
}

TEST_CASE("matrix market: malformed files throw InputError with file and line") {
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n";
  struct Case {
    const char* name;
    std::string text;
    long line;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"empty", "", 1, "banner"},
      {"no-banner", "3 3 1\n1 1 1\n", 1, "banner"},
      {"bad-banner", "%%MatrixMarket matrix\n3 3 1\n1 1 1\n", 1, "coordinate"},
      {"extra-banner", "%%MatrixMarket matrix coordinate real general extra\n1 1 0\n", 1, "banner"},
      {"not-matrix", "%%MatrixMarket vector coordinate real general\n1 1 0\n", 1, "matrix"},
      {"complex", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1, "complex"},
      {"hermitian", "%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", 1, "hermitian"},
      {"array", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1, "array"},
      {"unknown-field", "%%MatrixMarket matrix coordinate quaternion general\n1 1 0\n", 1, "quaternion"},
      {"unknown-symmetry", "%%MatrixMarket matrix coordinate real diagonal\n1 1 0\n", 1, "diagonal"},
      {"no-size", banner + "% only a comment\n", 3, "size line"},
      {"short-size", banner + "% c\n3 3\n1 1 1\n", 3, "size line"},
      {"long-size", banner + "3 3 1 1\n1 1 1\n", 2, "size line"},
      {"text-size", banner + "3 x 1\n1 1 1\n", 2, "size line"},
      {"nan-size", banner + "3 3 nan\n", 2, "size line"},
      {"float-size", banner + "3.0 3 1\n1 1 1\n", 2, "size line"},
      {"negative-size", banner + "-3 3 1\n1 1 1\n", 2, "non-negative"},
      {"huge-rows", banner + "2147483648 3 0\n", 2, "2147483647"},
      {"huge-cols", banner + "3 99999999999999999999999 0\n", 2, "2147483647"},
      {"huge-nnz", banner + "3 3 2147483648\n", 2, "2147483647 entries"},
      {"nonsquare-symmetric", "%%MatrixMarket matrix coordinate real symmetric\n3 2 1\n1 1 1\n", 2, "square"},
      {"too-few-tokens", banner + "3 3 2\n1 1 1\n2 2\n", 4, "row col value"},
      {"one-token", banner + "3 3 1\n% c\n1\n", 4, "row col value"},
      {"too-many-tokens", banner + "3 3 1\n1 1 1 0\n", 3, "row col value"},
      {"non-number-value", banner + "3 3 1\n1 1 abc\n", 3, "abc"},
      {"non-number-index", banner + "3 3 1\n1 x 1\n", 3, "column index"},
      {"float-index", banner + "3 3 1\n1.5 1 1\n", 3, "row index"},
      {"nan-value", banner + "3 3 1\n1 1 nan\n", 3, "finite"},
      {"inf-value", banner + "3 3 1\n1 1 -inf\n", 3, "finite"},
      {"overflow-value", banner + "3 3 1\n1 1 1e999\n", 3, "finite"},
      {"integer-not-int", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 1.5\n", 3, "integer value"},
      {"pattern-with-value", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1\n", 3, "pattern"},
      {"pattern-with-nan", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 nan\n", 3, "pattern"},
      {"row-zero", banner + "3 3 1\n0 1 1\n", 3, "row index in 1..3, got 0"},
      {"row-too-big", banner + "3 4 1\n4 1 1\n", 3, "row index in 1..3, got 4"},
      {"col-too-big", banner + "3 4 2\n1 1 1\n1 5 1\n", 4, "column index in 1..4, got 5"},
      {"col-negative", banner + "3 4 1\n1 -1 1\n", 3, "column index in 1..4"},
      {"fewer-entries", banner + "3 3 5\n1 1 1\n2 2 1\n3 3 1\n", 5, "file ends at line 5 after 3 of 5 entries"},
      {"fewer-trailing-blank", banner + "3 3 2\n1 1 1\n\n", 4, "after 1 of 2 entries"},
      {"more-entries", banner + "3 3 1\n1 1 1\n% c\n2 2 1\n", 5, "1 entries"},
      {"skew-diagonal", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n", 4, "diagonal"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    expect_input_error(write_text(std::string(c.name) + ".mtx", c.text), c.line, c.needle);
  }
}

TEST_CASE("matrix market: unreadable paths") {
  expect_input_error((dir() / "does-not-exist.mtx").string(), 0, "a readable file");
  expect_input_error(dir().string(), 0, "a readable file");

  // Truncated gzip: the stream ends mid-way, which must not read as a short but valid file.
  auto plain = write_text("for-trunc.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n");
  auto gz = (dir() / "trunc.mtx.gz").string();
  gzip_file(plain, gz);
  auto size = fs::file_size(gz);
  fs::resize_file(gz, size - 6);
  CHECK_THROWS_AS(dbsparse::read_matrix_market(gz), dbsparse::InputError);
}

TEST_CASE("matrix market: write then read round-trips, plain and gzip") {
  auto a = random_csr(57, 31, 5, 11);
  a.values[0] = 1.0 / 3.0;  // needs all 17 digits
  a.values[1] = -1e-300;
  auto path = (dir() / "roundtrip.mtx").string();
  dbsparse::write_matrix_market(path, a);
  CHECK(same(dbsparse::read_matrix_market(path), a));

  // No temp file is left beside the target.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir()))
    if (e.path().filename().string().find("roundtrip.mtx.tmp") != std::string::npos) ++files;
  CHECK(files == 0);

  // Overwriting replaces the file.
  auto b = random_csr(5, 5, 2, 3);
  dbsparse::write_matrix_market(path, b);
  CHECK(same(dbsparse::read_matrix_market(path), b));

  auto gz = (dir() / "roundtrip.mtx.gz").string();
  gzip_file(path, gz);
  CHECK(same(dbsparse::read_matrix_market(gz), b));
  // Detected by magic bytes, not by the name.
  auto disguised = (dir() / "disguised.mtx").string();
  fs::copy_file(gz, disguised, fs::copy_options::overwrite_existing);
  CHECK(same(dbsparse::read_matrix_market(disguised), b));

  auto pattern_path = (dir() / "pattern-out.mtx").string();
  dbsparse::write_matrix_market(pattern_path, a, /*pattern=*/true);
  auto p = dbsparse::read_matrix_market(pattern_path);
  CHECK(p.row_ptr == a.row_ptr);
  CHECK(p.col_idx == a.col_idx);
  for (double v : p.values) CHECK(v == 1.0);

  // A long file exercises buffer refills across line boundaries.
  auto big = random_csr(20000, 20000, 20, 5);
  auto big_path = (dir() / "big.mtx").string();
  dbsparse::write_matrix_market(big_path, big);
  CHECK(same(dbsparse::read_matrix_market(big_path), big));
  auto big_gz = big_path + ".gz";
  gzip_file(big_path, big_gz);
  CHECK(same(dbsparse::read_matrix_market(big_gz), big));
  fs::remove(big_path);
  fs::remove(big_gz);
}

TEST_CASE("load_matrix and is_generator_spec") {
  CHECK(dbsparse::is_generator_spec("rmat:scale=20,ef=16,seed=1"));
  CHECK(dbsparse::is_generator_spec("banded:n=10"));
  CHECK_FALSE(dbsparse::is_generator_spec("dir/rmat:scale=1"));
  CHECK_FALSE(dbsparse::is_generator_spec("some/file.mtx"));
  CHECK_FALSE(dbsparse::is_generator_spec("file.mtx"));
  CHECK_FALSE(dbsparse::is_generator_spec(":x"));
  CHECK_FALSE(dbsparse::is_generator_spec("bad kind:x"));

  auto existing = write_text("weird:name.mtx", "%%MatrixMarket matrix coordinate real general\n1 1 0\n");
  auto cwd = fs::current_path();
  fs::current_path(dir());
  CHECK_FALSE(dbsparse::is_generator_spec("weird:name.mtx"));
  fs::current_path(cwd);

  auto a = random_csr(7, 7, 2, 1);
  auto path = (dir() / "named.mtx").string();
  dbsparse::write_matrix_market(path, a);
  auto m = dbsparse::load_matrix(path);
  CHECK(m.name == "named");
  CHECK(same(m.csr, a));
  gzip_file(path, path + ".gz");
  CHECK(dbsparse::load_matrix(path + ".gz").name == "named");

  auto g = dbsparse::load_matrix("banded:n=10");
  CHECK(g.csr.rows == 10);
  CHECK(g.name.starts_with("banded:"));
  CHECK(g.name.find("n=10") != std::string::npos);

  CHECK_THROWS_AS(dbsparse::load_matrix((dir() / "missing.mtx").string()), dbsparse::InputError);
}

TEST_CASE("conversions: coo_to_csr sorts and sums, csr<->csc and transpose round-trip") {
  dbsparse::CooMatrix<float> coo;
  coo.rows = 3;
  coo.cols = 4;
  coo.row = {2, 0, 2, 0, 1, 2};
  coo.col = {3, 1, 0, 1, 2, 3};
  coo.values = {1, 2, 3, 4, 5, 6};
  auto a = dbsparse::coo_to_csr(coo);
  CHECK(a.row_ptr == std::vector<int32_t>{0, 1, 2, 4});
  CHECK(a.col_idx == std::vector<int32_t>{1, 2, 0, 3});
  CHECK(a.values == std::vector<float>{6, 5, 3, 7});

  coo.row.push_back(3);
  coo.col.push_back(0);
  coo.values.push_back(1);
  CHECK_THROWS_AS(dbsparse::coo_to_csr(coo), dbsparse::UsageError);
  coo.row.back() = 0;
  coo.col.back() = -1;
  CHECK_THROWS_AS(dbsparse::coo_to_csr(coo), dbsparse::UsageError);
  coo.values.pop_back();
  CHECK_THROWS_AS(dbsparse::coo_to_csr(coo), dbsparse::UsageError);

  for (auto [rows, cols] : {std::pair{1, 1}, {40, 13}, {13, 40}, {300, 300}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    auto m = random_csr(rows, cols, 4, rows * 7 + cols);
    auto csc = dbsparse::csr_to_csc(m);
    CHECK(csc.rows == rows);
    CHECK(csc.cols == cols);
    CHECK(csc.nnz() == m.nnz());
    CHECK(same(dbsparse::csc_to_csr(csc), m));
    auto t = dbsparse::transpose(m);
    CHECK(t.rows == cols);
    CHECK(t.cols == rows);
    CHECK_NOTHROW(dbsparse::validate(t));
    CHECK(same(dbsparse::transpose(t), m));
    auto mf = m.cast<float>();
    CHECK(same(dbsparse::transpose(dbsparse::transpose(mf)), mf));
    // Transposed entries land where they should.
    auto e = entries(m), et = entries(t);
    for (const auto& [rc, v] : e) CHECK(et.at({rc.second, rc.first}) == v);
  }

  CsrMatrix<double> empty;
  empty.rows = 0;
  empty.cols = 5;
  CHECK(dbsparse::transpose(empty).row_ptr.size() == 6);
}

TEST_CASE("validate names the broken invariant") {
  auto good = random_csr(10, 10, 3, 2);
  CHECK_NOTHROW(dbsparse::validate(good));
  auto expect = [](const CsrMatrix<double>& m, const char* needle) {
    CAPTURE(needle);
    try {
      dbsparse::validate(m);
      FAIL("validate accepted a broken matrix");
    } catch (const dbsparse::UsageError& e) {
      INFO(std::string(e.what()));
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
  };
  auto m = good;
  m.row_ptr.pop_back();
  expect(m, "row_ptr has");
  m = good;
  m.values.pop_back();
  expect(m, "values");
  m = good;
  m.row_ptr[0] = 1;
  expect(m, "row_ptr[0]");
  m = good;
  m.row_ptr.back() += 1;
  expect(m, "row_ptr[rows]");
  m = good;
  std::swap(m.row_ptr[3], m.row_ptr[4]);
  expect(m, "decreases");
  m = good;
  m.col_idx[0] = 10;
  expect(m, "outside");
  m = good;
  m.col_idx[m.row_ptr[1]] = -1;
  expect(m, "outside");
  m = good;
  m.col_idx[1] = m.col_idx[0];
  expect(m, "sorted");
  m = good;
  m.rows = -1;
  expect(m, "negative");

  auto broken = good;
  broken.col_idx[0] = 99;
  CHECK_THROWS_AS(dbsparse::csr_to_csc(broken), dbsparse::UsageError);
  CHECK_THROWS_AS(dbsparse::transpose(broken), dbsparse::UsageError);
}

TEST_CASE("real matrices in ../shared/matrices read with the catalogue's sizes") {
  const auto files = dbs_test::shared_matrices();
  if (files.empty()) {
    MESSAGE("../shared/matrices not found: real-matrix cases left out");
    return;
  }
  // name -> rows, cols, nnz full (CATALOG.md)
  const std::map<std::string, std::tuple<int, int, int64_t>> catalog = {
      {"bcsstk16", {4884, 4884, 290378}},    {"bcsstk28", {4410, 4410, 219024}},
      {"memplus", {17758, 17758, 126150}},   {"add32", {4960, 4960, 23884}},
      {"cage9", {3534, 3534, 41594}},        {"bayer10", {13436, 13436, 94926}},
      {"mhd3200a", {3200, 3200, 68026}},     {"orani678", {2529, 2529, 90158}},
      {"ani4", {3081, 3081, 20971}},         {"luxembourg_osm", {114599, 114599, 239332}},
      {"bips98_606", {7135, 7135, 34738}},   {"Groebner_id2003_aug", {4967, 2456, 173670}},
      {"rajat01", {6833, 6833, 43250}},      {"ex10hs", {2548, 2548, 57308}},
      {"cit-HepPh", {34546, 34546, 421534}}, {"wiki-Vote", {8297, 8297, 103689}},
      {"Cora", {2708, 2708, 5429}},
  };
  int checked = 0;
  for (const auto& f : files) {
    CAPTURE(f);
    auto m = dbsparse::load_matrix(f);
    CHECK_NOTHROW(dbsparse::validate(m.csr));
    auto it = catalog.find(m.name);
    if (it == catalog.end()) continue;
    auto [rows, cols, nnz] = it->second;
    CHECK(m.csr.rows == rows);
    CHECK(m.csr.cols == cols);
    CHECK(m.csr.nnz() == nnz);
    ++checked;
  }
  for (const char* must : {"bcsstk16", "luxembourg_osm", "Groebner_id2003_aug"}) {
    CAPTURE(must);
    bool present = std::any_of(files.begin(), files.end(),
                               [&](const std::string& f) { return fs::path(f).filename().string().starts_with(must); });
    CHECK(present);
  }
  CHECK(checked >= 3);

  // Symmetric files come out symmetric: A == A^T.
  for (const auto& f : files) {
    if (f.find("bcsstk16") == std::string::npos && f.find("luxembourg_osm") == std::string::npos) continue;
    auto a = dbsparse::read_matrix_market(f);
    CHECK(same(dbsparse::transpose(a), a));
  }
}

// Issue 36: a file read through a pipe (what `<(zcat m.mtx.gz)` gives) is read, not refused; a
// line with no end (/dev/zero) stops at a named limit instead of growing until the host runs out.
TEST_CASE("matrix market: a pipe reads and an endless line is a named InputError") {
  const fs::path fifo = dir() / "pipe.mtx";
  fs::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer(
      [&] { std::ofstream(fifo) << "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1.5\n2 3 -2\n"; });
  const CsrMatrix<double> a = dbsparse::read_matrix_market(fifo.string());
  writer.join();
  CHECK(a.rows == 2);
  CHECK(a.cols == 3);
  CHECK(a.values == std::vector<double>{1.5, -2.0});

  const fs::path endless = dir() / "endless.mtx";
  {
    std::ofstream out(endless, std::ios::binary);
    out << "%%MatrixMarket matrix coordinate real general\n2 2 1\n";
    const std::string chunk(1 << 20, '1');
    for (int i = 0; i < 65; ++i) out << chunk;
  }
  try {
    dbsparse::read_matrix_market(endless.string());
    FAIL("expected an InputError");
  } catch (const dbsparse::InputError& e) {
    CHECK(e.file() == endless.string());
    CHECK(e.line() == 3);
    CHECK(std::string(e.what()).find("64 MiB") != std::string::npos);
  }
  fs::remove(endless);
}

// Issue 36: gzip bytes after the stream were ignored (zlib's gzread does); now an InputError naming
// the file. Members one after another (what `cat a.gz b.gz` gives, and gzip reads) are one file,
// and a gzip file through a pipe reads (gzopen reopened the path, and a pipe had lost its first
// two bytes to the format check).
TEST_CASE("matrix market: gzip members read in turn, trailing bytes refused, a gzip pipe reads") {
  const std::string head = "%%MatrixMarket matrix coordinate real general\n2 3 2\n";
  const auto whole = write_text("gz-whole.mtx", head + "1 1 1.5\n2 3 -2\n");
  const auto gz = (dir() / "gz-whole.mtx.gz").string();
  gzip_file(whole, gz);
  const CsrMatrix<double> want = dbsparse::read_matrix_market(whole);

  const auto trailed = (dir() / "gz-trailed.mtx.gz").string();
  fs::copy_file(gz, trailed, fs::copy_options::overwrite_existing);
  std::ofstream(trailed, std::ios::app | std::ios::binary) << "garbage";
  try {
    dbsparse::read_matrix_market(trailed);
    FAIL("expected an InputError");
  } catch (const dbsparse::InputError& e) {
    CHECK(e.file() == trailed);
    CHECK(std::string(e.what()).find("trailing bytes") != std::string::npos);
  }

  const auto part1 = write_text("gz-part1.mtx", head + "1 1 1.5\n"), part2 = write_text("gz-part2.mtx", "2 3 -2\n");
  gzip_file(part1, part1 + ".gz");
  gzip_file(part2, part2 + ".gz");
  const auto joined = (dir() / "gz-joined.mtx.gz").string();
  {
    std::ofstream out(joined, std::ios::binary);
    for (const auto& f : {part1 + ".gz", part2 + ".gz"}) {
      std::ifstream in(f, std::ios::binary);
      out << in.rdbuf();
    }
  }
  CHECK(same(dbsparse::read_matrix_market(joined), want));

  const fs::path fifo = dir() / "gz-pipe.mtx";
  fs::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] {
    std::ifstream in(gz, std::ios::binary);
    std::ofstream(fifo, std::ios::binary) << in.rdbuf();
  });
  const CsrMatrix<double> piped = dbsparse::read_matrix_market(fifo.string());
  writer.join();
  CHECK(same(piped, want));
  for (const auto& f : {trailed, joined, part1 + ".gz", part2 + ".gz"}) fs::remove(f);
  fs::remove(fifo);
}

// Issue 36: in a symmetric file an entry and its mirror both given were summed silently; entries
// of both triangles at distinct places still read (the cases above).
TEST_CASE("matrix market: a symmetric entry given with its mirror is an InputError") {
  const auto p =
      write_text("both.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 1\n3 3 2\n1 2 4\n");
  try {
    dbsparse::read_matrix_market(p);
    FAIL("expected an InputError");
  } catch (const dbsparse::InputError& e) {
    CHECK(e.line() == 2);
    CHECK(std::string(e.what()).find("(1, 2) and (2, 1)") != std::string::npos);
  }
  const auto up = write_text("upper.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 2 5\n2 2 1\n");
  const CsrMatrix<double> a = dbsparse::read_matrix_market(up);
  CHECK(a.nnz() == 3);
}

// Issue 36: out of host memory while generating or reading is an InputError naming the input (it
// was "internal error: std::bad_alloc"). Run in a child process under a 2 GB address-space limit.
TEST_CASE("matrix loading out of host memory names the input") {
  const auto in_child = [](const std::string& spec, const std::string& needle) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      rlimit lim{size_t{2} << 30, size_t{2} << 30};
      setrlimit(RLIMIT_AS, &lim);
      try {
        dbsparse::load_matrix(spec);
      } catch (const dbsparse::InputError& e) {
        _exit(std::string(e.what()).find(needle) != std::string::npos && std::string(e.what()).find(spec) == 0 ? 0 : 2);
      } catch (...) {
        _exit(3);
      }
      _exit(4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  CHECK(in_child("uniform:n=500000000,d=4", "this host can hold") == 0);
  const auto huge =
      write_text("huge-shape.mtx", "%%MatrixMarket matrix coordinate real general\n2147483647 2147483647 1\n1 1 1\n");
  CHECK(in_child(huge, "row pointers") == 0);
}

// A shape or a generator spec that asks for more host memory than there is fails at once with the
// file (or spec), the line and the sizes: Linux overcommits, so without the check a 2e9 x 2e9
// header with three entries paged a 23 GB host for minutes (issue 36). DBSPARSE_HOST_MEMORY
// stands in for a small host; a bad value is a UsageError.
TEST_CASE("matrix market: a shape past the host's memory is an InputError before any allocation") {
  struct Limit {
    explicit Limit(const char* v) { setenv("DBSPARSE_HOST_MEMORY", v, 1); }
    ~Limit() { unsetenv("DBSPARSE_HOST_MEMORY"); }
  };
  const auto path =
      write_text("huge-shape.mtx",
                 "%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 3\n1 1 1\n2 2 1\n3 3 1\n");
  {
    Limit small("1G");
    try {
      dbsparse::read_matrix_market(path);
      FAIL("no error");
    } catch (const dbsparse::InputError& e) {
      CHECK(e.line() == 2);
      CHECK(std::string(e.what()).find("host") != std::string::npos);
      CHECK(std::string(e.what()).find("24.0 GB") != std::string::npos);
    }
    try {
      dbsparse::load_matrix("uniform:n=300000000,d=1");
      FAIL("no error");
    } catch (const dbsparse::InputError& e) {
      CHECK(e.file() == "uniform:n=300000000,d=1");
      CHECK(std::string(e.what()).find("1.0 GB") != std::string::npos);
    }
    CHECK_THROWS_AS(dbsparse::generate("uniform:n=300000000,d=1"), dbsparse::HostMemoryError);
    // Within the limit: read as before.
    CHECK(dbsparse::generate("uniform:n=1000,d=2").nnz() == 2000);
  }
  {
    Limit bad("lots");
    CHECK_THROWS_AS(dbsparse::generate("uniform:n=1000,d=2"), dbsparse::UsageError);
  }
}

// csr_from_arrays: the CSR a caller's arrays make (the Python package's conversion), every bad
// array named before anything is copied.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/matrix.hpp"

using namespace dbsparse;

namespace {

std::string error_of(int64_t rows, int64_t cols, std::vector<int32_t> ptr, std::vector<int32_t> idx,
                     std::vector<float> val) {
  try {
    (void)csr_from_arrays<float>(rows, cols, ptr, idx, val);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("CsrFromArraysKeepsTheArraysAndNamesTheFirstBadOne") {
  const auto a = csr_from_arrays<float>(3, 4, std::vector<int32_t>{0, 2, 2, 5}, std::vector<int32_t>{0, 3, 0, 1, 2},
                                        std::vector<float>{1, 2, 3, 4, 5});
  CHECK(a.rows == 3);
  CHECK(a.cols == 4);
  CHECK(a.row_ptr == std::vector<int32_t>{0, 2, 2, 5});
  CHECK(a.col_idx == std::vector<int32_t>{0, 3, 0, 1, 2});
  CHECK(a.values == std::vector<float>{1, 2, 3, 4, 5});
  validate(a);
  CHECK(csr_from_arrays<float>(0, 0, std::vector<int32_t>{0}, {}, {}).nnz() == 0);

  CHECK(error_of(-1, 2, {0}, {}, {}).find("shape (-1, 2)") != std::string::npos);
  CHECK(error_of(int64_t{1} << 31, 2, {0}, {}, {}).find("2^31 - 1") != std::string::npos);
  CHECK(error_of(2, 2, {0, 1}, {0}, {1}).find("indptr has 2 entries, the matrix has 2 rows") != std::string::npos);
  CHECK(error_of(1, 2, {0, 1}, {0}, {1, 2}).find("indices has 1 entries, data 2") != std::string::npos);
  CHECK(error_of(1, 2, {1, 1}, {0}, {1}).find("indptr[0] is 1") != std::string::npos);
  CHECK(error_of(2, 2, {0, 2, 1}, {0, 1}, {1, 2}).find("indptr decreases at row 1") != std::string::npos);
  CHECK(error_of(1, 2, {0, 1}, {0, 1}, {1, 2}).find("indptr[-1] is 1, indices has 2") != std::string::npos);
  CHECK(error_of(1, 2, {0, 2}, {0, 2}, {1, 2}).find("indices[1] = 2 is outside 0 .. 1") != std::string::npos);
  CHECK(error_of(1, 2, {0, 1}, {-5}, {1}).find("indices[0] = -5") != std::string::npos);
  // Order within a row is the caller's: kept, and validate() names it.
  const auto u =
      csr_from_arrays<float>(1, 3, std::vector<int32_t>{0, 2}, std::vector<int32_t>{2, 0}, std::vector<float>{1, 2});
  CHECK(u.col_idx == std::vector<int32_t>{2, 0});
  CHECK_THROWS_AS(validate(u), UsageError);
}

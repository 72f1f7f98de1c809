// libFuzzer: the Python package's CSR conversion (csr_from_arrays: SciPy's indptr, indices and
// data as a caller hands them over, lengths and all). Input: rows and cols (int32 each, any sign),
// then the lengths of indptr and indices (uint16 each, data takes indices' length or one more),
// then int32 words for indptr and indices in turn, short arrays padded with zeros. Every input
// is a matrix or a UsageError; a matrix keeps the arrays as given and passes validate() unless
// its columns are out of order or repeated in a row (which validate() must then name).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/matrix.hpp"

namespace {

template <class T>
T take(const uint8_t*& p, const uint8_t* end) {
  T v{};
  const size_t n = std::min<size_t>(sizeof(T), static_cast<size_t>(end - p));
  std::memcpy(&v, p, n);
  p += n;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  const int64_t rows = take<int32_t>(p, end), cols = take<int32_t>(p, end);
  const uint16_t n_ptr = take<uint16_t>(p, end), n_idx = take<uint16_t>(p, end);
  const bool data_longer = (take<uint8_t>(p, end) & 1) != 0;
  std::vector<int32_t> indptr(n_ptr), indices(n_idx);
  for (auto& v : indptr) v = take<int32_t>(p, end);
  for (auto& v : indices) v = take<int32_t>(p, end);
  std::vector<float> values(indices.size() + (data_longer ? 1 : 0), 1.0f);
  try {
    const auto a = dbsparse::csr_from_arrays<float>(rows, cols, indptr, indices, values);
    if (a.rows != rows || a.cols != cols || a.row_ptr != indptr || a.col_idx != indices) __builtin_trap();
    try {
      dbsparse::validate(a);
    } catch (const dbsparse::UsageError&) {
      // Only order within a row can be wrong past csr_from_arrays's checks.
      bool unordered = false;
      for (int32_t r = 0; r < a.rows && !unordered; ++r)
        for (int32_t k = a.row_ptr[r] + 1; k < a.row_ptr[r + 1]; ++k)
          unordered = unordered || a.col_idx[k] <= a.col_idx[k - 1];
      if (!unordered) __builtin_trap();
    }
  } catch (const dbsparse::UsageError&) {
  }
  return 0;
}

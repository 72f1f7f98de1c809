#pragma once
// The SpMM gpu cases' matrices (test_spmm_gpu.cpp, test_spmm_half_gpu.cpp): generated ones and
// hand-made edge shapes (empty windows, M not a multiple of 16, K not a multiple of 8, a ragged
// last window, a row and a window long enough for both atomic second passes).
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dbsparse/generators.hpp"
#include "dbsparse/matrix.hpp"
#include "test_support.hpp"

namespace dbs_test {

inline dbsparse::CsrMatrix<float> spmm_from_entries(int32_t rows, int32_t cols, const std::vector<Entry>& e) {
  return csr_from_entries<float>(rows, cols, e);
}

// Generated matrices and hand-made edge shapes.
inline std::vector<std::pair<std::string, dbsparse::CsrMatrix<float>>> spmm_test_matrices() {
  std::vector<std::pair<std::string, dbsparse::CsrMatrix<float>>> out;
  for (const char* spec : {"uniform:n=1500,d=6", "rmat:scale=10,ef=8", "stencil2d:n=30", "banded:n=700,bw=6",
                           "fem:nodes=600,k=3,blocks=4"})
    out.emplace_back(spec, dbsparse::generate(spec).cast<float>());
  {  // M = 70, K = 50: windows 1, 2 and 4 empty, the last window partial, K not a multiple of 8
    std::vector<std::tuple<int32_t, int32_t, double>> e;
    for (int32_t r : {0, 3, 15, 48, 50, 63, 66, 69})
      for (int32_t c = r % 5; c < 50; c += 2) e.emplace_back(r, c, 1.0 + r * 0.01 - c * 0.02);
    out.emplace_back("empty windows 70x50", spmm_from_entries(70, 50, e));
  }
  {  // M = 45, K = 21, 80% dense: groups at most (f, g), a ragged last window
    std::vector<std::tuple<int32_t, int32_t, double>> e;
    for (int32_t r = 0; r < 45; ++r)
      for (int32_t c = 0; c < 21; ++c)
        if ((r * 7 + c * 3) % 5 != 0) e.emplace_back(r, c, std::sin(r * 21.0 + c));
    out.emplace_back("ragged 45x21", spmm_from_entries(45, 21, e));
  }
  {  // M = 40, K = 3000: row 5 full (past the CSR kernel's first pass at every n) and window 1 with
     // 600 entries a row (past the TC kernel's 32-group first pass at f = 1): both atomic passes
    std::vector<std::tuple<int32_t, int32_t, double>> e;
    for (int32_t c = 0; c < 3000; ++c) e.emplace_back(5, c, std::cos(c * 0.37));
    for (int32_t r = 16; r < 32; ++r)
      for (int32_t c = r; c < 3000; c += 5) e.emplace_back(r, c, 0.5 + std::sin(r * 3.0 + c));
    out.emplace_back("long row and window 40x3000", spmm_from_entries(40, 3000, e));
  }
  return out;
}

}  // namespace dbs_test

#pragma once
// Internal to the generators: one function per matrix kind. generators.cpp parses and range-checks
// the spec; these only build. `spec` is the canonical spec text, for errors only known after drawing.
#include <cstdint>
#include <string>

#include "dbsparse/matrix.hpp"

namespace dbsparse::gen {

CsrMatrix<double> stencil2d(int32_t n);
CsrMatrix<double> stencil3d(int32_t n, int points);
CsrMatrix<double> fem(int32_t nodes, int32_t k, int32_t blocks, uint64_t seed, const std::string& spec);
CsrMatrix<double> banded(int32_t n, int32_t bw);
CsrMatrix<double> uniform(int32_t n, int32_t d, uint64_t seed);
CsrMatrix<double> rmat(int scale, int32_t ef, uint64_t seed, bool scramble = false);
CsrMatrix<double> powerlaw(int32_t n, double avg, double alpha, int32_t max, uint64_t seed, const std::string& spec);
CsrMatrix<double> roadnet(int32_t n, uint64_t seed, const std::string& spec);
CsrMatrix<double> community(int32_t n, int32_t k, double p_in, double p_out, uint64_t seed, bool scramble,
                            const std::string& spec);
CsrMatrix<double> pruned(int32_t rows, int32_t cols, double density, int32_t block, uint64_t seed);

}  // namespace dbsparse::gen

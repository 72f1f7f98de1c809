#pragma once
// Matrix Market I/O and the one entry point every tool uses to get a matrix: a path (.mtx,
// .mtx.gz) or a generator string such as "rmat:scale=20,ef=16,seed=1".
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dbsparse/matrix.hpp"

namespace dbsparse {

// Coordinate real/integer/pattern; general/symmetric/skew-symmetric (expanded to full storage);
// comments; gzip (by magic bytes, so the name need not end in .gz). Duplicates are summed, pattern
// values are 1. Anything else (complex, hermitian, array format, truncated or malformed lines,
// out-of-range indices, counts that disagree with the header, NaN in a pattern file) throws
// InputError with the file, the line number and what was expected.
CsrMatrix<double> read_matrix_market(const std::string& path);

// Writes coordinate real general (or pattern general when pattern is true), 1-based, full precision.
// The write is atomic: a temp file in the same directory, then rename.
void write_matrix_market(const std::string& path, const CsrMatrix<double>& a, bool pattern = false);

// True when spec names a generator ("kind:key=value,...") rather than a file.
bool is_generator_spec(const std::string& spec);

// A path or a generator string. The name is the file stem or the canonical generator string.
NamedMatrix load_matrix(const std::string& spec);

// A label per vertex (`dbsparse contract --labels`, `dbsparse mcl --labels-out`): one integer in
// [0, 2^31-1) per line, in vertex order; blanks around it are allowed, blank lines and lines
// starting with '#' are skipped. Anything else (a sign, a fraction, a second number, a value out of
// range, an unreadable file) throws InputError with the file and the line.
std::vector<int32_t> read_labels(const std::string& path);
// One label per line, in that form. The write is atomic (a temp file, then rename).
void write_labels(const std::string& path, std::span<const int32_t> labels);

}  // namespace dbsparse

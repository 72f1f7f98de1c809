// What the SpMV row bodies read (scalar_row, vector_row, block_row): the members of CsrRows, or
// of abi::SpmvClassifiedArgs, which has the same names. The bodies read them where they use them,
// as the kernels read their own parameters, so a body inlined into either kernel compiles as if
// written there (a copy of each member taken up front made the classified kernel branch twice).
#pragma once

namespace dbs {

// A standalone row kernel's parameters, gathered for its row body. O: the row offsets' type (int,
// or long long past 2^31 entries).
template <typename T, typename O = int>
struct CsrRows {
  const O* row_ptr;
  const int* col_idx;
  const T* vals;
  const T* x;
  T* y;
  T alpha, beta;
};

}  // namespace dbs

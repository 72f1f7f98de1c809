// SDDMM's host/kernel contract (docs/DESIGN.md §10): compiled by the host (runtime/sddmm/) and by
// NVRTC with templates/sddmm/sddmm_csr.cuh.
#pragma once
#include "dbsparse/abi/abi_types.h"

namespace dbsparse::abi {

constexpr int kSddmmMaxK = 512;  // the widest rows of X and Y a plan accepts
constexpr int kSddmmUnroll = 4;  // entries a group keeps in flight (their Y rows loaded together)

// The kernel's only argument, by value: out[e] = alpha * dot(X[row(e), :], Y[col(e), :]) (times
// vals[e] when the key scales), for A's nnz entries e in CSR order. X is rows x k and Y cols x k,
// row-major, and out nnz values, all in the key's value type (f32, or 16-bit words for f16 /
// bf16); vals are f32. A group of lanes takes `tile` consecutive entries (the last group fewer):
// the work is split by entries, so a hub row is shared by many groups. entry_row[e] is entry e's
// row (made on the host at plan time), so a group's entries are independent: finding rows by
// walking row_ptr made each row, empty ones included, a dependent load before the next entry.
struct SddmmArgs {
  const int32_t* col_idx;
  const float* vals;
  const int32_t* entry_row;
  const void* x;
  const void* y;
  void* out;
  int64_t nnz;
  int32_t rows, k;
  int32_t tile;
  float alpha;
};
static_assert(sizeof(SddmmArgs) == 72, "SddmmArgs layout");
static_assert(DBS_ABI_OFFSETOF(SddmmArgs, nnz) == 48 && DBS_ABI_OFFSETOF(SddmmArgs, tile) == 64 &&
                  DBS_ABI_OFFSETOF(SddmmArgs, alpha) == 68,
              "SddmmArgs layout");

}  // namespace dbsparse::abi

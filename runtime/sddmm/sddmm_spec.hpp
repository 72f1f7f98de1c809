#pragma once
// The SDDMM plan's spec: its host decisions (the kernels' keys, one for 4 values a load where k
// allows, one for 1; the tile and the launch shape) from A's sizes, k, the options and the config
// alone. No CUDA: sddmm_plan.cpp materializes it, tests/cpu/ops/test_sddmm_spec.cpp checks it.
// Internal: only runtime/sddmm and the tests include it.
#include <cstdint>
#include <vector>

#include "codegen/keys/sddmm_key.hpp"
#include "dbsparse/sddmm.hpp"

namespace dbsparse::sddmm_detail {

struct SddmmSpec {
  int32_t rows = 0, cols = 0;
  int64_t nnz = 0;
  int k = 1;
  SpmmDtype dtype = SpmmDtype::F32;
  bool scale = false;
  Config config;  // as read (SddmmOptions::config, or the defaults)
  SddmmConfig typed;
  bool vec4 = false;  // k % 4 == 0: key4 too (taken when X and Y are aligned)
  codegen::SddmmKey key1, key4;
  unsigned grid1 = 1, grid4 = 1;  // blocks: ceil(nnz / tile) groups, 32 / lanes a warp
};

SddmmSpec sddmm_spec(int32_t rows, int32_t cols, int64_t nnz, int k, const SddmmOptions& opt, Config config);

// abi::SddmmArgs::entry_row: each entry's row (A's row indices in COO form). O(rows + nnz).
std::vector<int32_t> sddmm_entry_rows(const std::vector<int32_t>& row_ptr, int64_t nnz);

}  // namespace dbsparse::sddmm_detail

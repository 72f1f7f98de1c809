// The SDDMM plan's host decisions (sddmm_spec.hpp): pure host code, no CUDA.
#include "runtime/sddmm/sddmm_spec.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "dbsparse/abi/sddmm.h"

namespace dbsparse::sddmm_detail {
namespace {

unsigned grid_of(const SddmmSpec& s, const codegen::SddmmKey& key) {
  const int64_t groups = (s.nnz + s.typed.tile - 1) / s.typed.tile;
  const int64_t per_block = int64_t{key.warps} * (32 / key.lanes);
  return static_cast<unsigned>(std::max<int64_t>(1, (groups + per_block - 1) / per_block));
}

static_assert(static_cast<int>(SpmmDtype::F32) == static_cast<int>(codegen::SddmmValue::F32) &&
                  static_cast<int>(SpmmDtype::F16) == static_cast<int>(codegen::SddmmValue::F16) &&
                  static_cast<int>(SpmmDtype::BF16) == static_cast<int>(codegen::SddmmValue::BF16),
              "SpmmDtype and codegen::SddmmValue name the same types in the same order");

}  // namespace

SddmmSpec sddmm_spec(int32_t rows, int32_t cols, int64_t nnz, int k, const SddmmOptions& opt, Config config) {
  if (k < 1 || k > abi::kSddmmMaxK)
    throw UsageError(fmt::format("plan_sddmm: k must be in 1 .. {}, got {}", abi::kSddmmMaxK, k));
  SddmmSpec s;
  s.rows = rows;
  s.cols = cols;
  s.nnz = nnz;
  s.k = k;
  s.dtype = opt.dtype;
  s.scale = opt.scale_by_values;
  s.config = std::move(config);
  s.typed = config_from_json<SddmmConfig>(s.config.params);
  s.config.params = config_to_json(s.typed);
  // The groups' count is an int64 over a grid of at most 2^31 - 1 blocks: far past any nnz / tile.
  const auto value = static_cast<codegen::SddmmValue>(s.dtype);
  s.key1 = codegen::sddmm_key_for(k, 1, value, s.scale, s.typed.warps);
  s.grid1 = grid_of(s, s.key1);
  s.vec4 = k % 4 == 0;
  if (s.vec4) {
    s.key4 = codegen::sddmm_key_for(k, 4, value, s.scale, s.typed.warps);
    s.grid4 = grid_of(s, s.key4);
  }
  return s;
}

std::vector<int32_t> sddmm_entry_rows(const std::vector<int32_t>& row_ptr, int64_t nnz) {
  std::vector<int32_t> out(static_cast<size_t>(nnz));
  for (size_t r = 0; r + 1 < row_ptr.size(); ++r)
    std::fill(out.begin() + row_ptr[r], out.begin() + row_ptr[r + 1], static_cast<int32_t>(r));
  return out;
}

}  // namespace dbsparse::sddmm_detail

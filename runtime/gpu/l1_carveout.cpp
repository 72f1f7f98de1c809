#include "runtime/gpu/l1_carveout.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "dbsparse/error.hpp"
#include "runtime/gpu/cuda_driver.hpp"

namespace dbsparse::detail {

CarveoutPolicy carveout_policy() {
  const char* v = std::getenv("DBSPARSE_L1_CARVEOUT");
  const std::string s = v ? v : "";
  if (s.empty() || s == "driver") return CarveoutPolicy::Driver;
  if (s == "max-l1") return CarveoutPolicy::MaxL1;
  throw UsageError("DBSPARSE_L1_CARVEOUT='" + s + "': expected driver (no preference, the default) or max-l1");
}

int carveout_percent(int64_t smem_per_block, int64_t reserved_per_block, int blocks, int64_t shared_per_sm) {
  if (blocks <= 0 || shared_per_sm <= 0) return 0;
  const int64_t need = (std::max<int64_t>(smem_per_block, 0) + std::max<int64_t>(reserved_per_block, 0)) * blocks;
  const int64_t pct = (100 * need + shared_per_sm - 1) / shared_per_sm;
  return static_cast<int>(std::min<int64_t>(pct, 100));
}

int prefer_l1(CUfunction fn, int block_threads, int64_t dynamic_smem, int64_t reserved_per_block,
              int64_t shared_per_sm) {
  if (carveout_policy() == CarveoutPolicy::Driver) return -1;
  // Plans on several threads may share a loaded kernel: its occupancy is read at the largest
  // carveout, so no other thread's preference may land between that and the set.
  static std::mutex mu;
  const std::lock_guard lock(mu);
  int static_smem = 0, blocks = 0;
  DBS_CU(cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn));
  // Occupancy at the largest carveout, so that the preference set below cannot lower the count it
  // is sized for. Even a kernel without shared memory holds the system's reserve a resident block
  // (1 KB on sm_90): a 0% preference could leave room for fewer blocks than its registers allow.
  DBS_CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, CU_SHAREDMEM_CARVEOUT_MAX_SHARED));
  DBS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, block_threads, static_cast<size_t>(dynamic_smem)));
  const int pct = carveout_percent(static_smem + dynamic_smem, reserved_per_block, blocks, shared_per_sm);
  DBS_CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, pct));
  return pct;
}

}  // namespace dbsparse::detail

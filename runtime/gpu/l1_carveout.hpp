#pragma once
// The L1 / shared memory split of the gather kernels: SpMM's CSR rows and SpMV's rows read B's
// rows or x's entries at random, and what L1 keeps of them is what L2 does not have to send. On
// sm_90 L1 and shared memory share 256 KB an SM. With no preference the driver sizes the shared
// part for the most blocks the SM could hold, not for what registers allow. prefer_l1 asks for the
// least shared memory that keeps the occupancy the kernel can reach (about 16 KB): a small, cheap
// gain, measured before it becomes the default (docs/decisions/l1-carveout.md).
//
// DBSPARSE_L1_CARVEOUT: "driver" (the default: no preference) or "max-l1". The default changes
// only with a measurement of both (tools/device/locality_run.sh carveout).
#include <cuda.h>

#include <cstdint>

namespace dbsparse::detail {

enum class CarveoutPolicy { Driver, MaxL1 };

// From DBSPARSE_L1_CARVEOUT; UsageError naming the variable and the two values for anything else.
CarveoutPolicy carveout_policy();

// The carveout (percent of the SM's shared memory, rounded up; the driver rounds up again to a
// size the hardware has) that holds `blocks` resident blocks of smem_per_block bytes each, plus
// the bytes the system reserves a block (which a kernel without shared memory still needs).
int carveout_percent(int64_t smem_per_block, int64_t reserved_per_block, int blocks, int64_t shared_per_sm);

// Under CarveoutPolicy::MaxL1, sets fn's preferred carveout to carveout_percent at the occupancy fn
// reaches with block_threads threads and dynamic_smem bytes a block, and returns it; -1 (nothing
// set) under the driver policy. Idempotent: plans sharing a loaded kernel set the same value.
int prefer_l1(CUfunction fn, int block_threads, int64_t dynamic_smem, int64_t reserved_per_block,
              int64_t shared_per_sm);

}  // namespace dbsparse::detail

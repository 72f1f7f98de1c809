#pragma once
// ReLU as a pass of its own over a C of SpMM's value types: x = max(x, 0) in place (relu_inplace<V>,
// templates/spmm/spmm_rows.cuh, the "relu" entry of every CSR module). One launcher for what needs
// it: SpmmEpilogue::Relu where a plan cannot fuse it, `dbsparse gcn`'s cuSPARSE pipeline and
// `bench spmm --epilogue relu`'s cuSPARSE rows (whose SpMM has no epilogue).
#include <cstdint>

#include "dbsparse/context.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/spmm.hpp"
#include "runtime/gpu/cuda_driver.hpp"

namespace dbsparse::detail {

class ReluPass {
 public:
  ReluPass() = default;
  // count values of x, a grid-stride loop (float4 in f32) of at most 16 blocks an SM.
  ReluPass(CUfunction fn, KernelInfo kernel, SpmmDtype d, long long count, int sm_count);
  void run(uint64_t x, CUstream stream) const;          // enqueues; no allocation, no sync
  const KernelInfo& kernel() const { return kernel_; }  // its module, for a plan's kernels()

 private:
  CUfunction fn_ = nullptr;
  KernelInfo kernel_;
  long long count_ = 0;
  unsigned grid_ = 1;
};

// From the CSR module of d's type with kReluWarps warps a block (loaded, read from the kernel cache
// or compiled once per context, as any module).
ReluPass relu_pass(const Context& ctx, SpmmDtype d, long long count);

}  // namespace dbsparse::detail

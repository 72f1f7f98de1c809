// DB-SpMSpV: the global half of the two-level adaptivity. spmspv_prep builds the x block masks on
// the GPU, lists the push work of the non-empty x blocks, zeroes y and counts into the call's slot;
// spmspv_compute picks the direction from those counts and runs push or pull, over the blocks
// and then over the residual (db_matrix.hpp). No host round trip between them, so plan.run()
// never synchronises.
//
// Macros from the generated source: DBS_DIR (0 auto, 1 push only, 2 pull only),
// DBS_SEMIRING (the device functor: PlusTimes), DBS_HAS_{COO,DENSE,CSR,CSC} (block types present;
// absent ones are compiled out), DBS_PULL_COO_WARP (pull walks COO blocks warp-wide: coo_by_warp).
// Structs and constants shared with the host: include/dbsparse/abi/spmspv.h.
//
// The parts, each in its own file: spmspv_prep.cuh (the mask pass), spmspv_paths.cuh (the blocks'
// push and pull), spmspv_residual.cuh (the residual's), spmspv_sparse_io.cuh (run_sparse_out).
#pragma once
#include "spmspv_paths.cuh"
#include "spmspv_residual.cuh"
#include "spmspv_sparse_io.cuh"

namespace dbs {

// Both paths, after the direction is known. Shared memory lives in the kernels.
template <typename T>
struct ComputeShared {
  T sxs[kWarps][32][16];  // one staged x block per lane: its pull block or its push task
#if DBS_DIR != 1
  T scratch[kWarps][32];  // pull: COO partials of the warp's two segments; residual row sums
#endif
};

// Pull rows write y without atomics only where no other segment, and no residual entry, touches
// their row block (Segment::alone, from the plan), so the two parts may take different directions
// in one call.
template <typename T>
__device__ __forceinline__ void compute_body(const SpmspvArgs<T>& a, ComputeShared<T>& sh, const RunInfo& run) {
  using SR = DBS_SEMIRING<T>;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#if DBS_DIR != 2
  if (run.dir == kDirPush) push_path<T, SR>(a, run.block_tasks, sh.sxs[warp], lane, warp);
#endif
  if (run.res_dir == kDirPush) {
    residual_push_small<T, SR>(a, run.small_tasks, lane, warp);
    residual_push<T, SR>(a, run.residual_tasks, lane, warp);
  }
#if DBS_DIR != 1
  if (run.dir == kDirPull) pull_path<T, SR>(a, sh.sxs[warp], sh.scratch[warp], lane, warp);
  if (run.res_dir == kDirPull) residual_pull<T, SR>(a, sh.scratch[warp], lane, warp);
#endif
}

// One thread reads the call's state and shares it: every thread reading the same few words from
// L2 put tens of thousands of requests on one L2 slice (docs/decisions/spmspv-kernel-design.md).
template <typename T>
__global__ void __launch_bounds__(kWarps * 32, kComputeBlocksPerSm) spmspv_compute(SpmspvArgs<T> a) {
  __shared__ ComputeShared<T> sh;
  __shared__ RunInfo run;
  dbs_pdl_wait();  // prep's counts (a launch with PDL: runtime/spmspv/spmspv_plan.cpp)
  dbs_pdl_trigger();
  if (threadIdx.x == 0) run = begin_compute(a);
  __syncthreads();
  compute_body(a, sh, run);
}

// prep and compute in one cooperative launch: the paper's grid-level synchronisation. Meant to
// save a launch; measured, the cooperative launch plus the barrier cost more than the launch it
// saves (docs/decisions/spmspv-fused-launch.md), so plans use it only when asked
// (SpmspvOptions::fused).
template <typename T>
__global__ void __launch_bounds__(kWarps * 32, kComputeBlocksPerSm) spmspv_fused(SpmspvArgs<T> a) {
  __shared__ PrepShared psh;
  __shared__ ComputeShared<T> csh;
  __shared__ unsigned gen;
  if (threadIdx.x == 0) gen = *(volatile unsigned*)&a.state->gen;
  __syncthreads();
  const unsigned g = gen;
  prep_body(a, psh, a.state->slot, gen);
  clear_next_slot(a.state, g);  // the slot no block of this run touches
  grid_barrier(&a.state->bar_count);
  __shared__ RunInfo run;                        // read by one thread (see spmspv_compute)
  if (threadIdx.x == 0) run = begin_compute(a);  // every block read gen before the barrier
  __syncthreads();
  compute_body(a, csh, run);
}

// run_sparse_out in one launch of one block, for an x whose push work the host bounds as tiny
// (x's nonzeros times the most entries a column block holds): the three launches' bodies in turn,
// with __syncthreads() between them (one block: its global writes are visible to its own threads
// past the barrier, and every ticket's "last block" is this one). Three launches with full-GPU
// grids cost more than the work, a few column blocks, even replayed from a graph
// (docs/decisions/spmspv-sparse-tiny.md).
template <typename T>
__global__ void __launch_bounds__(kWarps * 32, kComputeBlocksPerSm)
    spmspv_sparse_tiny(SpmspvArgs<T> a, const int* idx, const T* val, int n, int* yidx, T* yval, int* ynnz) {
  __shared__ ComputeShared<T> sh;
  __shared__ RunInfo run;
  dbs_pdl_wait();
  dbs_pdl_trigger();
  sparse_prep_body(a, idx, val, n);
  __syncthreads();
  if (threadIdx.x == 0) run = begin_compute(a);
  __syncthreads();
  compute_body(a, sh, run);
  __syncthreads();
  sparse_finish_body(a, idx, n, yidx, yval, ynnz);
}

// Scatter for x given as (index, value) pairs, into the plan's dense x (kept all-zero between
// runs); spmspv_unscatter restores the zeros afterwards.
template <typename T>
__global__ void spmspv_scatter(const int* idx, const T* val, int n, T* xd) {
  dbs_pdl_wait();
  dbs_pdl_trigger();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) xd[idx[i]] = val[i];
}
template <typename T>
__global__ void spmspv_unscatter(const int* idx, int n, T* xd) {
  dbs_pdl_wait();
  dbs_pdl_trigger();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) xd[idx[i]] = T(0);
}

}  // namespace dbs

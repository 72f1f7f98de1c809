// run_sparse_out's first and last launches: x as pairs in, y as pairs out. Included by spmspv.cuh.
#pragma once
#include "spmspv_prep.cuh"

namespace dbs {

// run_sparse_out, first launch: x's (index, value) pairs into the workspace's dense x and x masks
// (both all-zero between such calls); the first index of each x block, found by the atomicOr that
// sets the first bit of the block, lists the block's push work. Both parts push: the cost follows
// x's nonzeros, with no pass over all columns. The counts go to the call's slot (as spmspv_prep).
template <typename T>
__device__ __forceinline__ void sparse_prep_body(const SpmspvArgs<T>& a, const int* idx, const T* val, int n) {
  SpmspvState* st = a.state;
  __shared__ unsigned g;
  if (threadIdx.x == 0) g = *(volatile unsigned*)&st->gen;
  __syncthreads();
  SpmspvCounters* cnt = st->slot + g;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int c = idx[i], b = c >> 4;
    const_cast<T*>(a.x)[c] = val[i];
    const unsigned shift = 16u * (unsigned)(b & 1);
    const unsigned old = atomicOr(reinterpret_cast<unsigned*>(a.xmask) + (b >> 1), 1u << ((c & 15) + shift));
    if (((old >> shift) & 0xffffu) != 0u) continue;
    atomicAdd(&cnt->nonempty, 1u);
#if DBS_DIR != 2
    const unsigned bfirst = (unsigned)a.blk_col_ptr[b], bend = (unsigned)a.blk_col_ptr[b + 1];
    const unsigned nb = (bend - bfirst + kPushChunk - 1) / kPushChunk;
    if (nb) write_block_tasks(a, b, bfirst, bend, atomicAdd(&cnt->block_tasks, nb));
#endif
    const unsigned rcount = (unsigned)(a.res_col_ptr[b + 1] - a.res_col_ptr[b]);
    if (rcount != 0u && rcount <= (unsigned)kResidualSmall) {
      write_residual_tasks(a.small_tasks, b, 1u, atomicAdd(&cnt->small_tasks, 1u));
    } else if (rcount) {
      const unsigned nr = (rcount + kResidualChunk - 1) / kResidualChunk;
      write_residual_tasks(a.residual_tasks, b, nr, atomicAdd(&cnt->residual_tasks, nr));
    }
  }
  clear_next_slot(st, g);
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32)
    spmspv_sparse_prep(SpmspvArgs<T> a, const int* idx, const T* val, int n) {
  dbs_pdl_wait();
  dbs_pdl_trigger();
  sparse_prep_body(a, idx, val, n);
}

// run_sparse_out, last launch: a warp per row block that push touched writes its nonzero rows as
// (index, value) pairs (in no particular order) and resets them in the dense accumulator; x, its
// masks and the touched bits go back to zero. The last block writes the count.
template <typename T>
__device__ __forceinline__ void sparse_finish_body(const SpmspvArgs<T>& a, const int* xidx, int n, int* yidx, T* yval,
                                                   int* ynnz) {
  SpmspvState* st = a.state;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int c = xidx[i];
    const_cast<T*>(a.x)[c] = T(0);
    reinterpret_cast<unsigned*>(a.xmask)[c >> 5] = 0u;  // every bit in the word is this call's
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned count = *(volatile unsigned*)&st->ycount;
  for (unsigned k = blockIdx.x * kWarps + warp; k < count; k += gridDim.x * kWarps) {
    const int rb = a.ylist[k];
    if (lane == 0) atomicAnd(a.ytouched + (rb >> 5), ~(1u << (rb & 31)));
    const int row = rb * 16 + lane;
    const T v = lane < 16 && row < a.rows ? a.y[row] : T(0);
    const unsigned nz = __ballot_sync(kFull, v != T(0));
    unsigned base = 0;
    if (lane == 0 && nz) base = atomicAdd(&st->yout, (unsigned)__popc(nz));
    base = __shfl_sync(kFull, base, 0);
    if (v != T(0)) {
      const unsigned at = base + __popc(nz & ((1u << lane) - 1u));
      yidx[at] = row;
      yval[at] = v;
      a.y[row] = T(0);
    }
  }
  __syncthreads();
  // The last block writes the count and resets the output counters for the next call.
  if (threadIdx.x == 0 && last_block_to_arrive(&st->finish_ticket)) {
    *ynnz = (int)*(volatile unsigned*)&st->yout;
    st->ycount = 0;
    st->yout = 0;
  }
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32)
    spmspv_sparse_finish(SpmspvArgs<T> a, const int* xidx, int n, int* yidx, T* yval, int* ynnz) {
  dbs_pdl_wait();
  dbs_pdl_trigger();
  sparse_finish_body(a, xidx, n, yidx, yval, ynnz);
}

}  // namespace dbs

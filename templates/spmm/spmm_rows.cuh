// SpMM's CUDA-core kernels, C = alpha * A * B + beta * C with A in CSR and B, C dense row-major:
// csr_spmm_rows (the whole product: the fallback path and the ablation's baseline; csr_spmm_rows16
// in f16 / bf16), brp_residual (the rows BRP leaves to CUDA cores, added into C after the TC
// kernel), spmm_finalize16 (16 bits: C of the rows and windows cut into pieces, from their f32 sums). A warp per row, lanes over N
// (csr_spmm_rows: LANES lanes over N, 32 / LANES subgroups over the row's entries): VEC = 4 reads B
// and C four values at a time (load4: float4, or 8 bytes in f16 / bf16; n % 4 == 0 and B and C
// aligned to that size; the plan checks), VEC = 1 as scalars. V is the value type of A, B and C
// (value_types.cuh); every sum is f32, and a 16-bit C is rounded once per store.
#pragma once
#include "dbs_common.cuh"
#include "dbsparse/abi/spmm.h"
#include "value_types.cuh"

namespace dbs {

// One warp's product of CSR entries [p0, p1) with B at columns n .. n + VEC - 1 (the lane's part;
// live: those columns exist). The warp is 32 / LANES subgroups of LANES lanes: subgroup s takes
// entries s, s + S, s + 2S, ... and its lanes cover LANES * VEC columns, so that at n = 32 with
// float4 a warp keeps 4 rows of B in flight per step instead of 1 (a warp per row and 32 scalar
// lanes were latency-bound: docs/decisions/spmm-kernel-design.md). The entries are read
// 32 at a time, one per lane, and broadcast by shuffles: one coalesced load per 32 entries. The
// subgroups' partial sums are left apart: warp_sum_subgroups adds them.
// G < 32 (SpmmConfig::csr_rows_per_warp): the warp is 32 / G groups of G lanes, each on a row of
// its own, with shuffles masked to the group (the groups' rows differ in length, so their loops
// do too); everything above holds within a group, G entries read at a time.
template <int G>
__device__ __forceinline__ unsigned group_mask(unsigned lane) {
  if constexpr (G == 32)
    return kFull;
  else
    return ((1u << G) - 1u) << (lane & ~(unsigned)(G - 1));
}

// I: the entry index, int or long long (64-bit row offsets: csr_spmm_rows64).
template <typename V, int VEC, int LANES, int G = 32, typename I = int>
__device__ __forceinline__ void row_times_b(const dbsparse::abi::SpmmArgs& a, I p0, I p1, int n, bool live,
                                            unsigned lane, float (&acc)[VEC]) {
  typedef typename V::S T;
  static_assert(LANES <= G && G <= 32, "a group holds its lanes across N");
  constexpr int S = G / LANES;
  const int gl = (int)lane % G, gbase = (int)lane - gl;
  const unsigned mask = group_mask<G>(lane);
  const int sub = gl / LANES;
  const T* vals = reinterpret_cast<const T*>(a.vals);
  const T* bm = reinterpret_cast<const T*>(a.b);
#pragma unroll
  for (int v = 0; v < VEC; ++v) acc[v] = 0.0f;
  for (I base = p0; base < p1; base += G) {
    const I p = base + gl;
    const int col = p < p1 ? a.col_idx[p] : 0;
    const float val = p < p1 ? V::ld(vals[p]) : 0.0f;
    const int here = p1 - base < G ? (int)(p1 - base) : G;
    const int steps = (here + S - 1) / S;
    // Batches of KB steps, every load of a batch issued before its first FMA: a row of fewer than
    // 8 steps used to run `#pragma unroll 8`'s remainder loop, one B load in flight a warp and
    // an L2 round trip a step (docs/decisions/spmm-kernel-design.md). Slots past the row's end load
    // nothing and add exact zeros (not 0 * B[0][n], which is NaN where B holds an inf).
    constexpr int KB = VEC == 4 ? 4 : 8;
    for (int j0 = 0; j0 < steps; j0 += KB) {
      float bv[KB][VEC];
      float vk[KB];
#pragma unroll
      for (int k = 0; k < KB; ++k) {
        const int j = j0 + k;
        const int e = j * S + sub;  // the entry's slot in this chunk of G
        const int cj = __shfl_sync(mask, col, gbase + (e & (G - 1)));
        const float vj = __shfl_sync(mask, val, gbase + (e & (G - 1)));
        const bool on = live && e < here;
        vk[k] = on ? vj : 0.0f;
        const T* src = bm + (size_t)(on ? cj : 0) * a.n + (on ? n : 0);
        if constexpr (VEC == 4) {
          if (on)
            load4<V>(src, bv[k]);
          else
            bv[k][0] = bv[k][1] = bv[k][2] = bv[k][3] = 0.0f;
        } else {
          bv[k][0] = on ? V::ld(__ldg(src)) : 0.0f;
        }
      }
#pragma unroll
      for (int k = 0; k < KB; ++k)
#pragma unroll
        for (int v = 0; v < VEC; ++v) acc[v] += vk[k] * bv[k][v];
    }
  }
}

// Adds the subgroups' sums: afterwards subgroup 0's lanes (lane % G < LANES) hold the row's.
template <int VEC, int LANES, int G = 32>
__device__ __forceinline__ void warp_sum_subgroups(float (&acc)[VEC], unsigned lane = 0) {
  const unsigned mask = group_mask<G>(lane);
#pragma unroll
  for (int off = LANES; off < G; off <<= 1)
#pragma unroll
    for (int v = 0; v < VEC; ++v) acc[v] += __shfl_xor_sync(mask, acc[v], off);
}

// The group's sum of entries [p0, p1) at the lane's columns of the block from n0, held by the
// group's lanes below LANES; returns the lane's first column (live when it is below n).
template <typename V, int VEC, int LANES, int G = 32, typename I = int>
__device__ __forceinline__ int row_sum_block(const dbsparse::abi::SpmmArgs& a, I p0, I p1, int n0, unsigned lane,
                                             float (&acc)[VEC]) {
  const int n = n0 + ((int)lane % LANES) * VEC;
  row_times_b<V, VEC, LANES, G>(a, p0, p1, n, n < a.n, lane, acc);
  warp_sum_subgroups<VEC, LANES, G>(acc, lane);
  return n;
}

// The epilogue of a final store (SpmmArgs::relu): max(v, 0), NaN kept (as relu_inplace), so that a
// broken product still shows.
__device__ __forceinline__ float epilogue(const dbsparse::abi::SpmmArgs& a, float v) {
  return a.relu && v < 0.0f ? 0.0f : v;
}

// C's VEC entries at `out` = alpha * acc + beta * C (beta == 0 never reads C, so NaNs there do not
// survive), through the epilogue.
template <typename V, int VEC>
__device__ __forceinline__ void store_c(const dbsparse::abi::SpmmArgs& a, typename V::S* out, const float (&acc)[VEC]) {
  if constexpr (VEC == 4) {
    float v4[4] = {a.alpha * acc[0], a.alpha * acc[1], a.alpha * acc[2], a.alpha * acc[3]};
    if (a.beta != 0.0f) {
      float old[4];
      load4_rw<V>(out, old);
#pragma unroll
      for (int v = 0; v < 4; ++v) v4[v] += a.beta * old[v];
    }
#pragma unroll
    for (int v = 0; v < 4; ++v) v4[v] = epilogue(a, v4[v]);
    store4<V>(out, v4);
  } else {
    *out = V::st(epilogue(a, a.beta == 0.0f ? a.alpha * acc[0] : a.alpha * acc[0] + a.beta * V::ld(*out)));
  }
}

// C = alpha * A * B + beta * C, a warp per row of A, plain stores (each C entry has one writer).
// beta == 0 never reads C, so NaNs there do not survive.
// PIECES: the second pass over long rows' entries past the first max_run (a.pieces: row, begin,
// end), added with atomics after the first pass stored every row: one warp walking a hub row
// alone outlasted the rest of the product (docs/decisions/spmm-kernel-design.md).
// 16 bits (csr_spmm_rows16): a cut row's first pass and pieces go to its f32 workspace row
// (abi::SpmmAcc) unscaled, and spmm_finalize16 writes C; f32 adds the pieces into C itself.
// R rows a warp (SpmmConfig::csr_rows_per_warp; 1 for the pieces): group g of the warp's R groups
// of 32 / R lanes takes unit u * R + g, so that a warp of short rows (a graph's tail, most of its
// rows) keeps R rows' loads in flight and pays its fixed costs once for R rows.
template <typename V, int WARPS, int VEC, int LANES, bool PIECES, int R = 1>
__device__ __forceinline__ void csr_unit(const dbsparse::abi::SpmmArgs& a, const dbsparse::abi::SpmmAcc& w, int u,
                                         unsigned lane) {
  typedef typename V::S T;
  constexpr bool kHalf = sizeof(T) == 2;
  constexpr int G = 32 / R;
  static_assert(!PIECES || R == 1, "a piece takes a whole warp");
  if constexpr (R > 1) {
    u = u * R + (int)lane / G;
    if (u >= a.rows) return;  // the last warp's spare groups (their shuffles are masked to them)
  }
  // A reordered plan's unit u takes row a.row_id[u] (SpmmConfig::reorder): the work's order
  // changes, A and C stay as they are.
  const int r = PIECES ? a.pieces[3 * u] : a.row_id ? a.row_id[u] : u;
  const int p0 = PIECES ? a.pieces[3 * u + 1] : a.row_ptr[r];
  const int end = PIECES ? a.pieces[3 * u + 2] : a.row_ptr[r + 1];
  if (!PIECES && a.n_parts && end - p0 > a.max_run) return;  // split: the row's parts take it
  const int p1 = min(end, p0 + a.max_run);
  T* crow = reinterpret_cast<T*>(a.c) + (size_t)r * a.n;
  float* wrow = nullptr;  // 16 bits: the row's workspace row when the row is cut (every piece's row is)
  if constexpr (kHalf) {
    const int s = w.slot ? w.slot[r] : -1;
    if (s >= 0) wrow = w.w + (size_t)s * a.n;
  }
  const bool writer = (int)lane % G < LANES;
  for (int n0 = 0; n0 < a.n; n0 += LANES * VEC) {
    float acc[VEC];
    const int n = row_sum_block<V, VEC, LANES, G>(a, p0, p1, n0, lane, acc);
    if (n >= a.n || !writer) continue;
    if constexpr (PIECES) {
#pragma unroll
      for (int v = 0; v < VEC; ++v) {
        if constexpr (kHalf)
          atomicAdd(wrow + n + v, acc[v]);
        else
          atomicAdd(crow + n + v, a.alpha * acc[v]);
      }
    } else if (kHalf && wrow) {
#pragma unroll
      for (int v = 0; v < VEC; ++v) wrow[n + v] = acc[v];  // the pieces pass adds to this, after it
    } else {
      store_c<V, VEC>(a, crow + n, acc);
    }
  }
}

// 64-bit row offsets (plan_spmm of a DeviceCsrView64, f32): R rows a warp as in csr_unit, none cut
// (a long row stays with its group: no host analysis of the offsets); unit k takes row
// a.row_id[k] when the plan made the degree order on the device (longest rows first), else row k.
template <typename V, int WARPS, int VEC, int LANES, int R = 1>
__global__ void __launch_bounds__(WARPS * 32)
    csr_spmm_rows64(const dbsparse::abi::SpmmArgs a, const long long* __restrict__ row_ptr) {
  static_assert(sizeof(typename V::S) == 4, "64-bit offsets: f32 only");
  constexpr int G = 32 / R;
  const unsigned lane = threadIdx.x & 31u;
  const int units = (a.rows + R - 1) / R;
  // warp-uniform bounds; a spare group past the last row leaves (its shuffles are masked to it)
  for (int u = (int)blockIdx.x * WARPS + (int)(threadIdx.x >> 5); u < units; u += (int)gridDim.x * WARPS) {
    const int k = u * R + (int)lane / G;
    if (k >= a.rows) continue;
    const int r = a.row_id ? a.row_id[k] : k;
    const long long p0 = row_ptr[r], p1 = row_ptr[r + 1];
    float* crow = a.c + (size_t)r * a.n;
    for (int n0 = 0; n0 < a.n; n0 += LANES * VEC) {
      float acc[VEC];
      const int n = row_sum_block<V, VEC, LANES, G>(a, p0, p1, n0, lane, acc);
      if (n < a.n && (int)lane % G < LANES) store_c<V, VEC>(a, crow + n, acc);
    }
  }
}

// A warp per unit (row, or piece), units strided by the grid's warps: a grid of one warp a unit
// runs each once; a grid sized to what is resident (SpmmConfig::csr_blocks_per_sm) keeps every
// warp busy to the end instead of holding a block's registers while its one long row finishes
// (docs/decisions/spmm-kernel-design.md).
// The pieces pass with a.piece_reduce: a block's warps take consecutive pieces (a hub row's come
// together: spmm_cut_pieces cuts row by row), add their sums in shared memory by row, and the
// first warp of each row's run adds the total to C (or the 16-bit workspace) once. Block-uniform
// loops: every warp reaches each __syncthreads, those past the last piece with an empty range.
template <typename V, int WARPS, int VEC, int LANES>
__device__ __forceinline__ void csr_pieces_reduced(const dbsparse::abi::SpmmArgs& a, const dbsparse::abi::SpmmAcc& w) {
  typedef typename V::S T;
  constexpr bool kHalf = sizeof(T) == 2;
  constexpr int kCols = LANES * VEC;
  __shared__ float part[WARPS][kCols];
  __shared__ int prow[WARPS];
  const unsigned lane = threadIdx.x & 31u;
  const int warp = (int)(threadIdx.x >> 5);
  for (int base = (int)blockIdx.x * WARPS; base < a.n_pieces; base += (int)gridDim.x * WARPS) {
    const int u = base + warp;
    const bool has = u < a.n_pieces;
    const int r = has ? a.pieces[3 * u] : -1;
    const int p0 = has ? a.pieces[3 * u + 1] : 0, p1 = has ? a.pieces[3 * u + 2] : 0;
    if (lane == 0) prow[warp] = r;
    T* crow = nullptr;
    float* wrow = nullptr;
    if (has) {
      crow = reinterpret_cast<T*>(a.c) + (size_t)r * a.n;
      if constexpr (kHalf) wrow = w.w + (size_t)w.slot[r] * a.n;  // every piece's row is cut
    }
    for (int n0 = 0; n0 < a.n; n0 += kCols) {
      const int col = ((int)lane % LANES) * VEC;
      const int n = n0 + col;
      const bool live = n < a.n;
      float acc[VEC];
      row_times_b<V, VEC, LANES>(a, p0, p1, n, live, lane, acc);
      warp_sum_subgroups<VEC, LANES>(acc);
      if ((int)lane < LANES) {
#pragma unroll
        for (int v = 0; v < VEC; ++v) part[warp][col + v] = acc[v];
      }
      __syncthreads();
      if (has && (int)lane < LANES && live && (warp == 0 || prow[warp - 1] != r)) {
        float sum[VEC];
#pragma unroll
        for (int v = 0; v < VEC; ++v) sum[v] = part[warp][col + v];
        for (int k = warp + 1; k < WARPS && prow[k] == r; ++k)
#pragma unroll
          for (int v = 0; v < VEC; ++v) sum[v] += part[k][col + v];
#pragma unroll
        for (int v = 0; v < VEC; ++v) {
          if constexpr (kHalf)
            atomicAdd(wrow + n + v, sum[v]);
          else
            atomicAdd(crow + n + v, a.alpha * sum[v]);
        }
      }
      __syncthreads();
    }
  }
}

// Whether this warp's part of split row s finished last of the row's `count` parts (the same
// answer in every lane): that warp merges the parts. The fences make each part's stores visible
// before its count (the writer's) and the count before the reads (the last arriver's); the reads
// go around L1 (__ldcg), which is not coherent across SMs.
__device__ __forceinline__ bool last_row_part(const dbsparse::abi::SpmmArgs& a, int s, int count, unsigned lane) {
  __threadfence();
  __syncwarp();
  unsigned last = 0;
  if (lane == 0) last = atomicAdd(a.part_count + s, 1u) == (unsigned)(count - 1);
  if (!__shfl_sync(kFull, last, 0)) return false;
  __threadfence();
  return true;
}

// Part q of a split row (SpmmArgs::parts, f32): its sum to part_sum, and the row's last part to
// arrive adds every part's sum in part order and writes C.
template <typename V, int VEC, int LANES>
__device__ __forceinline__ void csr_part(const dbsparse::abi::SpmmArgs& a, int q, unsigned lane) {
  typedef typename V::S T;
  const int r = a.parts[4 * q], p0 = a.parts[4 * q + 1], p1 = a.parts[4 * q + 2], s = a.parts[4 * q + 3];
  float* mine = a.part_sum + (size_t)q * a.n;
  for (int n0 = 0; n0 < a.n; n0 += LANES * VEC) {
    float acc[VEC];
    const int n = row_sum_block<V, VEC, LANES>(a, p0, p1, n0, lane, acc);
    if (n < a.n && (int)lane < LANES) {
#pragma unroll
      for (int v = 0; v < VEC; ++v) mine[n + v] = acc[v];
    }
  }
  const int first = a.part_first[s], count = a.part_first[s + 1] - first;
  if (!last_row_part(a, s, count, lane)) return;
  T* crow = reinterpret_cast<T*>(a.c) + (size_t)r * a.n;
  for (int n = (int)lane; n < a.n; n += 32) {
    float sum = 0.0f;
    for (int k = 0; k < count; ++k) sum += __ldcg(a.part_sum + (size_t)(first + k) * a.n + n);
    crow[n] = V::st(epilogue(a, a.beta == 0.0f ? a.alpha * sum : a.alpha * sum + a.beta * V::ld(crow[n])));
  }
  if (lane == 0) a.part_count[s] = 0;  // ready for the next call (the stream orders calls)
}

template <typename V, int WARPS, int VEC, int LANES, bool PIECES, int R>
__device__ __forceinline__ void csr_rows_body(const dbsparse::abi::SpmmArgs& a, const dbsparse::abi::SpmmAcc& w) {
  if constexpr (PIECES) {
    if (a.piece_reduce) {
      csr_pieces_reduced<V, WARPS, VEC, LANES>(a, w);
      return;
    }
  }
  const unsigned lane = threadIdx.x & 31u;
  // Split (f32): the parts of long rows first, so that the longest work starts first.
  const int parts = PIECES ? 0 : a.n_parts;
  const int units = PIECES ? a.n_pieces : parts + (a.rows + R - 1) / R;
  const int stride = (int)gridDim.x * WARPS;
  // warp-uniform bounds: the shuffles inside see whole warps
  for (int u = (int)blockIdx.x * WARPS + (int)(threadIdx.x >> 5); u < units; u += stride) {
    if constexpr (!PIECES) {
      if (u < parts) {
        csr_part<V, VEC, LANES>(a, u, lane);
        continue;
      }
    }
    csr_unit<V, WARPS, VEC, LANES, PIECES, PIECES ? 1 : R>(a, w, u - parts, lane);
  }
}

// The f32 entry point: one argument, as f32 modules (and their cached cubins) have always had.
// R: rows a warp (csr_unit); 1, the default, is the name every key before it has.
template <typename V, int WARPS, int VEC, int LANES, bool PIECES, int R = 1>
__global__ void __launch_bounds__(WARPS * 32) csr_spmm_rows(const dbsparse::abi::SpmmArgs a) {
  static_assert(sizeof(typename V::S) == 4, "16-bit values: csr_spmm_rows16");
  csr_rows_body<V, WARPS, VEC, LANES, PIECES, R>(a, dbsparse::abi::SpmmAcc{});
}

// f16 / bf16: w says which rows are cut (all null when none is).
template <typename V, int WARPS, int VEC, int LANES, bool PIECES, int R = 1>
__global__ void __launch_bounds__(WARPS * 32)
    csr_spmm_rows16(const dbsparse::abi::SpmmArgs a, const dbsparse::abi::SpmmAcc w) {
  static_assert(sizeof(typename V::S) == 2, "f32 values: csr_spmm_rows");
  csr_rows_body<V, WARPS, VEC, LANES, PIECES, R>(a, w);
}

// C = alpha * w + beta * C for the cut units' entries, after every pass that adds into w (same
// stream): the one rounding of those entries to 16 bits, and the only place beta is applied to
// them (the first pass left them alone). BRP's residual rows add into C after this.
// beta == 0 never reads C, so NaNs there do not survive.
template <typename V>
__global__ void __launch_bounds__(dbsparse::abi::kSpmmFinalizeThreads)
    spmm_finalize16(const dbsparse::abi::SpmmArgs a, const dbsparse::abi::SpmmAcc w) {
  typedef typename V::S T;
  T* cm = reinterpret_cast<T*>(a.c);
  const long long total = (long long)w.n_units * w.unit_rows * a.n;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const long long wr = i / a.n;
    const int col = (int)(i - wr * a.n);
    const int row = w.units[wr / w.unit_rows] * w.unit_rows + (int)(wr % w.unit_rows);
    if (row >= a.m) continue;  // the last window's rows past m
    T* out = cm + (size_t)row * a.n + col;
    const float v = a.alpha * w.w[i];
    *out = V::st(epilogue(a, a.beta == 0.0f ? v : v + a.beta * V::ld(*out)));
  }
}

// C[row_id[r]] += alpha * (residual row r) * B, a warp per residual row, after brp_tc_windows has
// written every C entry (same stream): each entry has one writer here, so no atomics.
// A 16-bit C, which the TC kernel has already rounded, is read, added to and rounded again: two
// roundings of each entry of a residual row (2^-9 relative each in bf16, inside the 1e-2 tolerance).
template <typename V, int WARPS, int VEC>
__global__ void __launch_bounds__(WARPS * 32) brp_residual(const dbsparse::abi::SpmmArgs a) {
  typedef typename V::S T;
  const unsigned lane = threadIdx.x & 31u;
  const int r = (int)blockIdx.x * WARPS + (int)(threadIdx.x >> 5);
  if (r >= a.rows) return;
  const int p0 = a.row_ptr[r], p1 = a.row_ptr[r + 1];
  T* crow = reinterpret_cast<T*>(a.c) + (size_t)a.row_id[r] * a.n;
  for (int n0 = 0; n0 < a.n; n0 += 32 * VEC) {
    const int n = n0 + (int)lane * VEC;
    const bool live = n < a.n;
    float acc[VEC];
    row_times_b<V, VEC, 32>(a, p0, p1, n, live, lane, acc);
    if (live) {
#pragma unroll
      for (int v = 0; v < VEC; ++v) crow[n + v] = V::st(V::ld(crow[n + v]) + a.alpha * acc[v]);
    }
  }
}

// x = max(x, 0) on `count` values of V in place: the ReLU between the layers of a GNN forward pass
// (`dbsparse gcn`), applied to an SpMM's C by cuSPARSE's pipeline, and SpmmEpilogue::Relu's pass
// where a plan cannot fuse it (several kernels add into C). It lives in the CSR module
// (spmm.csr.*), as bfs_dense_update lives in the BFS one, rather than in a key family of its own
// for one elementwise kernel. f32: float4 when x is 16-byte aligned, the tail by scalars; 16 bits
// by scalars. NaN stays NaN (not fmaxf's 0), so a broken product upstream still shows in the check.
template <typename V, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) relu_inplace(typename V::S* x, long long count) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if constexpr (sizeof(typename V::S) != 4) {
    for (long long i = t; i < count; i += stride)
      if (V::ld(x[i]) < 0.0f) x[i] = V::st(0.0f);
  } else {
    long long done = 0;
    if ((reinterpret_cast<unsigned long long>(x) & 15ull) == 0) {
      float4* x4 = reinterpret_cast<float4*>(x);
      const long long quads = count / 4;
      for (long long i = t; i < quads; i += stride) {
        float4 v = x4[i];
        v.x = v.x < 0.0f ? 0.0f : v.x;
        v.y = v.y < 0.0f ? 0.0f : v.y;
        v.z = v.z < 0.0f ? 0.0f : v.z;
        v.w = v.w < 0.0f ? 0.0f : v.w;
        x4[i] = v;
      }
      done = quads * 4;
    }
    for (long long i = done + t; i < count; i += stride) {
      const float v = x[i];
      x[i] = v < 0.0f ? 0.0f : v;
    }
  }
}

}  // namespace dbs

// decode_tiles: y = W · x on the tensor cores from the tile bitmap layout (runtime/decode/tile_layout.hpp):
// the weights-only mapping, where every column is read whatever x is. Each 16-row tile is cut into
// chunks of 256 columns (16 m16n8k16 steps); in a chunk, lane (g, t) = (lane / 4, lane % 4) owns 8
// slots a step, rows g and g + 8 of columns 32p + 8t + 4h + 0..3 (step 2p + h), in the order of its A
// fragment. A chunk holds each lane's 128 mask bits (4 words, one 16-byte load a lane) and its kept
// values, lane after lane, in slot order.
// Why: the column bitmap's lanes-across-rows kernel spends ~7.5 instructions a weight slot (shift,
// test, popcount, address, load, convert, fma), near the issue rate the bandwidth leaves it; here a
// slot costs a predicated shared load and a pointer step where it is kept, the products go to the
// tensor cores, and x arrives as one 16-byte load per two steps (docs/decisions/decode-kernel-design.md).
#pragma once
#include "decode_strip.cuh"
#include "mma16.cuh"

namespace dbs {

constexpr int kTileSteps = 16, kTileChunkCols = 16 * kTileSteps;
constexpr int kTileBatch = 8;  // rows of x one call takes: the columns of an m16n8k16's B

__device__ __forceinline__ unsigned tiles_lds16(unsigned addr) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
  return v;
}

// Two slots of an A-fragment register (mask bits `bit` and `bit << 1` of `word`): each the lane's
// next value where its bit is set, else 0.
__device__ __forceinline__ unsigned tiles_take2(unsigned& at, unsigned word, unsigned bit) {
  unsigned lo = 0, hi = 0;
  if (word & bit) {
    lo = tiles_lds16(at);
    at += 2;
  }
  if (word & (bit << 1)) {
    hi = tiles_lds16(at);
    at += 2;
  }
  return __byte_perm(lo, hi, 0x5410);
}

// One chunk's 16 steps: `at` is the lane's first value in shared memory, `xv` its 16 bytes of x for
// step pair 0 (pair p at xv + 4p). GUARD: the chunk passes the last column (x read only below
// `cols`, a multiple of 8, and 0 past it) or x is thresholded at th > 0.
template <typename V, bool GUARD>
__device__ __forceinline__ void tiles_chunk(float (&d)[4], const uint4& mk, unsigned at, const uint4* xv, int col,
                                            int cols, float th) {
  const auto keep2 = [th](unsigned v) {
    const float lo = V::ld((typename V::S)(v & 0xFFFFu)), hi = V::ld((typename V::S)(v >> 16));
    return v & ((fabsf(lo) >= th ? 0xFFFFu : 0u) | (fabsf(hi) >= th ? 0xFFFF0000u : 0u));
  };
#pragma unroll
  for (int p = 0; p < kTileSteps / 2; ++p) {
    uint4 xx;
    if (GUARD) {
      xx = col + 32 * p < cols ? __ldg(xv + 4 * p) : make_uint4(0, 0, 0, 0);
      if (th > 0.0f) xx = make_uint4(keep2(xx.x), keep2(xx.y), keep2(xx.z), keep2(xx.w));
    } else {
      xx = __ldg(xv + 4 * p);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = 2 * p + h;
      const unsigned w = j < 4 ? mk.x : j < 8 ? mk.y : j < 12 ? mk.z : mk.w;
      const unsigned sh = 8u * (unsigned)(j & 3);
      uint4 a;
      a.x = tiles_take2(at, w, 1u << sh);
      a.y = tiles_take2(at, w, 1u << (sh + 2));
      a.z = tiles_take2(at, w, 1u << (sh + 4));
      a.w = tiles_take2(at, w, 1u << (sh + 6));
      MmaK16<V>::run(d, a, h ? xx.z : xx.x, h ? xx.w : xx.y);
    }
  }
}

// One warp's run of chunks c0 .. c0 + n of a tile (first_chunk: the tile's first) summed into d:
// each chunk (its lanes' masks, then its values from the 16-byte piece the first one is in) is
// brought into one of the warp's STAGES shared-memory stages at `base` by cp.async, with the next
// STAGES - 1 in flight while it sums one.
template <typename V, int STAGES>
__device__ __forceinline__ void tiles_run(float (&d)[4], const uint4* __restrict__ masks,
                                          const int32_t* __restrict__ chunk_ptr, const typename V::S* __restrict__ vals,
                                          const typename V::S* __restrict__ x, int cols, int batch, size_t first_chunk,
                                          int c0, int n, unsigned base, int stage_bytes, float th) {
  const unsigned lane = threadIdx.x & 31u;
  const int g = (int)(lane >> 2), t4 = (int)(lane & 3u);
  constexpr int kPer = 8;  // values in a 16-byte piece
  // Chunk i of the run into stage `slot`; one commit group a call, empty past the run, so the waits
  // below count chunks.
  auto issue = [&](int i, int slot) {
    if (i < n) {
      const size_t mc = first_chunk + (size_t)(c0 + i);
      const unsigned dst = base + (unsigned)(slot * stage_bytes);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + lane * 16u), "l"(masks + mc * 32 + lane));
      const int o = chunk_ptr[mc], e = chunk_ptr[mc + 1], first = o & ~(kPer - 1),
                pieces = (e - first + kPer - 1) / kPer;
      const uint4* src = reinterpret_cast<const uint4*>(vals + first);
      for (int k = (int)lane; k < pieces; k += 32)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + 512u + (unsigned)k * 16u), "l"(src + k));
    }
    asm volatile("cp.async.commit_group;");
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) issue(s, s);
  int slot = 0;
  for (int i = 0; i < n; ++i) {
    issue(i + STAGES - 1, slot == 0 ? STAGES - 1 : slot - 1);  // the stage summed last time
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 1) : "memory");
    __syncwarp();
    const unsigned st = base + (unsigned)(slot * stage_bytes);
    uint4 mk;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(mk.x), "=r"(mk.y), "=r"(mk.z), "=r"(mk.w)
                 : "r"(st + lane * 16u));
    int total;
    const int pre = warp_exclusive_prefix(__popc(mk.x) + __popc(mk.y) + __popc(mk.z) + __popc(mk.w), (int)lane, total);
    const int c = c0 + i, o = chunk_ptr[first_chunk + (size_t)c];
    const unsigned at = st + 512u + (unsigned)((o - (o & ~(kPer - 1)) + pre) * 2);
    const int col = c * kTileChunkCols + 8 * t4;
    // B's column g is batch row g (row 0 again past the batch: those columns of D are dropped).
    const uint4* xv = reinterpret_cast<const uint4*>(x + (size_t)(g < batch ? g : 0) * cols + col);
    if ((c + 1) * kTileChunkCols <= cols && !(th > 0.0f))
      tiles_chunk<V, false>(d, mk, at, xv, col, cols, th);
    else
      tiles_chunk<V, true>(d, mk, at, xv, col, cols, th);
    __syncwarp();  // the stage is rewritten next
    slot = slot + 1 == STAGES ? 0 : slot + 1;
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
}

// The tile's last block or warp (by ticket) rounds the accumulator's rows row0 .. row0 + nr of
// every batch row into y and zeroes them; threads `first`, first + step, ... share the rows.
template <typename V>
__device__ __forceinline__ void tiles_round(float* acc, typename V::S* y, int rows, int row0, int nr, int batch,
                                            int first, int step) {
  __threadfence();
  for (int i = first; i < nr * batch; i += step) {
    const size_t at = (size_t)(i / nr) * rows + row0 + i % nr;
    y[at] = V::st(__ldcg(&acc[at]));
    acc[at] = 0.0f;
  }
}

// y[b] = W · x[b] for batch rows b < batch <= 8 (x and y row-major, cols and rows apart): each weight is
// read once for all of them, B's columns being the batch's rows.
// Block (tile, split) sums rows 16 * tile .. + 16 over its share of the chunks, each warp a
// contiguous run of that share (tiles_run), the warps' sums added in shared memory. Dynamic shared
// memory: WARPS * STAGES stages of stage_bytes (512 for the masks, then the plan's largest chunk of
// values in 16-byte pieces).
template <typename V, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32)
    decode_tiles(const uint4* __restrict__ masks, const int32_t* __restrict__ chunk_ptr,
                 const typename V::S* __restrict__ vals, const typename V::S* __restrict__ x, int rows, int cols,
                 float tau, const float* __restrict__ tau_dev, int splits, float* acc, unsigned* tickets,
                 typename V::S* y, int stage_bytes, int batch) {
  static_assert(sizeof(typename V::S) == 2, "the tiles path takes 16-bit values");
  extern __shared__ __align__(16) unsigned char dyn_tiles[];
  __shared__ float red[WARPS][16][kTileBatch];
  __shared__ bool last;
  const int tiles = (rows + 15) / 16, chunks = (cols + kTileChunkCols - 1) / kTileChunkCols;
  const int tile = (int)blockIdx.x % tiles, split = (int)blockIdx.x / tiles;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const int g = (int)(lane >> 2), t4 = (int)(lane & 3u);
  const int per = (chunks + splits - 1) / splits, s0 = min(chunks, split * per), n = min(chunks, s0 + per) - s0;
  const int c0 = s0 + (int)warp * n / WARPS, mine = s0 + ((int)warp + 1) * n / WARPS - c0;
  const unsigned base = (unsigned)__cvta_generic_to_shared(dyn_tiles) + warp * (unsigned)(STAGES * stage_bytes);
  const float th = tau_dev ? *tau_dev : tau;
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  tiles_run<V, STAGES>(d, masks, chunk_ptr, vals, x, cols, batch, (size_t)tile * chunks, c0, mine, base, stage_bytes,
                       th);
  // D[r][n] = y of row r, batch row n: lane (g, t) holds rows g and g + 8 of columns 2t, 2t + 1.
  red[warp][g][2 * t4] = d[0];
  red[warp][g][2 * t4 + 1] = d[1];
  red[warp][g + 8][2 * t4] = d[2];
  red[warp][g + 8][2 * t4 + 1] = d[3];
  __syncthreads();
  const int row0 = tile * 16, nr = min(16, rows - row0);
  for (int i = (int)threadIdx.x; i < 16 * batch; i += WARPS * 32) {
    const int r = i & 15, b = i >> 4;
    if (r >= nr) continue;
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < WARPS; ++k) sum += red[k][r][b];
    const size_t at = (size_t)b * rows + row0 + r;
    if (splits == 1)
      y[at] = V::st(sum);
    else if (sum != 0.0f)
      atomicAdd(&acc[at], sum);
  }
  if (splits == 1) return;
  __threadfence();
  // The tile's last block (by ticket) rounds every batch row's sums into y and zeroes them.
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&tickets[tile], 1u) == (unsigned)splits - 1;
  __syncthreads();
  if (!last) return;
  tiles_round<V>(acc, y, rows, row0, nr, batch, (int)threadIdx.x, WARPS * 32);
  if (threadIdx.x == 0) tickets[tile] = 0;
}

// The same product with a warp per (tile, split): the warp sums its share of the tile's chunks alone
// (tiles_run over all of them: a pipeline as long as the share), so no warp waits on another and
// no block-wide sum; its lanes write y (or, split, add to the accumulator, the split's last warp by
// ticket rounding it into y). Why: a block of warps splitting one tile gave each warp of a
// 4096-column layer 2 chunks, a pipeline that never filled (docs/decisions/decode-kernel-design.md).
template <typename V, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32)
    decode_tiles_warp(const uint4* __restrict__ masks, const int32_t* __restrict__ chunk_ptr,
                      const typename V::S* __restrict__ vals, const typename V::S* __restrict__ x, int rows, int cols,
                      float tau, const float* __restrict__ tau_dev, int splits, float* acc, unsigned* tickets,
                      typename V::S* y, int stage_bytes, int batch) {
  static_assert(sizeof(typename V::S) == 2, "the tiles path takes 16-bit values");
  extern __shared__ __align__(16) unsigned char dyn_tiles[];
  const int tiles = (rows + 15) / 16, chunks = (cols + kTileChunkCols - 1) / kTileChunkCols;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const int item = (int)blockIdx.x * WARPS + (int)warp;
  if (item >= tiles * splits) return;  // no block-wide barrier below
  const int tile = item % tiles, split = item / tiles;
  const int g = (int)(lane >> 2), t4 = (int)(lane & 3u);
  const int per = (chunks + splits - 1) / splits, c0 = min(chunks, split * per), n = min(chunks, c0 + per) - c0;
  const unsigned base = (unsigned)__cvta_generic_to_shared(dyn_tiles) + warp * (unsigned)(STAGES * stage_bytes);
  const float th = tau_dev ? *tau_dev : tau;
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  tiles_run<V, STAGES>(d, masks, chunk_ptr, vals, x, cols, batch, (size_t)tile * chunks, c0, n, base, stage_bytes, th);
  // Lane (g, t) holds rows g and g + 8 of batch rows 2t and 2t + 1.
  const int row0 = tile * 16, nr = min(16, rows - row0);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int r = g + (k >= 2 ? 8 : 0), b = 2 * t4 + (k & 1);
    if (r >= nr || b >= batch) continue;
    const size_t at = (size_t)b * rows + row0 + r;
    if (splits == 1)
      y[at] = V::st(d[k]);
    else if (d[k] != 0.0f)
      atomicAdd(&acc[at], d[k]);
  }
  if (splits == 1) return;
  __threadfence();
  __syncwarp();
  unsigned last = 0;
  if (lane == 0) last = atomicAdd(&tickets[tile], 1u) == (unsigned)splits - 1;
  if (!__shfl_sync(0xffffffffu, last, 0)) return;
  tiles_round<V>(acc, y, rows, row0, nr, batch, (int)lane, 32);
  if (lane == 0) tickets[tile] = 0;
}

}  // namespace dbs

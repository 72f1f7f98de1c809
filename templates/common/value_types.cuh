// Storage types shared by the decoding kernels (sparse_linear.cuh) and SpMM (spmm_rows.cuh,
// spmm_tc_half.cuh): fp16 and bf16 are kept as 16-bit words and converted with single PTX
// instructions (no cuda_fp16.h: NVRTC then needs no toolkit headers); sums are fp32.
#pragma once

namespace dbs {

struct ValF32 {
  typedef float S;
  static __device__ __forceinline__ float ld(S v) { return v; }
  static __device__ __forceinline__ S st(float f) { return f; }
};
struct ValF16 {
  typedef unsigned short S;
  static __device__ __forceinline__ float ld(S v) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
    return f;
  }
  static __device__ __forceinline__ S st(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
};
struct ValBF16 {
  typedef unsigned short S;
  static __device__ __forceinline__ float ld(S v) { return __uint_as_float((unsigned)v << 16); }
  static __device__ __forceinline__ S st(float f) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
};

// Four consecutive values as one load or store: a float4 (16 bytes) in f32, a uint2 (8 bytes)
// in 16 bits; p must be aligned to that size.
template <typename V>
__device__ __forceinline__ void load4(const typename V::S* p, float (&v)[4]) {
  if constexpr (sizeof(typename V::S) == 4) {
    const float4 x = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
    const uint2 x = __ldg(reinterpret_cast<const uint2*>(p));
    v[0] = V::ld((typename V::S)(x.x & 0xFFFFu)), v[1] = V::ld((typename V::S)(x.x >> 16));
    v[2] = V::ld((typename V::S)(x.y & 0xFFFFu)), v[3] = V::ld((typename V::S)(x.y >> 16));
  }
}
// The same as load4 but through the coherent path: for C, which the kernels also write.
template <typename V>
__device__ __forceinline__ void load4_rw(const typename V::S* p, float (&v)[4]) {
  if constexpr (sizeof(typename V::S) == 4) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
    const uint2 x = *reinterpret_cast<const uint2*>(p);
    v[0] = V::ld((typename V::S)(x.x & 0xFFFFu)), v[1] = V::ld((typename V::S)(x.x >> 16));
    v[2] = V::ld((typename V::S)(x.y & 0xFFFFu)), v[3] = V::ld((typename V::S)(x.y >> 16));
  }
}
template <typename V>
__device__ __forceinline__ void store4(typename V::S* p, const float (&v)[4]) {
  if constexpr (sizeof(typename V::S) == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    uint2 x;
    x.x = (unsigned)V::st(v[0]) | ((unsigned)V::st(v[1]) << 16);
    x.y = (unsigned)V::st(v[2]) | ((unsigned)V::st(v[3]) << 16);
    *reinterpret_cast<uint2*>(p) = x;
  }
}

}  // namespace dbs

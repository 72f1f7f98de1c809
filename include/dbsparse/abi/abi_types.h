#pragma once
// The prelude of every ABI header (docs/DESIGN.md §10): those headers are compiled by the host
// compiler and by NVRTC, which has no standard headers, so the fixed-width integers and offsetof
// are spelled here once for both.
#ifdef __CUDACC_RTC__
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
// NVRTC has neither offsetof nor __builtin_offsetof; __INTADDR__ is its front end's constant form.
#define DBS_ABI_OFFSETOF(type, member) __INTADDR__(&((type*)0)->member)
#else
#include <cstddef>
#include <cstdint>
#define DBS_ABI_OFFSETOF(type, member) offsetof(type, member)
#endif

// Index math that host code and kernels both run (a cpu test can then check what the kernels
// compute): constexpr everywhere, and callable on the device when a CUDA compiler reads it.
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define DBS_ABI_FN __host__ __device__ __forceinline__ constexpr
#else
#define DBS_ABI_FN constexpr
#endif

#pragma once
// The only stage that touches the CUDA toolkit: source -> cubin with NVRTC, loaded by dlopen. It
// needs no GPU, so kernels can be precompiled for a named arch anywhere (docs/DESIGN.md §3).
#include <string>
#include <utility>
#include <vector>

#include "codegen/kernel_source.hpp"

namespace dbsparse::codegen {

struct CompiledKernel {
  std::vector<char> cubin;
  std::vector<std::pair<std::string, std::string>> lowered_names;  // name expression -> mangled
  double compile_ms = 0;
  std::string log;  // NVRTC's log of a successful compile: warnings, and ptxas's report under --ptxas-options=-v
};

bool nvrtc_available(std::string* why);
// "13.0"; throws Error when NVRTC cannot be loaded.
std::string nvrtc_version();
// The major version of the NVRTC this library loads by soname (libnvrtc.so.13), known without
// loading it: the user kernel cache's key carries it (codegen/kernel_cache.cpp).
inline constexpr int kNvrtcSonameMajor = 13;
// Whether the NVRTC loaded is of that major (false where only the unversioned libnvrtc.so of
// another one was found); throws Error when NVRTC cannot be loaded.
bool nvrtc_is_soname_major();
// Real archs NVRTC can emit cubins for, e.g. {"sm_75", ..., "sm_90", ...}.
std::vector<std::string> nvrtc_supported_archs();

// Compiles for arch ("sm_90"). Throws CompileError (key, options, log, dumped source path) when
// NVRTC rejects the source, UsageError for an arch NVRTC does not support.
CompiledKernel compile_to_cubin(const KernelSource& ks, const std::string& arch);

}  // namespace dbsparse::codegen

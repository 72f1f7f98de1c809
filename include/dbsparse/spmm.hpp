#pragma once
// SpMM, C = alpha * A * B + beta * C with A sparse (CSR, M x K, f32) and B (K x n), C (M x n) dense,
// row-major f32; n = 1 .. 4096. Two paths: BRP-SpMM (brp.hpp; brp-spmm-ipdps25-slides), the TC
// groups on tensor cores in TF32 plus the residual rows on CUDA cores; or a CUDA-core CSR product
// in f32 (the fallback, and the ablation's baseline). Plan once, run many times.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/plan_info.hpp"

namespace dbsparse {

enum class SpmmPath { Auto, Brp, CsrCudaCore };
const char* to_string(SpmmPath p);

struct SpmmOptions {
  // Auto: Brp when brp_group_share(A, f, g) >= 0.5, else CsrCudaCore.
  SpmmPath path = SpmmPath::Auto;
  int f = 1, g = 4;  // BRP: nonzeros per slot, TC blocks per group (1, 2, 4 or 8 each)
};

class SpmmPlan {
 public:
  // B: cols() x n_cols() and C: rows() x n_cols() floats on the device, row-major. beta == 0 never
  // reads C. No allocation, no compilation, no host synchronisation (capturable). The BRP path adds
  // into C with atomics, so its C is equal to the reference up to the order of f32 additions, not
  // bitwise from run to run.
  void run(uint64_t b, uint64_t c, void* stream, float alpha = 1.0f, float beta = 0.0f) const;
  // The same with sizes checked (UsageError naming them).
  void run(const DeviceBuffer<float>& b, DeviceBuffer<float>& c, const Stream& stream, float alpha = 1.0f,
           float beta = 0.0f) const;

  int32_t rows() const;
  int32_t cols() const;
  int n_cols() const;
  SpmmPath path() const;  // Brp or CsrCudaCore: what Auto resolved to
  int f() const;          // the BRP parameters (also on the CSR path: those Auto weighed)
  int g() const;
  double tc_share() const;  // nonzeros in TC groups / nnz (0 on the CSR path)
  int64_t device_bytes() const;  // everything the plan holds on the device
  const std::vector<KernelInfo>& kernels() const;
  std::string explain() const;

  SpmmPlan(SpmmPlan&&) noexcept;
  SpmmPlan& operator=(SpmmPlan&&) noexcept;
  ~SpmmPlan();
  struct Impl;

 private:
  friend class Context;
  explicit SpmmPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dbsparse

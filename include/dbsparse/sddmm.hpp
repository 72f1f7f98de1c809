#pragma once
// SDDMM (sampled dense-dense matrix product) on a sparse matrix's pattern: for A's CSR pattern
// (rows x cols, nnz entries) and dense X (rows x k) and Y (cols x k), row-major,
//   out[e] = alpha * dot(X[row(e), :], Y[col(e), :])   (times a_e with scale_by_values)
// for each entry e in A's CSR order: the gradient of an SpMM's sparse operand, and attention
// scores on a graph. k = 1 .. 512. X, Y and out in f32, f16 or bf16 (SddmmOptions::dtype), the
// dot in f32, out rounded once. Plan once (A's pattern on the device, the kernel compiled and
// loaded), run many times. templates/sddmm/sddmm_csr.cuh says how the kernel works.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/matrix.hpp"
#include "dbsparse/op_config.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/spmm.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

// The op's config (op_config.hpp): its kernel's shape. Not read from the tuning DB yet: a plan
// takes SddmmOptions::config, else these defaults.
struct SddmmConfig {
  static constexpr const char* kOp = "sddmm";
  static constexpr bool kBlockFeatures = false;
  // Consecutive entries a group of lanes takes, kSddmmUnroll at a time: a hub row is shared by
  // nnz / tile groups, and short tiles give a short graph more groups to hide latency with.
  int tile = 8;
  int warps = 4;  // warps a block (1, 2, 4 or 8)

  template <class V>
  void visit(V& v) {
    v.integer("tile", tile, 1, 1 << 16, "consecutive entries a group of lanes takes");
    v.integer("warps", warps, 1, 8, "warps a block (1, 2, 4 or 8)");
  }
  void check() const {
    if (warps != 1 && warps != 2 && warps != 4 && warps != 8)
      throw UsageError("sddmm config: 'warps' must be 1, 2, 4 or 8, got " + std::to_string(warps));
  }
};

struct SddmmOptions {
  SpmmDtype dtype = SpmmDtype::F32;  // of X, Y and out; A's values (scale_by_values) stay f32
  bool scale_by_values = false;      // out[e] also times a_e
  const Config* config = nullptr;    // instead of SddmmConfig's defaults
};

class SddmmPlan {
 public:
  // A in f64 is a UsageError (convert with a.cast<float>()), as is k outside 1 .. 512.
  template <class T>
  static SddmmPlan build(Context& ctx, const CsrMatrix<T>& a, int k, const SddmmOptions& options);
  template <class T>
  static SddmmPlan build(Context& ctx, const CsrMatrix<T>& a, int k);

  // x: rows() x k(), y: cols() x k(), out: nnz() values, device pointers of dtype() (16-bit words
  // for f16 / bf16), row-major. Every entry of out is written (out is never read). No allocation,
  // no compilation, no host synchronisation (capturable); calls on several streams are
  // independent. 4 values a load where k % 4 == 0 and x and y are aligned to 4 values, else 1.
  void run(uint64_t x, uint64_t y, uint64_t out, void* stream, float alpha = 1.0f) const;
  // The same with sizes and the value type checked (UsageError naming them).
  void run(const DeviceBuffer<float>& x, const DeviceBuffer<float>& y, DeviceBuffer<float>& out, const Stream& stream,
           float alpha = 1.0f) const;
  void run(const DeviceBuffer<uint16_t>& x, const DeviceBuffer<uint16_t>& y, DeviceBuffer<uint16_t>& out,
           const Stream& stream, float alpha = 1.0f) const;

  int32_t rows() const;
  int32_t cols() const;
  int64_t nnz() const;
  int k() const;
  SpmmDtype dtype() const;
  bool scale_by_values() const;
  const SddmmConfig& typed_config() const;
  int64_t device_bytes() const;  // A's pattern (and values when scaled) on the device
  const std::vector<KernelInfo>& kernels() const;
  std::string explain() const;

  SddmmPlan(SddmmPlan&&) noexcept;
  SddmmPlan& operator=(SddmmPlan&&) noexcept;
  ~SddmmPlan();
  struct Impl;

 private:
  explicit SddmmPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The op's entry point, as every op spells it: plan_<op>(ctx, problem, options...).
template <class M, class... Args>
SddmmPlan plan_sddmm(Context& ctx, const M& a, int k, const Args&... args) {
  return SddmmPlan::build(ctx, a, k, args...);
}

}  // namespace dbsparse

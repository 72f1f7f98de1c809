#pragma once
// DB-Decoding (DB-SpMSpV, docs/DESIGN.md [1] §4.3): a pruned linear layer y = W·x at batch 1 with x made sparse
// on the GPU by magnitude (|x_i| >= tau, as TEAL calibrates tau per layer), then an SpMSpV plan
// on W converted once; or the column bitmap layout through the decoding plan (decode_linear.hpp,
// which also takes fp16/bf16).
#include <cstdint>
#include <memory>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/spmspv.hpp"

namespace dbsparse {

// How W is stored and multiplied: the DB format with adaptive SpMSpV (the paper's), or the column
// bitmap layout (column_bitmap.hpp; f32 weights) through DecodeLinearPlan.
enum class SparseLinearLayout { Spmspv, ColumnBitmap };

struct SparseLinearOptions {
  float tau = 0.0f;  // x_i is kept where |x_i| >= tau (0: every nonzero)
  SparseLinearLayout layout = SparseLinearLayout::Spmspv;
  SpmspvDirection direction = SpmspvDirection::Auto;
  const Config* config = nullptr;  // the SpMSpV config instead of the tuning DB's
  // Column bitmap layout only: the weights' and activations' storage type (fp16/bf16 values are
  // rounded once at plan time; run takes device pointers of that type), and how the work is cut.
  DecodeDtype dtype = DecodeDtype::F32;
  DecodeMapping mapping = DecodeMapping::Auto;
  int row_block_words = 1;
};

template <class T>
class SparseLinearPlan {
 public:
  // A pruned linear layer (W as CSR, out x in) for batch-1 decoding: x sparsified on the GPU by
  // magnitude, then SpMSpV. plan_sparse_linear(ctx, w, options) is the same call.
  static SparseLinearPlan build(Context& ctx, const CsrMatrix<T>& w, const SparseLinearOptions& options);

  // y = W · sparsify(x): two launches and the SpMSpV plan's own (column bitmap: one); no
  // allocation, no host sync. The DeviceBuffer form needs T storage (not an fp16/bf16 plan).
  void run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream) const;
  void run(uint64_t x, uint64_t y, void* stream) const;
  void set_tau(float tau);  // used from the next run on
  float tau() const;
  int32_t rows() const;
  int32_t cols() const;
  const SpmspvPlan<T>& spmspv() const;  // UsageError for the column bitmap layout
  SparseLinearLayout layout() const;
  int64_t device_bytes() const;  // the SpMSpV plan's and the sparsified x's
  std::string explain() const;

  SparseLinearPlan(SparseLinearPlan&&) noexcept;
  SparseLinearPlan& operator=(SparseLinearPlan&&) noexcept;
  ~SparseLinearPlan();
  struct Impl;

 private:
  explicit SparseLinearPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The op's entry point, as every op spells it: plan_<op>(ctx, problem, options...).
template <class T>
SparseLinearPlan<T> plan_sparse_linear(Context& ctx, const CsrMatrix<T>& w, const SparseLinearOptions& options) {
  return SparseLinearPlan<T>::build(ctx, w, options);
}

}  // namespace dbsparse

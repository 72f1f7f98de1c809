#pragma once
// SpMSpV, y = A·x with x sparse, on the DB format with two-level adaptive push/pull
// (db-spmspv-icpp26 §3.3). Plan once (conversion, look-up, JIT), then run many times.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "dbsparse/context.hpp"
#include "dbsparse/db_matrix.hpp"
#include "dbsparse/plan_info.hpp"
#include "dbsparse/tuning_db.hpp"

namespace dbsparse {

enum class SpmspvDirection { Auto, Push, Pull };
const char* to_string(SpmspvDirection d);

struct SpmspvOptions {
  // Auto picks per run on the GPU: push when the share xb of non-empty 16-element x blocks is
  // below th3 / max(1, nnz per block) (the plan's xb_threshold()), pull otherwise. Push or Pull force one path (and compile only that one): for ablation.
  SpmspvDirection direction = SpmspvDirection::Auto;
  // When set, used instead of the tuning DB's config (th0..th3).
  const Config* config = nullptr;
  // true: one cooperative launch (mask pass, grid barrier, compute), where the device supports
  // it. Off by default: on the H200 it measured slower than two plain launches (NOTES.md,
  // 2026-11-29: 8.8 → 15 µs on Cora, 17 → 21 µs on the 27-point stencil at density 1e-4).
  bool fused = false;
};

struct SpmspvStats {
  DbStats storage;           // blocks and bytes by type; convert_ms is the conversion time
  int64_t pull_segments = 0;
  int64_t push_tasks_max = 0;  // push work items: every chunk of <= 8 blocks of every column block
  double xb_threshold = 0;     // push below this x-block share: th3 / max(1, nnz per block)
};

template <class T>
class SpmspvPlan {
 public:
  // y = A·x, x dense on the device (zeros are the inactive entries), length cols(); y length rows().
  // No allocation, no compilation, no host synchronisation.
  void run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream) const;
  void run(uint64_t x, uint64_t y, void* stream) const;
  // x given as nnz (index, value) pairs on the device; indices in [0, cols()), unique.
  void run_sparse(const DeviceBuffer<int32_t>& x_idx, const DeviceBuffer<T>& x_val, int32_t x_nnz,
                  DeviceBuffer<T>& y, const Stream& stream) const;

  // The path the last run took, read back from the device (synchronises the stream: not for the
  // hot path; for tests, benches and the tuner).
  SpmspvDirection last_direction(const Stream& stream) const;
  // Non-empty x blocks / all x blocks in the last run (synchronises too).
  double last_xb(const Stream& stream) const;

  int32_t rows() const;
  int32_t cols() const;
  int64_t nnz() const;
  const SpmspvStats& stats() const;
  const Config& config() const;
  ConfigSource config_source() const { return config().source; }
  const KernelInfo& kernel() const;
  std::string explain() const;

  // Bytes the pull path moves for x with these nonzero indices: for every block whose x block is
  // non-empty, its metadata, values and aux; the block-CSR view; x's active blocks; y once. The
  // numerator of pull's achieved bandwidth. Host-side, from the plan's copy of the structure.
  int64_t pull_bytes_visited(std::span<const int32_t> x_indices) const;

  SpmspvPlan(SpmspvPlan&&) noexcept;
  SpmspvPlan& operator=(SpmspvPlan&&) noexcept;
  ~SpmspvPlan();

 private:
  friend class Context;
  struct Impl;
  explicit SpmspvPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dbsparse

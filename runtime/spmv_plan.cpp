#include "dbsparse/spmv.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "codegen/spmv_key.hpp"
#include "dbsparse/features.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/module_registry.hpp"
#include "runtime/spmv_strategy.hpp"

namespace dbsparse {

template <class T>
SpmvPlan<T> Context::plan_spmv(const CsrMatrix<T>& a) {
  auto fp = structure_fingerprint(a);
  auto config = lookup_config(info_.record().fingerprint, fp, "spmv");
  return build_spmv(a, config, std::move(fp));
}

template <class T>
SpmvPlan<T> Context::plan_spmv(const CsrMatrix<T>& a, const Config& config) {
  return build_spmv(a, config, structure_fingerprint(a));
}

namespace {

// Chunks of at most `chunk` entries for each listed row; a row with no entries gets one empty
// chunk, so its finalize still writes beta*y.
void build_chunks(const std::vector<int32_t>& row_ptr, const std::vector<int32_t>& rows, int64_t chunk,
                  std::vector<int32_t>& chunks, std::vector<int32_t>& chunk_ptr) {
  chunk_ptr.assign(1, 0);
  for (int32_t r : rows) {
    const int32_t first = row_ptr[r], end = row_ptr[r + 1];
    int64_t j = first;
    do {
      const int64_t e = std::min<int64_t>(end, j + chunk);
      chunks.insert(chunks.end(), {r, static_cast<int32_t>(j), static_cast<int32_t>(e)});
      j = e;
    } while (j < end);
    chunk_ptr.push_back(static_cast<int32_t>(chunks.size() / 3));
  }
  if (chunks.size() / 3 > static_cast<size_t>(INT32_MAX)) throw UsageError("spmv: too many long-row chunks");
}

}  // namespace

template <class T>
SpmvPlan<T> Context::build_spmv(const CsrMatrix<T>& a, const Config& config, std::string fingerprint) {
  using codegen::SpmvStrategy;
  using Launch = typename SpmvPlan<T>::Launch;
  using Kind = typename SpmvPlan<T>::LaunchKind;
  make_current();
  SpmvPlan<T> plan;
  plan.rows_ = a.rows;
  plan.cols_ = a.cols;
  plan.nnz_ = a.nnz();
  plan.matrix_fp_ = std::move(fingerprint);
  plan.config_ = config;
  // Problem -> keys: the config decides the variants; the keys are all the JIT sees.
  const SpmvLayout layout = choose_spmv_layout(plan.config_.params, a.rows, a.nnz(), codegen::value_type_of<T>());
  plan.row_ptr_ = DeviceBuffer<int32_t>(std::span<const int32_t>(a.row_ptr));
  plan.col_idx_ = DeviceBuffer<int32_t>(std::span<const int32_t>(a.col_idx));
  plan.values_ = DeviceBuffer<T>(std::span<const T>(a.values));
  const size_t nbins = layout.bins.size();

  // Rows per bin, and where each bin's list starts in row_lists_ (-1: no list, all rows).
  std::vector<int64_t> bin_rows(nbins, 0), bin_nnz(nbins, 0), bin_off(nbins, -1);
  std::vector<int64_t> max_len(nbins);
  for (size_t b = 0; b < nbins; ++b) max_len[b] = layout.bins[b].max_len;
  std::vector<int32_t> long_rows;
  if (!layout.classified) {
    bin_rows[0] = a.rows;
    bin_nnz[0] = a.nnz();
    if (layout.bins[0].key.strategy == SpmvStrategy::LongRow) {
      long_rows.resize(static_cast<size_t>(a.rows));
      for (int32_t r = 0; r < a.rows; ++r) long_rows[r] = r;
    }
  } else if (a.rows > 0) {
    // The GPU classifier (plan phase: host syncs allowed here, never in run).
    auto scalar = modules_->get(codegen::make_source(layout.bins[0].key), info_.arch());
    CUfunction classify = scalar.fns.at(1);
    struct Bounds {
      int32_t max_len[8];
      int32_t nbins;
    } bounds{};
    auto set_bounds = [&] {
      for (size_t b = 0; b < nbins; ++b)
        bounds.max_len[b] = static_cast<int32_t>(std::min<int64_t>(max_len[b], INT32_MAX));
      bounds.nbins = static_cast<int32_t>(nbins);
    };
    set_bounds();
    DeviceBuffer<uint64_t> counts(2 * 8);
    counts.fill_bytes(0);
    int rows = a.rows;
    CUdeviceptr rp = plan.row_ptr_.ptr(), cp = counts.ptr(), none = 0;
    const unsigned grid = static_cast<unsigned>((a.rows + 255) / 256);
    {
      void* args[] = {&rows, &rp, &bounds, &cp, &none, &none};
      DBS_CU(cuLaunchKernel(classify, grid, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
    }
    auto c = counts.download();  // synchronous: waits for the pass
    for (size_t b = 0; b < nbins; ++b) {
      bin_rows[b] = static_cast<int64_t>(c[2 * b]);
      bin_nnz[b] = static_cast<int64_t>(c[2 * b + 1]);
    }
    // Fold thin row-kernel bins (not block, not long rows) into the next wider one.
    for (size_t b = 0; b + 2 < nbins; ++b) {
      if (bin_rows[b] == 0 || static_cast<double>(bin_nnz[b]) >= layout.fold_share * static_cast<double>(a.nnz()))
        continue;
      bin_rows[b + 1] += bin_rows[b];
      bin_nnz[b + 1] += bin_nnz[b];
      bin_rows[b] = bin_nnz[b] = 0;
      max_len[b] = b ? max_len[b - 1] : -1;
    }
    const auto nonempty = std::count_if(bin_rows.begin(), bin_rows.end(), [](int64_t r) { return r > 0; });
    const size_t last = nbins - 1;
    const bool one_row_bin = nonempty == 1 && bin_rows[last] == 0;
    if (!one_row_bin) {
      set_bounds();
      std::vector<int32_t> cursor(8, 0);
      int64_t off = 0;
      for (size_t b = 0; b < nbins; ++b) {
        bin_off[b] = off;
        cursor[b] = static_cast<int32_t>(off);
        off += bin_rows[b];
      }
      DeviceBuffer<int32_t> cur{std::span<const int32_t>(cursor)};
      plan.row_lists_ = DeviceBuffer<int32_t>(static_cast<size_t>(a.rows));
      CUdeviceptr cu = cur.ptr(), li = plan.row_lists_.ptr();
      void* args[] = {&rows, &rp, &bounds, &cp, &cu, &li};
      DBS_CU(cuLaunchKernel(classify, grid, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
      if (bin_rows[last] > 0) {
        std::vector<int32_t> all = plan.row_lists_.download();  // synchronous
        long_rows.assign(all.begin() + bin_off[last], all.begin() + bin_off[last] + bin_rows[last]);
      } else {
        DBS_CU(cuCtxSynchronize());
      }
    }
  }

  std::string text;
  for (size_t b = 0; b < nbins; ++b) {
    if (bin_rows[b] == 0 && !(b == 0 && !layout.classified)) continue;
    const auto& key = layout.bins[b].key;
    auto loaded = modules_->get(codegen::make_source(key), info_.arch());
    plan.kernels_.push_back(loaded.info);
    if (layout.classified)
      text += fmt::format("  bin {} (rows of length <= {}): {} rows, {} nonzeros -> {}\n", b,
                          b + 1 == nbins ? std::string("any") : std::to_string(max_len[b]), bin_rows[b],
                          bin_nnz[b], key.to_string());
    const uint64_t list = bin_off[b] >= 0 ? plan.row_lists_.ptr() + static_cast<uint64_t>(bin_off[b]) * 4 : 0;
    if (key.strategy != SpmvStrategy::LongRow) {
      if (bin_rows[b] == 0) continue;  // an empty matrix: nothing to launch
      plan.launches_.push_back(Launch{loaded.fns.at(0), Kind::Rows, static_cast<unsigned>(spmv_grid(key, bin_rows[b])),
                                      static_cast<unsigned>(key.block_size), static_cast<int32_t>(bin_rows[b]), list});
      continue;
    }
    std::vector<int32_t> chunks, chunk_ptr;
    build_chunks(a.row_ptr, long_rows, layout.longrow_chunk, chunks, chunk_ptr);
    const auto nchunks = static_cast<int32_t>(chunks.size() / 3);
    plan.long_rows_ = DeviceBuffer<int32_t>(std::span<const int32_t>(long_rows));
    plan.chunk_ptr_ = DeviceBuffer<int32_t>(std::span<const int32_t>(chunk_ptr));
    plan.chunks_ = DeviceBuffer<int32_t>(std::span<const int32_t>(chunks));
    plan.partial_ = DeviceBuffer<T>(static_cast<size_t>(std::max(nchunks, 1)));
    if (long_rows.empty()) continue;
    plan.launches_.push_back(Launch{loaded.fns.at(0), Kind::LongPartial, static_cast<unsigned>(nchunks),
                                    static_cast<unsigned>(key.block_size), nchunks, 0});
    const auto nlong = static_cast<int32_t>(long_rows.size());
    plan.launches_.push_back(Launch{loaded.fns.at(1), Kind::LongFinalize, static_cast<unsigned>((nlong + 255) / 256),
                                    256, nlong, plan.long_rows_.ptr()});
    text += fmt::format("    long rows split into {} chunks of <= {} entries\n", nchunks, layout.longrow_chunk);
  }
  if (plan.kernels_.empty()) {  // 0 x n: still report the kernel a non-empty matrix would use
    auto loaded = modules_->get(codegen::make_source(layout.bins[0].key), info_.arch());
    plan.kernels_.push_back(loaded.info);
  }
  plan.kernel_ = plan.kernels_.front();
  plan.layout_text_ = layout.classified ? "  classified, " + std::to_string(plan.launches_.size()) +
                                              " launches per run:\n" + text
                                        : "";
  return plan;
}

template <class T>
void SpmvPlan<T>::run(const DeviceBuffer<T>& x, DeviceBuffer<T>& y, const Stream& stream, T alpha,
                      T beta) const {
  if (x.size() != static_cast<size_t>(cols_) || y.size() != static_cast<size_t>(rows_))
    throw UsageError(fmt::format("SpmvPlan::run: x has {} elements (need {}), y has {} (need {})",
                                 x.size(), cols_, y.size(), rows_));
  run(x.ptr(), y.ptr(), stream.handle(), alpha, beta);
}

template <class T>
void SpmvPlan<T>::run(uint64_t x, uint64_t y, void* stream, T alpha, T beta) const {
  CUdeviceptr rp = row_ptr_.ptr(), ci = col_idx_.ptr(), va = values_.ptr();
  CUdeviceptr xp = x, yp = y, ch = chunks_.ptr(), pa = partial_.ptr(), cptr = chunk_ptr_.ptr();
  for (const Launch& l : launches_) {
    int32_t count = l.count;
    CUdeviceptr list = l.row_list;
    void* rows_args[] = {&count, &list, &rp, &ci, &va, &xp, &yp, &alpha, &beta};
    void* partial_args[] = {&count, &ch, &ci, &va, &xp, &pa};
    void* finalize_args[] = {&count, &list, &cptr, &pa, &yp, &alpha, &beta};
    void** args = l.kind == LaunchKind::Rows ? rows_args : l.kind == LaunchKind::LongPartial ? partial_args : finalize_args;
    DBS_CU(cuLaunchKernel(static_cast<CUfunction>(l.fn), l.grid, 1, 1, l.block, 1, 1, 0,
                          static_cast<CUstream>(stream), args, nullptr));
  }
}

template <class T>
std::string SpmvPlan<T>::explain() const {
  std::string keys;
  for (const auto& k : kernels_)
    keys += fmt::format("  kernel: {} (binary from {}: {:.2f} ms; module load {:.2f} ms)\n", k.key, k.origin,
                        k.acquire_ms, k.load_ms);
  return fmt::format("spmv plan: {} x {}, nnz {}\n  matrix fingerprint: {}\n  config ({}): {}{}\n{}{}", rows_,
                     cols_, nnz_, matrix_fp_, to_string(config_.source), config_.params.dump(),
                     config_.note.empty() ? "" : "  [" + config_.note + "]", layout_text_, keys);
}

template class SpmvPlan<float>;
template class SpmvPlan<double>;
template SpmvPlan<float> Context::plan_spmv(const CsrMatrix<float>&);
template SpmvPlan<double> Context::plan_spmv(const CsrMatrix<double>&);
template SpmvPlan<float> Context::plan_spmv(const CsrMatrix<float>&, const Config&);
template SpmvPlan<double> Context::plan_spmv(const CsrMatrix<double>&, const Config&);

}  // namespace dbsparse

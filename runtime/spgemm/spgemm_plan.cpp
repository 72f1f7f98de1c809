// Hash SpGEMM on the GPU (include/dbsparse/spgemm.hpp, templates/spgemm/spgemm.cuh): the analysis on the
// GPU (runtime/spgemm/spgemm_gpu_analysis.cpp) decides the groups and the global tables once; the spec
// (runtime/spgemm/spgemm_plan_spec.hpp) turns its counts into launch shapes and buffer sizes, which the
// plan materializes; the kernels follow hash_spgemm_cpu phase for phase.
#include <algorithm>
#include <array>
#include <chrono>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/keys/spgemm_key.hpp"
#include "dbsparse/features.hpp"
#include "dbsparse/spgemm.hpp"
#include "dbsparse/tuning_db.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/fork_join.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/gpu/upload_nonempty.hpp"
#include "runtime/spgemm/spgemm_gpu_analysis.hpp"
#include "runtime/spgemm/spgemm_plan_spec.hpp"

namespace dbsparse {
namespace {

using abi::kSpgemmGlobalGroup;

template <class U>
DeviceBuffer<U> upload(std::span<const U> host) {
  return detail::upload_nonempty(host);
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

struct GroupKernels {
  CUfunction symbolic = nullptr, numeric = nullptr;
  CUfunction numeric_first = nullptr;  // groups 0-2: the one-pass first run's (spgemm_numeric_shared_first)
  // Group 3 only: the tables' initialisation and C's rows written by column segments.
  CUfunction init_symbolic = nullptr, init_numeric = nullptr, sort = nullptr, count = nullptr, scan = nullptr,
             scatter = nullptr;
};

// The arguments every global kernel takes first: its chunk of the global list and their tables.
struct ChunkArgs {
  int n = 0, always = 0;
  uint64_t list = 0, tables = 0;
};

// At most this many kernel arguments (the global sort's 17).
constexpr size_t kMaxArgs = 20;

// cuLaunchKernel with the arguments in order (pointers to the values).
void launch(CUfunction f, unsigned gx, unsigned gy, int block, int64_t smem, CUstream s,
            std::initializer_list<void*> args) {
  std::array<void*, kMaxArgs> params{};
  if (args.size() > params.size()) throw std::logic_error("spgemm plan: a launch with too many arguments");
  std::copy(args.begin(), args.end(), params.begin());
  DBS_CU(cuLaunchKernel(f, gx, gy, 1, static_cast<unsigned>(block), 1, 1, static_cast<unsigned>(smem), s, params.data(),
                        nullptr));
}

}  // namespace

template <class T>
struct SpgemmPlan<T>::Impl {
  // The buffers below come from the context's pool and go back to it without a wait: the work
  // that uses them is waited for first (cuMemFree used to wait by itself).
  ~Impl() {
    if (pool) cuda::driver().cuCtxSynchronize();  // a destructor does not throw; errors stay sticky
  }
  void* pool = nullptr;  // the context's CUmemoryPool (null: plain allocations)
  PoolSlot on(CUstream h) const { return {pool, h}; }
  // What the plan launches and allocates (its config, fitted tables, launch shapes, sizes).
  detail::SpgemmPlanSpec spec;
  // What the kernels read: the caller's arrays (a plan from device CSR) or a_own / b_own.
  DeviceCsrView<T> a, b;
  // Host inputs uploaded; from device CSR only the values of values_changed() (if ever called).
  DeviceCsr<T> a_own, b_own;
  detail::SpgemmGpuAnalysis analysis;
  mutable std::optional<SpgemmGrouping> grouping;  // downloaded on the first grouping() call
  // Global tables: group 3's rows first (always run), then the rows of groups 0-2 that may overflow
  // their shared table (run where the symbolic phase flagged them).
  DeviceBuffer<int32_t> table_keys;
  DeviceBuffer<T> table_vals;
  // The global list in chunks whose tables fit the table budget's bytes, run one after another
  // through table_keys / table_vals: one chunk (the analysis's places) when all fit, else laid out
  // by layout_chunks in the first run.
  struct Chunk {
    int first = 0, n = 0, always = 0;  // positions [first, first + n) of the global list; the first `always` of group 3
    uint64_t list = 0, tables = 0;     // the chunk's part of the list and of the tables
    ChunkArgs args() const { return {n, always, list, tables}; }
  };
  std::vector<Chunk> chunks;
  // Global tables past the budget wait for layout_chunks (the first run) to get their chunks.
  bool chunks_pending() const { return spec.global.rows > 0 && chunks.empty(); }
  DeviceBuffer<int32_t> row_len, overflow;
  DeviceBuffer<int32_t> seg_count;  // dense global rows: occupied slots per (row, column segment)
  DeviceBuffer<int32_t> seg_hist;   // hashed global rows: counts, then offsets, per (row, segment); then fill counters
  std::array<GroupKernels, kSpgemmGroups> kernels;
  // The groups' launches of a phase run side by side, each on a branch of its own (the context's).
  detail::ForkJoin* branches = nullptr;
  // C; its row_ptr is allocated with the plan, its columns and values by the first run.
  bool structured = false;
  SpgemmFreshTimes times;
  int64_t nnz = -1;
  int64_t overflowed = 0;
  DeviceBuffer<int32_t> c_ptr, c_col;
  DeviceBuffer<T> c_val;
  // The one-pass first run (SpgemmOptions::one_pass): rows at their offsets by IP in scratch, then
  // copied into C; the scratch goes back to the pool in the run's stream order.
  int64_t scratch_bytes = 0;  // what the scratch held, beside C, during the first run
  DeviceBuffer<int32_t> ip_ptr, scratch_col;
  DeviceBuffer<T> scratch_val;

  uint64_t ptr_of(const void* p) const { return reinterpret_cast<uint64_t>(p); }
  // The spec's buffers allocated on h and its groups' kernels loaded.
  void materialize(Context& ctx, CUstream h);
  void load_group(Context& ctx, int g);
  void launch_symbolic(CUstream h);
  // The numeric phase into C, or (first) the one-pass first run's into the scratch by IP offsets.
  void launch_numeric(CUstream h, bool first = false);
  // Groups 0-2's kernel `which` (symbolic, numeric or numeric_first), each on its lane's branch,
  // with (list, rows) and then `args`, in `smem` of the group's dynamic shared bytes.
  void launch_shared(CUfunction GroupKernels::*which, int64_t detail::SpgemmSharedLaunch::*smem,
                     std::initializer_list<void*> args, detail::ForkJoin::Fork& fork,
                     const std::array<int, kSpgemmGroups>& lane);
  void launch_global_numeric(CUstream gs, uint64_t cp, uint64_t cc, uint64_t cv);
  void first_run_one_pass(CUstream h);
  void size_c(CUstream h);
  void add_chunk(int first, int end);
  void layout_chunks(CUstream h);
  // Each group with rows its branch: lane[g], -1 for none; returns how many. Global rows run on a
  // branch of their own unless `global_last`.
  int lanes(std::array<int, kSpgemmGroups>& lane, bool global_last) const {
    int n = 0;
    for (int g = 0; g < kSpgemmGlobalGroup; ++g) lane[g] = spec.shared[g].rows > 0 ? n++ : -1;
    lane[kSpgemmGlobalGroup] = spec.global.rows > 0 && !global_last ? n++ : -1;
    return n;
  }
};

template <class T>
void SpgemmPlan<T>::Impl::materialize(Context& ctx, CUstream h) {
  const PoolSlot pool = on(h);
  const detail::SpgemmGlobalLaunch& gl = spec.global;
  if (gl.table_slots > 0) {
    table_keys = DeviceBuffer<int32_t>(static_cast<size_t>(gl.table_slots), pool);
    table_vals = DeviceBuffer<T>(static_cast<size_t>(gl.table_slots), pool);
    if (gl.one_chunk) add_chunk(0, gl.rows);
  }
  seg_count = DeviceBuffer<int32_t>(static_cast<size_t>(gl.seg_count), pool);
  row_len = DeviceBuffer<int32_t>(static_cast<size_t>(spec.row_buffers), pool);
  overflow = DeviceBuffer<int32_t>(static_cast<size_t>(spec.row_buffers), pool);
  c_ptr = DeviceBuffer<int32_t>(static_cast<size_t>(spec.rows) + 1, pool);
  for (int g = 0; g < kSpgemmGlobalGroup; ++g)
    if (spec.shared[g].rows > 0) load_group(ctx, g);
  if (gl.rows > 0) {
    load_group(ctx, kSpgemmGlobalGroup);
    seg_hist = DeviceBuffer<int32_t>(static_cast<size_t>(gl.seg_hist), pool);
  }
}

// Group g's kernels of both phases, their dynamic shared memory allowed (past 48 KiB a kernel must
// opt in to it).
template <class T>
void SpgemmPlan<T>::Impl::load_group(Context& ctx, int g) {
  const auto vt = codegen::value_type_of<T>();
  const auto sym =
      ctx.modules().get(codegen::make_source(codegen::spgemm_key(vt, codegen::SpgemmPhase::Symbolic, g, spec.fitted)),
                        ctx.device().arch());
  const auto num =
      ctx.modules().get(codegen::make_source(codegen::spgemm_key(vt, codegen::SpgemmPhase::Numeric, g, spec.fitted)),
                        ctx.device().arch());
  GroupKernels& k = kernels[g];
  k.symbolic = sym.entry("symbolic");
  k.numeric = num.entry("numeric");
  const auto allow = [](CUfunction f, int64_t smem) { cuda::allow_dynamic_smem(f, smem); };
  if (g == kSpgemmGlobalGroup) {
    k.init_symbolic = sym.entry("init");
    k.init_numeric = num.entry("init");
    k.sort = num.entry("sort");
    k.count = num.entry("count");
    k.scan = num.entry("scan");
    k.scatter = num.entry("scatter");
    allow(k.sort, spec.global.sort_smem);
    allow(k.symbolic, 0);
    allow(k.numeric, 0);
    return;
  }
  k.numeric_first = num.entry("numeric_first");
  allow(k.symbolic, spec.shared[g].symbolic_smem);
  allow(k.numeric, spec.shared[g].numeric_smem);
  allow(k.numeric_first, spec.shared[g].numeric_smem);
}

template <class T>
void SpgemmPlan<T>::Impl::add_chunk(int first, int end) {
  Chunk ch;
  ch.first = first;
  ch.n = end - first;
  ch.always = std::clamp(static_cast<int>(analysis.count(kSpgemmGlobalGroup)) - first, 0, ch.n);
  ch.list = analysis.global_list() + sizeof(int32_t) * static_cast<uint64_t>(first);
  ch.tables = analysis.tables() + sizeof(abi::SpgemmTable) * static_cast<uint64_t>(first);
  chunks.push_back(ch);
}

// The tables' places (the analysis gave each row one of its own) read back and given again from 0
// within each chunk, a new chunk where the next table would pass the budget.
template <class T>
void SpgemmPlan<T>::Impl::layout_chunks(CUstream h) {
  DBS_CU(cuStreamSynchronize(h));  // place_rows done
  std::vector<abi::SpgemmTable> t = analysis.download_tables();
  const int64_t budget_slots = std::max<int64_t>(spec.table_budget / static_cast<int64_t>(4 + sizeof(T)), 1);
  const int rows_in_list = spec.global.rows;
  std::vector<int64_t> slots(static_cast<size_t>(rows_in_list));
  for (int q = 0; q < rows_in_list; ++q) slots[q] = t[q].slots;
  const SpgemmChunkLayout layout = spgemm_chunk_layout(slots, budget_slots);
  for (int q = 0; q < rows_in_list; ++q) t[q].offset = layout.offset[q];
  chunks.clear();
  for (size_t c = 0; c < layout.first.size(); ++c)
    add_chunk(layout.first[c], c + 1 < layout.first.size() ? layout.first[c + 1] : rows_in_list);
  const int64_t widest = layout.widest;
  analysis.upload_tables(t);
  table_keys = DeviceBuffer<int32_t>(static_cast<size_t>(std::max<int64_t>(widest, 1)), on(h));
  table_vals = DeviceBuffer<T>(static_cast<size_t>(std::max<int64_t>(widest, 1)), on(h));
}

template <class T>
void SpgemmPlan<T>::Impl::launch_shared(CUfunction GroupKernels::*which, int64_t detail::SpgemmSharedLaunch::*smem,
                                        std::initializer_list<void*> args, detail::ForkJoin::Fork& fork,
                                        const std::array<int, kSpgemmGroups>& lane) {
  for (int g = 0; g < kSpgemmGlobalGroup; ++g) {
    const detail::SpgemmSharedLaunch& l = spec.shared[g];
    if (l.rows == 0) continue;
    uint64_t list = analysis.group_list(g);
    int n = static_cast<int>(l.rows);
    std::array<void*, kMaxArgs> params{&list, &n};
    if (args.size() + 2 > params.size()) throw std::logic_error("spgemm plan: a launch with too many arguments");
    std::copy(args.begin(), args.end(), params.begin() + 2);
    DBS_CU(cuLaunchKernel(kernels[g].*which, l.grid, 1, 1, static_cast<unsigned>(l.block), 1, 1,
                          static_cast<unsigned>(l.*smem), fork.branch(lane[g]), params.data(), nullptr));
  }
}

template <class T>
void SpgemmPlan<T>::Impl::launch_symbolic(CUstream h) {
  if (spec.products == 0) return;  // every row idle: nothing to count
  DBS_CU(cuMemsetD32Async(row_len.ptr(), 0, row_len.size(), h));
  DBS_CU(cuMemsetD32Async(overflow.ptr(), 0, overflow.size(), h));
  uint64_t ap = ptr_of(a.row_ptr), ac = ptr_of(a.col_idx), bp = ptr_of(b.row_ptr), bc = ptr_of(b.col_idx),
           len = row_len.ptr(), ovf = overflow.ptr();
  int b_cols = spec.cols;
  // Rows of groups 0-2 that overflow their shared table are flagged by those groups' kernels and
  // counted by the global ones, which then must come after them.
  const bool global_last = spec.global.rows > analysis.count(kSpgemmGlobalGroup);
  std::array<int, kSpgemmGroups> lane{};
  detail::ForkJoin::Fork fork(*branches, h, lanes(lane, global_last));
  launch_shared(&GroupKernels::symbolic, &detail::SpgemmSharedLaunch::symbolic_smem,
                {&ap, &ac, &bp, &bc, &len, &ovf, &b_cols}, fork, lane);
  if (global_last) fork.join();
  if (spec.global.rows > 0) {
    const CUstream gs = global_last ? h : fork.branch(lane[kSpgemmGlobalGroup]);
    const GroupKernels& k = kernels[kSpgemmGlobalGroup];
    const detail::SpgemmGlobalLaunch& gl = spec.global;
    uint64_t keys = table_keys.ptr(), none = 0;
    for (const Chunk& ch : chunks) {
      ChunkArgs c = ch.args();
      const auto rows = static_cast<unsigned>(c.n), split = static_cast<unsigned>(gl.split);
      launch(k.init_symbolic, rows, split, gl.block, 0, gs, {&c.list, &c.n, &c.always, &c.tables, &ovf, &keys, &none});
      launch(k.symbolic, rows, split, gl.block, 0, gs,
             {&c.list, &c.n, &c.always, &c.tables, &ap, &ac, &bp, &bc, &keys, &len, &ovf, &b_cols});
    }
  }
  fork.join();
}

template <class T>
void SpgemmPlan<T>::Impl::size_c(CUstream h) {
  nnz = analysis.size_c(row_len.ptr(), overflow.ptr(), c_ptr.ptr(), h);  // waits for h, unless no products
  const auto sized = std::chrono::steady_clock::now();
  overflowed = analysis.stats().overflowed;
  // Only rows that may overflow can, and each of those has a global table.
  if (overflowed > analysis.stats().may_overflow)
    throw std::logic_error(fmt::format("spgemm plan: {} row(s) overflowed their shared table, {} have a global one",
                                       overflowed, analysis.stats().may_overflow));
  // On h: the numeric phase follows there (and its branches fork from there).
  c_col = DeviceBuffer<int32_t>(static_cast<size_t>(std::max<int64_t>(nnz, 1)), on(h));
  c_val = DeviceBuffer<T>(static_cast<size_t>(std::max<int64_t>(nnz, 1)), on(h));
  structured = true;
  times.alloc_c_ms = ms_since(sized);
}

template <class T>
void SpgemmPlan<T>::Impl::launch_numeric(CUstream h, bool first) {
  uint64_t ap = ptr_of(a.row_ptr), ac = ptr_of(a.col_idx), av = ptr_of(a.values), bp = ptr_of(b.row_ptr),
           bc = ptr_of(b.col_idx), bv = ptr_of(b.values), ovf = overflow.ptr(), cp = c_ptr.ptr(), cc = c_col.ptr(),
           cv = c_val.ptr(), len = row_len.ptr();
  if (first) {
    cp = ip_ptr.ptr();
    cc = scratch_col.ptr();
    cv = scratch_val.ptr();
  }
  int b_cols = spec.cols;
  std::array<int, kSpgemmGroups> lane{};
  // Rows are in one group each and write their own rows of C.
  detail::ForkJoin::Fork fork(*branches, h, lanes(lane, false));
  launch_shared(first ? &GroupKernels::numeric_first : &GroupKernels::numeric,
                &detail::SpgemmSharedLaunch::numeric_smem,
                {&ap, &ac, &av, &bp, &bc, &bv, &ovf, &cp, &cc, &cv, &b_cols, &len}, fork, lane);
  if (spec.global.rows > 0) {
    // A one-pass first run's global rows (group 3 only: no shared table can overflow) write at their
    // IP offsets too, and their lengths come from spgemm_global_scan / _sort into row_len.
    if (first && chunks.size() != 1) throw std::logic_error("spgemm plan: a one-pass first run with chunked tables");
    launch_global_numeric(fork.branch(lane[kSpgemmGlobalGroup]), cp, cc, cv);
  }
  fork.join();
}

// The global rows' numeric phase on stream gs, chunk by chunk: the tables filled, then C's rows
// written from them (dense rows by segment counts, hashed rows by a histogram of column segments,
// then both sorted).
template <class T>
void SpgemmPlan<T>::Impl::launch_global_numeric(CUstream gs, uint64_t cp, uint64_t cc, uint64_t cv) {
  const GroupKernels& k = kernels[kSpgemmGlobalGroup];
  const detail::SpgemmGlobalLaunch& gl = spec.global;
  uint64_t ap = ptr_of(a.row_ptr), ac = ptr_of(a.col_idx), av = ptr_of(a.values), bp = ptr_of(b.row_ptr),
           bc = ptr_of(b.col_idx), bv = ptr_of(b.values), ovf = overflow.ptr(), len = row_len.ptr();
  uint64_t keys = table_keys.ptr(), vals = table_vals.ptr();
  int b_cols = spec.cols, width = gl.sort_cap, segs = gl.segs;
  const auto split = static_cast<unsigned>(gl.split);
  const uint64_t hist_rows = static_cast<uint64_t>(gl.rows) * gl.segs;
  for (const Chunk& ch : chunks) {
    ChunkArgs c = ch.args();
    const auto rows = static_cast<unsigned>(c.n);
    const auto p0 = static_cast<uint64_t>(ch.first);
    uint64_t seg = seg_count.ptr() + sizeof(int32_t) * p0 * gl.split,
             hist = seg_hist.ptr() + sizeof(int32_t) * p0 * gl.segs,
             fill = seg_hist.ptr() + sizeof(int32_t) * (hist_rows + p0 * gl.segs);
    launch(k.init_numeric, rows, split, gl.block, 0, gs, {&c.list, &c.n, &c.always, &c.tables, &ovf, &keys, &vals});
    launch(k.numeric, rows, split, gl.block, 0, gs,
           {&c.list, &c.n, &c.always, &c.tables, &ap, &ac, &av, &bp, &bc, &bv, &keys, &vals, &ovf, &b_cols});
    DBS_CU(cuMemsetD32Async(hist, 0, static_cast<size_t>(c.n) * gl.segs, gs));
    launch(k.count, rows, split, gl.block, 0, gs,
           {&c.list, &c.n, &c.always, &c.tables, &keys, &ovf, &b_cols, &seg, &width, &segs, &hist});
    launch(k.scan, rows, 1, gl.block, 0, gs,
           {&c.list, &c.n, &c.always, &c.tables, &ovf, &b_cols, &segs, &hist, &fill, &len});
    launch(
        k.scatter, rows, split, gl.block, 0, gs,
        {&c.list, &c.n, &c.always, &c.tables, &keys, &vals, &ovf, &cp, &cc, &cv, &b_cols, &width, &segs, &hist, &fill});
    int hashed = 0;
    const std::initializer_list<void*> sort = {&c.list, &c.n,    &c.always, &c.tables, &keys, &vals, &ovf,    &cp, &cc,
                                               &cv,     &b_cols, &seg,      &width,    &segs, &hist, &hashed, &len};
    launch(k.sort, rows, split, gl.block, 0, gs, sort);  // dense rows
    hashed = 1;
    launch(k.sort, rows, gl.seg_blocks, gl.block, gl.sort_smem, gs, sort);
  }
}

// No symbolic phase: the numeric phase writes each row at its offset by IP into the scratch and
// its length into row_len; C is sized from those (the one wait), then filled by a copy.
template <class T>
void SpgemmPlan<T>::Impl::first_run_one_pass(CUstream h) {
  const auto t0 = std::chrono::steady_clock::now();
  analysis.place_rows(h);
  const auto ip = static_cast<size_t>(analysis.products());
  ip_ptr = DeviceBuffer<int32_t>(static_cast<size_t>(spec.rows) + 1, on(h));
  scratch_col = DeviceBuffer<int32_t>(ip, on(h));
  scratch_val = DeviceBuffer<T>(ip, on(h));
  DBS_CU(cuMemsetD32Async(overflow.ptr(), 0, overflow.size(), h));  // none can overflow; the kernels read it
  DBS_CU(cuMemsetD32Async(row_len.ptr(), 0, row_len.size(), h));    // idle rows' lengths
  analysis.ip_offsets(overflow.ptr(), ip_ptr.ptr(), h);
  launch_numeric(h, true);
  size_c(h);  // waits for the stream
  times.symbolic_wait_ms = ms_since(t0) - times.alloc_c_ms;
  const auto t1 = std::chrono::steady_clock::now();
  scratch_bytes = static_cast<int64_t>(ip_ptr.size() * sizeof(int32_t) + scratch_col.size() * sizeof(int32_t) +
                                       scratch_val.size() * sizeof(T));
  analysis.compact(ip_ptr.ptr(), c_ptr.ptr(), scratch_col.ptr(), scratch_val.ptr(), c_col.ptr(), c_val.ptr(),
                   static_cast<int>(sizeof(T)), h);
  ip_ptr.release(h);
  scratch_col.release(h);
  scratch_val.release(h);
  times.numeric_launch_ms = ms_since(t1);
  times.one_pass = true;
}

namespace {

template <class T>
void check_host_csr(const CsrMatrix<T>& m, const char* name) {
  if (m.row_ptr.size() != static_cast<size_t>(m.rows) + 1)
    throw UsageError(fmt::format("spgemm: row_ptr must have rows + 1 entries: {} has {} for {} rows", name,
                                 m.row_ptr.size(), m.rows));
  if (m.values.size() != m.col_idx.size())
    throw UsageError(
        fmt::format("spgemm: {} has {} column indices but {} values", name, m.col_idx.size(), m.values.size()));
}

template <class T>
void check_view(const DeviceCsrView<T>& m, const char* name) {
  if (m.rows < 0 || m.cols < 0 || m.nnz < 0 || m.nnz > std::numeric_limits<int32_t>::max())
    throw UsageError(fmt::format("spgemm: {} is {}x{} with {} nonzeros (int32 indices)", name, m.rows, m.cols, m.nnz));
  if (!m.row_ptr && m.rows > 0)
    throw UsageError(fmt::format("spgemm: {} has {} rows and a null row_ptr", name, m.rows));
  if ((!m.col_idx || !m.values) && m.nnz > 0)
    throw UsageError(fmt::format("spgemm: {} has {} nonzeros and a null col_idx or values", name, m.nnz));
}

}  // namespace

template <class T>
SpgemmPlan<T> SpgemmPlan<T>::build(Context& ctx, const CsrMatrix<T>& a, const CsrMatrix<T>& b) {
  return build(ctx, a, b, SpgemmOptions{});
}

template <class T>
SpgemmPlan<T> SpgemmPlan<T>::build(Context& ctx, const CsrMatrix<T>& a, const CsrMatrix<T>& b,
                                   const SpgemmOptions& opt) {
  ctx.make_current();
  if (a.cols != b.rows)  // before the uploads
    throw UsageError(fmt::format("spgemm: A is {}x{} but B is {}x{}: A's columns must equal B's rows", a.rows, a.cols,
                                 b.rows, b.cols));
  check_host_csr(a, "A");
  check_host_csr(b, "B");
  // A and B on the device; C's size is known after the analysis, whose allocations name it.
  require_device_bytes(fmt::format("plan_spgemm of a {} x {} A ({} nonzeros) and a {} x {} B ({})", a.rows, a.cols,
                                   a.nnz(), b.rows, b.cols, b.nnz()),
                       csr_device_bytes(a.rows, a.nnz(), sizeof(T)) + csr_device_bytes(b.rows, b.nnz(), sizeof(T)));
  // No config given: the tuning DB's for A's structure on this device (dbtune --op spgemm tunes A^2
  // or A A^T, so A names the product), else the prediction from the nearest tuned matrix, else the
  // article's defaults.
  SpgemmOptions o = opt;
  std::string source;
  if (!o.config) {
    const Config cfg = lookup_config(ctx.device().record().fingerprint, structure_fingerprint(a),
                                     config_info<SpgemmConfig>(), "", [&] { return compute_features(a); });
    o.config = config_from_json<SpgemmConfig>(cfg.params);
    source = fmt::format("{}{}", to_string(cfg.source), cfg.note.empty() ? "" : " — " + cfg.note);
  }
  o.config->check();
  DeviceCsr<T> da(a), db(b);
  // Synchronous uploads on the legacy stream, so the analysis there follows them.
  SpgemmPlan<T> plan = build(ctx, da.view(), db.view(), o, nullptr);
  if (!source.empty()) plan.impl_->spec.config_source = source;
  plan.impl_->a_own = std::move(da);
  plan.impl_->b_own = std::move(db);
  plan.impl_->spec.inputs_owned = true;
  return plan;
}

template <class T>
SpgemmPlan<T> SpgemmPlan<T>::build(Context& ctx, const DeviceCsrView<T>& a, const DeviceCsrView<T>& b,
                                   const SpgemmOptions& opt, void* stream) {
  ctx.make_current();
  const auto h = static_cast<CUstream>(stream);
  const auto plan_start = std::chrono::steady_clock::now();
  detail::SpgemmSpecInputs in;
  in.config = opt.config.value_or(SpgemmConfig{});
  in.config_source = opt.config ? "explicit (SpgemmOptions::config)"
                                : "default (SpgemmConfig{}; plans from device CSR do not look up the tuning DB)";
  in.config.check();
  if (a.cols != b.rows)
    throw UsageError(fmt::format("spgemm: A is {}x{} but B is {}x{}: A's columns must equal B's rows", a.rows, a.cols,
                                 b.rows, b.cols));
  check_view(a, "A");
  check_view(b, "B");
  if (a.nnz > 0 && !b.row_ptr) throw UsageError("spgemm: A has nonzeros but B's row_ptr is null");
  auto p = std::make_unique<typename SpgemmPlan<T>::Impl>();
  p->a = a;
  p->b = b;
  detail::SpgemmOperands ops;
  ops.a_ptr = p->ptr_of(a.row_ptr);
  ops.a_col = p->ptr_of(a.col_idx);
  ops.b_ptr = p->ptr_of(b.row_ptr);
  ops.b_col = p->ptr_of(b.col_idx);
  ops.rows = a.rows;
  ops.a_cols = a.cols;
  ops.b_cols = b.cols;
  ops.a_nnz = a.nnz;
  ops.b_nnz = b.nnz;
  const auto analysis_start = std::chrono::steady_clock::now();
  p->pool = ctx.pool_on(h).pool;
  // Under the config narrowed for B's width, as the spec narrows it.
  p->analysis = detail::SpgemmGpuAnalysis(ctx, ops, detail::spgemm_plan_config(in.config, b.cols), h);  // waits once
  p->times.analysis_wait_ms = ms_since(analysis_start);

  CUdevice dev = 0;
  DBS_CU(cuDeviceGet(&dev, ctx.device().ordinal));
  int optin = 0;
  DBS_CU(cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
  in.stats = p->analysis.stats();
  in.rows = a.rows;
  in.b_cols = b.cols;
  in.a_nnz = a.nnz;
  in.b_nnz = b.nnz;
  in.value_bytes = static_cast<int>(sizeof(T));
  in.optin_smem = optin;
  in.arch = ctx.device().arch();
  in.table_budget = opt.global_table_bytes > 0 ? opt.global_table_bytes : ctx.device().memory_bytes / 16;
  in.one_pass = opt.one_pass;
  p->spec = detail::spgemm_plan_spec(in);
  p->branches = &ctx.fork_join();
  p->materialize(ctx, h);
  // The pool's allocations on h done, so that a run on any stream may use them. Nothing else is
  // queued on h since the analysis's wait: this returns at once.
  DBS_CU(cuStreamSynchronize(h));
  p->times.plan_ms = ms_since(plan_start);
  return SpgemmPlan<T>(std::move(p));
}

template <class T>
SpgemmPlan<T>::SpgemmPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
template <class T>
SpgemmPlan<T>::SpgemmPlan(SpgemmPlan&&) noexcept = default;
template <class T>
SpgemmPlan<T>& SpgemmPlan<T>::operator=(SpgemmPlan&&) noexcept = default;
template <class T>
SpgemmPlan<T>::~SpgemmPlan() = default;

template <class T>
void SpgemmPlan<T>::run(void* stream) {
  Impl& p = *impl_;
  const auto h = static_cast<CUstream>(stream);
  if (!p.structured && p.spec.one_pass) {
    p.first_run_one_pass(h);
    return;
  }
  if (!p.structured) {
    const auto t0 = std::chrono::steady_clock::now();
    p.analysis.place_rows(h);  // the group lists, on this run's stream
    if (p.chunks_pending()) p.layout_chunks(h);
    p.launch_symbolic(h);
    p.size_c(h);  // waits for the stream
    p.times.symbolic_wait_ms = ms_since(t0) - p.times.alloc_c_ms;
    const auto t1 = std::chrono::steady_clock::now();
    p.launch_numeric(h);
    p.times.numeric_launch_ms = ms_since(t1);
    return;
  }
  p.launch_numeric(h);
}

template <class T>
void SpgemmPlan<T>::values_changed(std::span<const T> a_values, std::span<const T> b_values) {
  Impl& p = *impl_;
  if (static_cast<int64_t>(a_values.size()) != p.a.nnz || static_cast<int64_t>(b_values.size()) != p.b.nnz)
    throw UsageError(
        fmt::format("SpgemmPlan::values_changed: the plan's A has {} and B {} nonzeros, got {} and {} "
                    "values (only the values may change)",
                    p.a.nnz, p.b.nnz, a_values.size(), b_values.size()));
  DBS_CU(cuCtxSynchronize());  // every stream done with the old values (the last run's may be gone)
  p.a_own.values = upload(a_values);
  p.b_own.values = upload(b_values);
  p.a.values = reinterpret_cast<const T*>(p.a_own.values.ptr());
  p.b.values = reinterpret_cast<const T*>(p.b_own.values.ptr());
}

template <class T>
bool SpgemmPlan<T>::structure_known() const {
  return impl_->structured;
}
template <class T>
int32_t SpgemmPlan<T>::rows() const {
  return impl_->spec.rows;
}
template <class T>
int32_t SpgemmPlan<T>::cols() const {
  return impl_->spec.cols;
}
template <class T>
int64_t SpgemmPlan<T>::nnz() const {
  return impl_->nnz;
}

namespace {
void require_structure(bool structured, const char* what) {
  if (!structured) throw UsageError(fmt::format("SpgemmPlan::{}: C is known after the first run()", what));
}
}  // namespace

template <class T>
uint64_t SpgemmPlan<T>::row_ptr() const {
  require_structure(impl_->structured, "row_ptr");
  return impl_->c_ptr.ptr();
}
template <class T>
uint64_t SpgemmPlan<T>::col_idx() const {
  require_structure(impl_->structured, "col_idx");
  return impl_->c_col.ptr();
}
template <class T>
uint64_t SpgemmPlan<T>::values() const {
  require_structure(impl_->structured, "values");
  return impl_->c_val.ptr();
}

template <class T>
CsrMatrix<T> SpgemmPlan<T>::download() const {
  const Impl& p = *impl_;
  require_structure(p.structured, "download");
  DBS_CU(cuCtxSynchronize());  // the runs done, on whichever stream (it may be gone by now)
  CsrMatrix<T> c;
  c.rows = p.spec.rows;
  c.cols = p.spec.cols;
  c.row_ptr = p.c_ptr.download();
  // nnz entries only: an empty C keeps a one-entry buffer that no kernel writes (initcheck).
  c.col_idx.resize(static_cast<size_t>(p.nnz));
  c.values.resize(static_cast<size_t>(p.nnz));
  p.c_col.download_bytes(c.col_idx.data(), c.col_idx.size() * sizeof(int32_t), 0);
  p.c_val.download_bytes(c.values.data(), c.values.size() * sizeof(T), 0);
  return c;
}

template <class T>
const SpgemmConfig& SpgemmPlan<T>::config() const {
  return impl_->spec.config;
}
template <class T>
DeviceCsrView<T> SpgemmPlan<T>::result() const {
  const Impl& p = *impl_;
  require_structure(p.structured, "result");
  return {p.spec.rows,
          p.spec.cols,
          p.nnz,
          reinterpret_cast<const int32_t*>(p.c_ptr.ptr()),
          reinterpret_cast<const int32_t*>(p.c_col.ptr()),
          reinterpret_cast<const T*>(p.c_val.ptr())};
}

template <class T>
const SpgemmGrouping& SpgemmPlan<T>::grouping() const {
  if (!impl_->grouping) {
    if (!impl_->analysis.placed()) {  // before the first run: the lists filled here, once
      impl_->analysis.place_rows(nullptr);
      DBS_CU(cuStreamSynchronize(nullptr));
    }
    impl_->grouping = impl_->analysis.grouping();
  }
  return *impl_->grouping;
}
template <class T>
int64_t SpgemmPlan<T>::products() const {
  return impl_->analysis.products();
}
template <class T>
int64_t SpgemmPlan<T>::max_row_products() const {
  return impl_->analysis.stats().max_ip;
}
template <class T>
int64_t SpgemmPlan<T>::overflow_rows() const {
  return impl_->overflowed;
}
template <class T>
int64_t SpgemmPlan<T>::global_slots() const {
  return impl_->analysis.global_slots();
}
template <class T>
const SpgemmFreshTimes& SpgemmPlan<T>::fresh_times() const {
  return impl_->times;
}

namespace {
template <class U>
int64_t bytes_of(const DeviceBuffer<U>& d) {
  return static_cast<int64_t>(d.size() * sizeof(U));
}
}  // namespace

template <class T>
int64_t SpgemmPlan<T>::device_bytes() const {
  const Impl& p = *impl_;
  return p.a_own.device_bytes() + p.b_own.device_bytes() + p.analysis.device_bytes() + bytes_of(p.table_keys) +
         bytes_of(p.table_vals) + bytes_of(p.seg_count) + bytes_of(p.seg_hist) + bytes_of(p.row_len) +
         bytes_of(p.overflow) + bytes_of(p.c_ptr) + bytes_of(p.c_col) + bytes_of(p.c_val) + bytes_of(p.ip_ptr) +
         bytes_of(p.scratch_col) + bytes_of(p.scratch_val);
}

template <class T>
int64_t SpgemmPlan<T>::peak_device_bytes() const {
  return device_bytes() + impl_->scratch_bytes;
}

template <class T>
std::string SpgemmPlan<T>::explain() const {
  const Impl& p = *impl_;
  std::string out = detail::spgemm_explain(p.spec);
  if (p.spec.global.rows > 0)
    out += p.chunks_pending()
               ? fmt::format("  global tables over the budget of {} bytes: laid out in chunks by the first run\n",
                             p.spec.table_budget)
               : fmt::format("  global tables in {} chunk(s) of at most {} bytes, run one after another\n",
                             p.chunks.size(), p.spec.table_budget);
  if (p.structured)
    out += fmt::format("  C: {} nnz; {} row(s) overflowed to a global table\n", p.nnz, p.overflowed);
  else
    out += "  C: not yet sized\n";
  out += fmt::format("  device: {} bytes held{}\n", device_bytes(), p.structured ? ", C included" : "");
  out +=
      "  planning ran the analysis on the GPU and waited once (group counts read back); the first run() fills "
      "the group lists, then waits once more after the symbolic phase (nnz(C) read back, C's row_ptr already on "
      "the GPU, C allocated); later runs launch the numeric phase only, without a host sync\n";
  out += p.spec.one_pass ? fmt::format(
                               "  first run in one pass: no symbolic phase; the numeric phase writes rows at their "
                               "IP offsets into {} bytes of scratch, then C is sized and filled by a copy\n",
                               p.structured ? p.scratch_bytes : int64_t{-1})
                         : "  first run in two passes: the symbolic phase sizes C before the numeric phase\n";
  return out;
}

template <class T>
CsrMatrix<T> spgemm(Context& ctx, const CsrMatrix<T>& a, const CsrMatrix<T>& b, const SpgemmOptions& options) {
  SpgemmPlan<T> plan = plan_spgemm(ctx, a, b, options);
  Stream s(ctx);
  plan.run(s.handle());
  return plan.download();
}

template class SpgemmPlan<float>;
template class SpgemmPlan<double>;
template CsrMatrix<float> spgemm(Context&, const CsrMatrix<float>&, const CsrMatrix<float>&, const SpgemmOptions&);
template CsrMatrix<double> spgemm(Context&, const CsrMatrix<double>&, const CsrMatrix<double>&, const SpgemmOptions&);

}  // namespace dbsparse

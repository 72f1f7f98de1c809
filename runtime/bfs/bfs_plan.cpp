// DB-BFS plans (include/dbsparse/bfs.hpp): the spec (runtime/bfs/bfs_spec.hpp), then the graph's
// adjacency views on the device, the search state, and the launch of templates/bfs/bfs.cuh.
#include "dbsparse/bfs.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <functional>

#include <fmt/format.h>

#include "codegen/keys/bfs_key.hpp"
#include "dbsparse/abi/bfs.h"
#include "dbsparse/features.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/device_csr_view.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/bfs/bfs_spec.hpp"
#include "runtime/bfs/bfs_trial.hpp"
#include "runtime/gpu/plan_trial.hpp"

namespace dbsparse {

const char* to_string(BfsLaunch l) {
  switch (l) {
    case BfsLaunch::Auto:
      return "auto";
    case BfsLaunch::Cooperative:
      return "cooperative (one launch, a grid barrier per level)";
    case BfsLaunch::HostLoop:
      return "host loop (a launch and a host wait per level)";
  }
  return "?";
}

std::string BfsRunStats::to_text() const {
  std::string s = fmt::format("source {}: {} levels, {}\n", source, levels, dbsparse::to_string(launch));
  s += "level  dir   frontier    blocks       out-edges        ms\n";
  for (const auto& l : per_level)
    s += fmt::format("{:>5}  {:<4} {:>9} {:>9} {:>15} {:>9}\n", l.level, dbsparse::to_string(l.direction), l.frontier,
                     l.blocks, l.edges, l.ms < 0 ? std::string("-") : fmt::format("{:.4f}", l.ms));
  if (levels > static_cast<int32_t>(per_level.size()))
    s += fmt::format("({} more levels not logged)\n", levels - static_cast<int32_t>(per_level.size()));
  return s;
}

std::string BfsStats::to_text() const {
  const double e = static_cast<double>(std::max<int64_t>(entries, 1));
  return fmt::format(
      "bfs storage: {} vertices, {} entries ({})\n"
      "  adjacency views   {:>14} bytes  {:.2f} per entry\n"
      "  device total      {:>14} bytes  {:.2f} per entry (masks, block and task lists, state, level log)\n"
      "  CSR, f32 values   {:>14} bytes  {:.2f} per entry; device / CSR = {:.3f}\n"
      "  push task capacity {} per frontier; planning work {:.1f} ms\n",
      vertices, entries, symmetric ? "symmetric: one view serves push and pull" : "not symmetric: push and pull views",
      bytes_format, static_cast<double>(bytes_format) / e, bytes_device, static_cast<double>(bytes_device) / e,
      bytes_csr, static_cast<double>(bytes_csr) / e,
      bytes_csr ? static_cast<double>(bytes_device) / static_cast<double>(bytes_csr) : 0.0, task_capacity, convert_ms);
}

// The plan: its spec and what materialize made of it.
struct BfsPlan::Impl : detail::BfsSpec {
  BfsStats stats;
  BfsLaunch launch = BfsLaunch::Cooperative;
  KernelInfo kernel;
  CUfunction search = nullptr;
  unsigned coop_grid = 0, loop_grid = 0;
  uint64_t total_edges = 0;
  int64_t held_bytes = 0;                                        // every allocation, summed from the buffers
  DeviceBuffer<int32_t> push_ptr, push_idx, pull_ptr, pull_idx;  // pull_* empty when symmetric
  // What the kernel reads: the buffers above, or the caller's arrays (a DeviceGraphView64).
  uint64_t view_push_ptr = 0, view_push_idx = 0, view_pull_ptr = 0, view_pull_idx = 0;
  DeviceBuffer<uint32_t> visited, frontier;
  DeviceBuffer<int32_t> queue;
  DeviceBuffer<abi::BfsTask> tasks;
  DeviceBuffer<uint8_t> state;
  DeviceBuffer<abi::BfsLevelLog> log;
  // The last run, for last_stats(): its source, the launch path and (profiling) per-level times.
  mutable int32_t last_source = -1;
  mutable void* last_stream = nullptr;
  mutable std::vector<double> level_ms;
  std::unique_ptr<Event> level_start, level_stop;  // profiling only, made with the plan
  mutable bool ran = false;

  abi::BfsArgs args(int32_t source, uint64_t levels, uint64_t parents) const {
    abi::BfsArgs a{};
    a.push_ptr = reinterpret_cast<const void*>(static_cast<uintptr_t>(view_push_ptr));
    a.push_idx = reinterpret_cast<const int32_t*>(static_cast<uintptr_t>(view_push_idx));
    a.pull_ptr = reinterpret_cast<const void*>(static_cast<uintptr_t>(view_pull_ptr));
    a.pull_idx = reinterpret_cast<const int32_t*>(static_cast<uintptr_t>(view_pull_idx));
    a.visited = visited.data();
    a.frontier = frontier.data();
    a.queue = queue.data();
    a.tasks = tasks.data();
    a.levels = reinterpret_cast<int32_t*>(static_cast<uintptr_t>(levels));
    a.parents = reinterpret_cast<int32_t*>(static_cast<uintptr_t>(parents));
    a.state = reinterpret_cast<abi::BfsState*>(state.data());
    a.log = log.data();
    a.total_edges = total_edges;
    a.n = n;
    a.blocks = blocks;
    a.words = words;
    a.source = source;
    a.task_capacity = static_cast<uint32_t>(stats.task_capacity);
    a.alpha = static_cast<float>(typed.alpha);
    a.beta = static_cast<float>(typed.beta);
    a.th3 = static_cast<float>(typed.bfs_th3);
    a.solo_tasks = static_cast<uint32_t>(typed.solo_tasks);
    return a;
  }

  void launch_steps(abi::BfsArgs a, int begin, int end, bool cooperative, void* stream) const {
    a.step_begin = begin;
    a.step_end = end;
    a.cooperative = cooperative ? 1 : 0;
    void* params[] = {&a};
    if (cooperative)
      DBS_CU(
          cuLaunchCooperativeKernel(search, coop_grid, 1, 1, threads, 1, 1, 0, static_cast<CUstream>(stream), params));
    else
      DBS_CU(cuLaunchKernel(search, loop_grid, 1, 1, threads, 1, 1, 0, static_cast<CUstream>(stream), params, nullptr));
  }

  int32_t read_done(void* stream) const {
    DBS_CU(cuStreamSynchronize(static_cast<CUstream>(stream)));
    int32_t done = 0;
    state.download_bytes(&done, sizeof done, offsetof(abi::BfsState, done));
    return done;
  }
};

namespace {

template <class U>
DeviceBuffer<U> upload(const std::vector<U>& v) {
  return v.empty() ? DeviceBuffer<U>(1) : DeviceBuffer<U>(std::span<const U>(v));
}

// The spec's search variant, loaded.
detail::LoadedKernel load_search(Context& ctx, BfsPlan::Impl& p) {
  auto loaded = ctx.modules().get(codegen::make_source(p.key), ctx.device().arch());
  p.kernel = loaded.info;
  p.search = loaded.entry("search");
  return loaded;
}

// The search state (masks, lists, state, log; p.stats.task_capacity set), the profiling events and
// the launch shape: what both plan_bfs paths share once the views are in p.view_*.
void finish_bfs(Context& ctx, BfsPlan::Impl& p, const BfsOptions& opt) {
  const auto& s = p.stats;
  if (p.profile) p.level_start = std::make_unique<Event>(), p.level_stop = std::make_unique<Event>();
  const size_t words = static_cast<size_t>(std::max(p.words, 1));
  p.visited = DeviceBuffer<uint32_t>(words);
  p.frontier = DeviceBuffer<uint32_t>(3 * words);
  p.queue = DeviceBuffer<int32_t>(3 * static_cast<size_t>(std::max(p.blocks, 1)));
  p.tasks = DeviceBuffer<abi::BfsTask>(2 * static_cast<size_t>(s.task_capacity));
  p.state = DeviceBuffer<uint8_t>(sizeof(abi::BfsState));
  p.state.fill_bytes(0);  // the grid barrier's counters start at zero
  p.log = DeviceBuffer<abi::BfsLevelLog>(abi::kBfsLogLevels);
  // bfs_storage's figures are the allocations above, counted the same way (a gpu test compares them).
  p.held_bytes = static_cast<int64_t>((p.push_ptr.size() + p.push_idx.size() + p.pull_ptr.size() + p.pull_idx.size() +
                                       p.visited.size() + p.frontier.size() + p.queue.size()) *
                                          4 +
                                      p.tasks.size() * sizeof(abi::BfsTask) + p.state.size() +
                                      p.log.size() * sizeof(abi::BfsLevelLog));

  CUdevice dev = 0;
  DBS_CU(cuDeviceGet(&dev, ctx.device().ordinal));
  int coop = 0, occ = 0;
  DBS_CU(cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev));
  DBS_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&occ, p.search, static_cast<int>(p.threads), 0));
  // Every block must be resident at once for the grid barrier: exactly what fits, no more.
  const int sms = ctx.device().sm_count;
  p.coop_grid = static_cast<unsigned>(std::max(occ, 0) * sms);
  p.loop_grid = static_cast<unsigned>(std::max(occ, 1) * sms);
  p.launch = detail::bfs_launch(opt, coop && occ > 0);
}

}  // namespace

template <class T>
BfsPlan BfsPlan::build(Context& ctx, const CsrMatrix<T>& a) {
  return build(ctx, a, BfsOptions{});
}

template <class T>
BfsPlan BfsPlan::build(Context& ctx, const CsrMatrix<T>& a, const BfsOptions& opt) {
  if (a.rows != a.cols)
    throw UsageError(fmt::format("plan_bfs: the adjacency matrix must be square, is {}x{}", a.rows, a.cols));
  // Only a plan without an explicit config reads the DB (its config, a trial's outcome).
  const std::string fp = opt.config ? std::string() : structure_fingerprint(a);
  Config config = opt.config ? *opt.config
                             : lookup_config(ctx.device().record().fingerprint, fp, config_info<BfsConfig>(), "",
                                             [&] { return compute_features(a); });
  return build_impl(ctx, pattern_of(a, opt.transpose), opt, config, fp);
}

BfsPlan BfsPlan::build(Context& ctx, const PatternGraph& g, const BfsOptions& opt) {
  if (g.row_ptr.size() != static_cast<size_t>(g.n) + 1 || g.row_ptr.back() != g.entries())
    throw UsageError("plan_bfs: the pattern graph's row_ptr must have n + 1 entries ending at entries()");
  Config config;
  const std::string fp = opt.config ? std::string() : structure_fingerprint(g.n, g.n, g.row_ptr, g.col_idx);
  if (opt.config) {
    config = *opt.config;
  } else {
    // The features (wanted only for a prediction) read a CsrMatrix: the copy is made only then.
    config = lookup_config(ctx.device().record().fingerprint, fp, config_info<BfsConfig>(), "", [&] {
      CsrMatrix<float> shape;  // structure only: the features read no values
      shape.rows = shape.cols = g.n;
      shape.row_ptr = g.row_ptr;
      shape.col_idx = g.col_idx;
      return compute_features(shape);
    });
  }
  return build_impl(ctx, opt.transpose ? transpose(g) : g, opt, config, fp);
}

BfsPlan BfsPlan::build_impl(Context& ctx, PatternGraph g, const BfsOptions& opt, const Config& config,
                            const std::string& matrix_fp) {
  if (detail::bfs_small_auto_takes_push(opt, config, g.entries())) {
    BfsOptions o = opt;
    o.direction = BfsDirection::Push;
    BfsPlan plan = build_impl(ctx, std::move(g), o, config, matrix_fp);
    plan.impl_->trial = fmt::format("size: auto on a graph of {} entries (< {}) pushes only", plan.stats().entries,
                                    detail::kTrialMinNnz);
    return plan;
  }
  ctx.make_current();
  if (static_cast<int64_t>(g.n) + 32 > INT32_MAX) throw UsageError("plan_bfs: too many vertices for int32 indices");
  require_device_bytes(
      fmt::format("plan_bfs of a graph of {} vertices and {} edges (its pattern, at least)", g.n, g.entries()),
      csr_device_bytes(g.n, g.entries(), 0));
  auto p = std::make_unique<BfsPlan::Impl>();
  static_cast<detail::BfsSpec&>(*p) = detail::bfs_spec(opt, config, g.n, false);

  // The views: pull reads row i of A (i's in-neighbours), push column j (j's out-neighbours). A
  // symmetric pattern is its own transpose: one copy serves both.
  const auto t0 = std::chrono::steady_clock::now();
  auto& s = p->stats;
  s = bfs_storage(g);
  PatternGraph push = s.symmetric ? PatternGraph{} : transpose(g);
  const PatternGraph& pv = s.symmetric ? g : push;
  s.convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  p->total_edges = static_cast<uint64_t>(pv.entries());

  p->push_ptr = upload(pv.row_ptr);
  p->push_idx = upload(pv.col_idx);
  if (!s.symmetric) {
    p->pull_ptr = upload(g.row_ptr);
    p->pull_idx = upload(g.col_idx);
  }
  p->view_push_ptr = p->push_ptr.ptr();
  p->view_push_idx = p->push_idx.ptr();
  p->view_pull_ptr = s.symmetric ? p->push_ptr.ptr() : p->pull_ptr.ptr();
  p->view_pull_idx = s.symmetric ? p->push_idx.ptr() : p->pull_idx.ptr();
  load_search(ctx, *p);
  finish_bfs(ctx, *p, opt);
  const bool trial =
      !opt.config && opt.direction == BfsDirection::Auto && !opt.profile && p->config.source != ConfigSource::Tuned;
  const int64_t entries = p->stats.entries;
  BfsPlan plan(std::move(p));
  if (!trial) return plan;
  auto push_plan = [&] {
    BfsOptions o = opt;
    o.direction = BfsDirection::Push;
    return build_impl(ctx, g, o, config, matrix_fp);
  };
  auto note = [](BfsPlan& b, std::string text) { b.impl_->trial = std::move(text); };
  return detail::bfs_direction_by_trial(ctx, std::move(plan), push_plan, note, matrix_fp, detail::bfs_trial_sources(pv),
                                        entries, opt.trial_ms);
}

namespace {

constexpr const char* kWho64 = "plan_bfs (64-bit offsets)";

// The vertex limit; negative sizes and null arrays are check_device_csr's (check_views).
void check_view_shape(const DeviceGraphView64& v, const char* name) {
  if (static_cast<int64_t>(v.n) + 32 > INT32_MAX)
    throw UsageError(
        fmt::format("{}: {} has {} vertices; vertices are int32 (at most {})", kWho64, name, v.n, INT32_MAX - 32));
}

// One pass of bfs_check_view over view v (m: the mirror view for pass 1).
abi::BfsViewCheck check_pass(Context& ctx, CUfunction fn, const DeviceGraphView64& v, const DeviceGraphView64& m,
                             int pass) {
  abi::BfsViewCheck init{};
  init.first_unmirrored = ~uint64_t{0};
  uint64_t ptr = reinterpret_cast<uintptr_t>(v.row_ptr), idx = reinterpret_cast<uintptr_t>(v.col_idx);
  uint64_t mptr = reinterpret_cast<uintptr_t>(m.row_ptr), midx = reinterpret_cast<uintptr_t>(m.col_idx);
  int n = v.n, which = pass;
  return detail::run_check_kernel(ctx, fn, pass == 1 ? int64_t{v.n} * 32 : v.n, {&ptr, &idx, &n, &mptr, &midx, &which},
                                  init);
}

detail::DeviceCsrArrays arrays_of(const DeviceGraphView64& v) {
  detail::DeviceCsrArrays m;
  m.row_ptr = reinterpret_cast<uintptr_t>(v.row_ptr);
  m.offsets64 = true;
  m.col_idx = reinterpret_cast<uintptr_t>(v.col_idx);
  m.rows = m.cols = v.n;
  m.nnz = v.entries;
  return m;
}

// The caller's views checked before a search trusts them: sizes, offsets, columns and sorted rows
// by csr_check, then each in-entry's mirror by bfs_check_view. UsageError naming the first bad row
// or entry. Returns the push view's task count.
int64_t check_views(Context& ctx, CUfunction fn, const DeviceGraphView64& push, const DeviceGraphView64& pull,
                    bool two_views) {
  const char* push_name = two_views ? "the out-neighbour view" : "the graph";
  const char* pull_name = two_views ? "the in-neighbour view" : "the graph";
  detail::check_device_csr(ctx, kWho64, pull_name, arrays_of(pull), true);
  // The out-neighbour view's rows are searched by the mirror pass: sorted too.
  if (two_views) detail::check_device_csr(ctx, kWho64, push_name, arrays_of(push), true);
  const auto mirror = check_pass(ctx, fn, pull, push, 1);
  if (mirror.unmirrored) {
    const int64_t r = static_cast<int64_t>(mirror.first_unmirrored);
    if (two_views)
      throw UsageError(fmt::format(
          "{}: the two views are not each other's transpose: {} entries (i, j) of the in-neighbour view have no "
          "(j, i) in the out-neighbour view, the first in row {} (its columns must be sorted in each row)",
          kWho64, mirror.unmirrored, r));
    throw UsageError(fmt::format(
        "{}: the graph is not symmetric: {} entries (i, j) have no (j, i), the first in row {}; pass the transposed "
        "graph's view as a_transposed",
        kWho64, mirror.unmirrored, r));
  }
  return static_cast<int64_t>(check_pass(ctx, fn, push, push, 0).pieces);
}

}  // namespace

BfsPlan BfsPlan::build(Context& ctx, const DeviceGraphView64& a, const BfsOptions& opt,
                       const DeviceGraphView64* a_transposed) {
  ctx.make_current();
  check_view_shape(a, "the graph");
  if (a_transposed) {
    check_view_shape(*a_transposed, "the transposed graph");
    if (a_transposed->n != a.n || a_transposed->entries != a.entries)
      throw UsageError(
          fmt::format("{}: the transposed graph has {} vertices and {} entries, the graph {} and {}: a "
                      "transpose has as many of each",
                      kWho64, a_transposed->n, a_transposed->entries, a.n, a.entries));
  }
  // The views by role: pull reads a vertex's in-neighbours, push its out-neighbours.
  const DeviceGraphView64& pull = a_transposed && opt.transpose ? *a_transposed : a;
  const DeviceGraphView64& push = !a_transposed ? a : opt.transpose ? a : *a_transposed;
  const Config config =
      opt.config ? *opt.config : Config{"bfs", config_to_json(BfsConfig{}), ConfigSource::Default, "device view"};
  auto p = std::make_unique<BfsPlan::Impl>();
  static_cast<detail::BfsSpec&>(*p) = detail::bfs_spec(opt, config, a.n, true);
  const auto t0 = std::chrono::steady_clock::now();
  const auto loaded = load_search(ctx, *p);
  const int64_t pieces = check_views(ctx, loaded.entry("check_view"), push, pull, a_transposed != nullptr);
  auto& s = p->stats;
  s = detail::bfs_view_stats(a.n, a.entries, a_transposed == nullptr, pieces);
  if (s.task_capacity > int64_t{UINT32_MAX})
    throw UsageError(fmt::format("{}: the graph lists {} push tasks; a frontier's task list holds at most {}", kWho64,
                                 s.task_capacity, UINT32_MAX));
  s.convert_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  require_device_bytes(
      fmt::format("{}: the search state of a graph of {} vertices and {} edges", kWho64, a.n, a.entries),
      s.bytes_device);
  p->view_push_ptr = reinterpret_cast<uintptr_t>(push.row_ptr);
  p->view_push_idx = reinterpret_cast<uintptr_t>(push.col_idx);
  p->view_pull_ptr = reinterpret_cast<uintptr_t>(pull.row_ptr);
  p->view_pull_idx = reinterpret_cast<uintptr_t>(pull.col_idx);
  p->total_edges = static_cast<uint64_t>(push.entries);
  finish_bfs(ctx, *p, opt);
  return BfsPlan(std::move(p));
}

BfsPlan::BfsPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BfsPlan::BfsPlan(BfsPlan&&) noexcept = default;
BfsPlan& BfsPlan::operator=(BfsPlan&&) noexcept = default;
BfsPlan::~BfsPlan() = default;

void BfsPlan::run(int32_t source, DeviceBuffer<int32_t>& levels, const Stream& stream) const {
  if (levels.size() != static_cast<size_t>(impl_->n))
    throw UsageError(
        fmt::format("BfsPlan::run: levels has {} elements, the graph {} vertices", levels.size(), impl_->n));
  run(source, levels.ptr(), 0, stream.handle());
}

void BfsPlan::run(int32_t source, DeviceBuffer<int32_t>& levels, DeviceBuffer<int32_t>& parents,
                  const Stream& stream) const {
  if (levels.size() != static_cast<size_t>(impl_->n) || parents.size() != static_cast<size_t>(impl_->n))
    throw UsageError(fmt::format("BfsPlan::run: levels and parents need {} elements each, have {} and {}", impl_->n,
                                 levels.size(), parents.size()));
  run(source, levels.ptr(), parents.ptr(), stream.handle());
}

void BfsPlan::run(int32_t source, uint64_t levels, uint64_t parents, void* stream) const {
  const Impl& p = *impl_;
  if (source < 0 || source >= p.n)
    throw UsageError(fmt::format("BfsPlan::run: source {} is not a vertex (the graph has {})", source, p.n));
  if (!levels) throw UsageError("BfsPlan::run: levels is null");
  p.last_source = source;
  p.last_stream = stream;
  p.ran = true;
  p.level_ms.clear();
  const abi::BfsArgs a = p.args(source, levels, parents);
  if (p.launch == BfsLaunch::Cooperative) {
    p.launch_steps(a, 0, INT_MAX, true, stream);
    return;
  }
  // The host loop: clear and seed, then a level per launch until a level finds the frontier empty.
  p.launch_steps(a, 0, 1, false, stream);
  p.launch_steps(a, 1, 2, false, stream);
  for (int level = 0; level <= p.n; ++level) {
    if (p.profile) p.level_start->record(stream);
    p.launch_steps(a, 2 + level, 3 + level, false, stream);
    if (p.profile) p.level_stop->record(stream);
    if (p.read_done(stream)) break;
    if (p.profile) p.level_ms.push_back(p.level_stop->elapsed_ms_since(*p.level_start));
  }
}

BfsRunStats BfsPlan::last_stats() const {
  const Impl& p = *impl_;
  BfsRunStats r;
  if (!p.ran) return r;
  r.source = p.last_source;
  r.launch = p.launch;
  DBS_CU(cuStreamSynchronize(static_cast<CUstream>(p.last_stream)));
  abi::BfsState st{};
  p.state.download_bytes(&st, sizeof st, 0);
  r.levels = st.levels;
  const int logged = std::min(r.levels, abi::kBfsLogLevels);
  std::vector<abi::BfsLevelLog> log(static_cast<size_t>(logged));
  if (logged) p.log.download_bytes(log.data(), log.size() * sizeof(abi::BfsLevelLog), 0);
  for (int l = 0; l < logged; ++l) {
    BfsLevelStats s;
    s.level = l;
    s.direction = log[l].dir == abi::kBfsPull ? BfsDirection::Pull : BfsDirection::Push;
    s.frontier = log[l].vertices;
    s.blocks = log[l].blocks;
    s.edges = static_cast<int64_t>(log[l].edges);
    if (l < static_cast<int>(p.level_ms.size())) s.ms = p.level_ms[l];
    r.per_level.push_back(s);
  }
  return r;
}

int32_t BfsPlan::vertices() const { return impl_->n; }
int64_t BfsPlan::device_bytes_held() const { return impl_->held_bytes; }
BfsDirection BfsPlan::direction() const { return impl_->direction; }
BfsLaunch BfsPlan::launch() const { return impl_->launch; }
const BfsStats& BfsPlan::stats() const { return impl_->stats; }
const Config& BfsPlan::config() const { return impl_->config; }
const BfsConfig& BfsPlan::typed_config() const { return impl_->typed; }
const KernelInfo& BfsPlan::kernel() const { return impl_->kernel; }

std::string BfsPlan::explain() const {
  const Impl& p = *impl_;
  const BfsStats& s = p.stats;
  std::string out = fmt::format("bfs plan: {} vertices, {} adjacency entries ({})\n", s.vertices, s.entries,
                                s.symmetric ? "symmetric: one view for push and pull" : "push and pull views");
  out += fmt::format("  kernel {} ({}), direction policy {}\n", p.kernel.key, p.kernel.origin, to_string(p.direction));
  out += fmt::format("  levels driven by: {}{}; {} blocks of {} threads{}\n", to_string(p.launch),
                     p.profile ? ", profiling every level" : "",
                     p.launch == BfsLaunch::Cooperative ? p.coop_grid : p.loop_grid, p.threads,
                     p.typed.solo_tasks && p.launch == BfsLaunch::Cooperative
                         ? fmt::format(", push levels of <= {} tasks on one block", p.typed.solo_tasks)
                         : std::string());
  out += fmt::format("  config ({}): {}{}\n", to_string(p.config.source), p.config.params.dump(),
                     p.config.note.empty() ? "" : " — " + p.config.note);
  if (!p.trial.empty()) out += fmt::format("  direction policy chosen by {}\n", p.trial);
  if (s.views_in_place)
    out += fmt::format(
        "  the caller's views read in place (64-bit row offsets, {} bytes); the plan's own device bytes {}\n",
        s.bytes_format, s.bytes_device);
  else
    out += fmt::format(
        "  device bytes {} (views {}, {:.2f} bytes/entry; CSR with f32 values {}: {:.2f}x)\n", s.bytes_device,
        s.bytes_format, s.entries ? static_cast<double>(s.bytes_format) / static_cast<double>(s.entries) : 0.0,
        s.bytes_csr, s.bytes_csr ? static_cast<double>(s.bytes_device) / static_cast<double>(s.bytes_csr) : 0.0);
  out += fmt::format("  push task capacity {}, {} {:.1f} ms\n", s.task_capacity,
                     s.views_in_place ? "view checks" : "conversion", s.convert_ms);
  return out;
}

template BfsPlan BfsPlan::build(Context&, const CsrMatrix<float>&, const BfsOptions&);
template BfsPlan BfsPlan::build(Context&, const CsrMatrix<double>&, const BfsOptions&);
template BfsPlan BfsPlan::build(Context&, const CsrMatrix<float>&);
template BfsPlan BfsPlan::build(Context&, const CsrMatrix<double>&);

}  // namespace dbsparse

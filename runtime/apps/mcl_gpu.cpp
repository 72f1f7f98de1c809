// Markov clustering on the GPU (include/dbsparse/spgemm_apps.hpp): mcl_cpu's loop with every step
// on the device. The start (mcl_start's P) and the labels (mcl_labels' components) by
// templates/apps/mcl_ends.cuh; per iteration: a plan for P·P from P on the device (P's structure changes
// every iteration, so the plan is new each time), Q = P·P left on the device, mcl_prune on Q in
// place, the kept counts scanned into the new P's row pointers on the device (nnz read back: one
// small wait), mcl_gather into the new P, mcl_change against the old P. Only the labels come back
// to the host, and P when asked for.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "codegen/keys/mcl_key.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"
#include "runtime/gpu/upload_nonempty.hpp"
#include "runtime/spgemm/spgemm_gpu_analysis.hpp"

namespace dbsparse {
namespace {

// Threads per block of mcl_prune (a block per row of P·P) and of the warp-per-row kernels. Not
// tuned: rows after pruning hold at most keep_top_k entries, and P·P's at most top_k² of them.
constexpr int kMclBlock = 256;

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

template <class U>
DeviceBuffer<U> upload(std::span<const U> host) {
  return detail::upload_nonempty(host);
}

template <class T>
class MclRunner {
 public:
  // From the graph (on the device: the start by mcl_start's rules there). expand: P·P by another
  // library (MclExpand); empty: by hash SpGEMM.
  MclRunner(Context& ctx, const MclOptions& o, const CsrMatrix<T>& g, MclExpand<T> expand)
      : ctx_(ctx), o_(o), stream_(ctx), p_current_(false), expand_(std::move(expand)) {
    o_.check();
    if (g.rows != g.cols) throw UsageError(fmt::format("mcl: the graph must be square, is {}x{}", g.rows, g.cols));
    load(g.rows);
    start(DeviceCsr<T>(g));
  }
  // From a given P (square, rows sorted), as mcl_step's.
  MclRunner(Context& ctx, const MclOptions& o, CsrMatrix<T> p) : ctx_(ctx), o_(o), stream_(ctx), p_(std::move(p)) {
    o_.check();
    if (p_.rows != p_.cols) throw UsageError(fmt::format("mcl: P must be square, is {}x{}", p_.rows, p_.cols));
    load(p_.rows);
    dev_ = DeviceCsr<T>(p_);
  }

  // P on the host, downloaded on the first call after a step.
  const CsrMatrix<T>& p() {
    if (!p_current_) {
      p_ = download(dev_.view());
      p_current_ = true;
    }
    return p_;
  }

  // One iteration: p() becomes the next P, on the host and the device.
  MclIteration step() {
    MclIteration it;
    const auto t0 = Clock::now();
    const auto h = static_cast<CUstream>(stream_.handle());
    int n = dev_.rows;
    // Q = P·P, on the device: the plan (kept alive until the step's last wait), or the callback's.
    std::optional<SpgemmPlan<T>> plan;
    uint64_t qp = 0, qc = 0, qv = 0;
    if (expand_) {
      const DeviceCsrView<T> q = expand_(dev_.view(), stream_.handle());
      if (q.rows != n || q.cols != dev_.cols)
        throw Error(
            fmt::format("mcl: the expansion returned a {}x{} matrix for a {}x{} P", q.rows, q.cols, n, dev_.cols));
      qp = reinterpret_cast<uint64_t>(q.row_ptr);
      qc = reinterpret_cast<uint64_t>(q.col_idx);
      qv = reinterpret_cast<uint64_t>(q.values);
      it.nnz_expanded = q.nnz;
    } else {
      plan.emplace(plan_spgemm(ctx_, dev_.view(), dev_.view(), SpgemmOptions{}, h));
      plan->run(h);
      qp = plan->row_ptr();
      qc = plan->col_idx();
      qv = plan->values();
      it.nnz_expanded = plan->nnz();
    }
    DBS_CU(cuStreamSynchronize(h));
    it.expand_ms = ms_since(t0);

    uint64_t kl = kept_len_.ptr();
    // +0.0 for a -0.0 threshold: the kernel compares bit patterns.
    T r = static_cast<T>(o_.inflation), below = static_cast<T>(o_.prune_below) + T(0);
    int top_k = o_.keep_top_k;
    if (n > 0) {
      void* params[] = {&n, &qp, &qc, &qv, &r, &below, &top_k, &kl};
      DBS_CU(cuLaunchKernel(prune_, static_cast<unsigned>(n), 1, 1, kMclBlock, 1, 1, 0, h, params, nullptr));
    }
    // The new P's row pointers from the kept counts, on the device; nnz(new P) read back. Each row
    // keeps at most its row of Q: the sum stays within nnz(Q), an int32.
    const PoolSlot pool = ctx_.pool_on(h);
    DeviceCsr<T> nd;
    nd.rows = n;
    nd.cols = dev_.cols;
    nd.row_ptr = DeviceBuffer<int32_t>(static_cast<size_t>(n) + 1, pool);
    detail::scan_lengths(ctx_, kl, n, nd.row_ptr.ptr(), h);
    int32_t nnz = 0;
    DBS_CU(cuStreamSynchronize(h));
    DBS_CU(cuMemcpyDtoH(&nnz, nd.row_ptr.ptr() + static_cast<uint64_t>(n) * sizeof(int32_t), sizeof nnz));
    nd.nnz = nnz;
    nd.col_idx = DeviceBuffer<int32_t>(static_cast<size_t>(std::max(nnz, 1)), pool);
    nd.values = DeviceBuffer<T>(static_cast<size_t>(std::max(nnz, 1)), pool);

    uint64_t np = nd.row_ptr.ptr(), nc = nd.col_idx.ptr(), nv = nd.values.ptr(), op = dev_.row_ptr.ptr(),
             oc = dev_.col_idx.ptr(), ov = dev_.values.ptr(), out = change_bits_.ptr();
    DBS_CU(cuMemsetD32Async(out, 0, 2, h));
    if (n > 0) {
      const auto grid = static_cast<unsigned>((int64_t{n} * 32 + kMclBlock - 1) / kMclBlock);
      void* gp[] = {&n, &qp, &qc, &qv, &np, &nc, &nv};
      DBS_CU(cuLaunchKernel(gather_, grid, 1, 1, kMclBlock, 1, 1, 0, h, gp, nullptr));
      void* cp[] = {&n, &op, &oc, &ov, &np, &nc, &nv, &out};
      DBS_CU(cuLaunchKernel(change_, grid, 1, 1, kMclBlock, 1, 1, 0, h, cp, nullptr));
    }
    DBS_CU(cuStreamSynchronize(h));
    const uint64_t bits = change_bits_.download().at(0);
    std::memcpy(&it.change, &bits, sizeof bits);
    it.nnz = nnz;
    dev_ = std::move(nd);  // after the plan's last use of the old P (the change kernel, waited for above)
    p_current_ = false;
    plan.reset();  // its release is part of the iteration
    it.ms = ms_since(t0);
    return it;
  }

  // The clusters of the current P on the device (mcl_labels' rule); only the labels come back.
  MclResult labels() {
    const auto h = static_cast<CUstream>(stream_.handle());
    MclResult r;
    int n = dev_.rows;
    if (n == 0) return r;
    const PoolSlot pool = ctx_.pool_on(h);
    DeviceBuffer<int32_t> parent(static_cast<size_t>(n), pool), is_root(static_cast<size_t>(n), pool),
        rank(static_cast<size_t>(n) + 1, pool), labels(static_cast<size_t>(n), pool);
    DeviceBuffer<int32_t> changed(1, pool);
    uint64_t pp = dev_.row_ptr.ptr(), pc = dev_.col_idx.ptr(), pv = dev_.values.ptr(), par = parent.ptr(),
             root = is_root.ptr(), rk = rank.ptr(), lab = labels.ptr(), ch = changed.ptr();
    {
      void* params[] = {&n, &par};
      DBS_CU(cuLaunchKernel(cc_init_, blocks(n), 1, 1, kMclBlock, 1, 1, 0, h, params, nullptr));
    }
    // Hook and compress until a pass hooks nothing: MCL's clusters are stars and small cliques,
    // so this takes 2-3 passes.
    for (int changed_host = 1; changed_host;) {
      DBS_CU(cuMemsetD32Async(ch, 0, 1, h));
      void* hp[] = {&n, &pp, &pc, &pv, &par, &ch};
      DBS_CU(cuLaunchKernel(cc_hook_, warps(n), 1, 1, kMclBlock, 1, 1, 0, h, hp, nullptr));
      void* cp[] = {&n, &par, &root};
      DBS_CU(cuLaunchKernel(cc_compress_, blocks(n), 1, 1, kMclBlock, 1, 1, 0, h, cp, nullptr));
      DBS_CU(cuStreamSynchronize(h));
      DBS_CU(cuMemcpyDtoH(&changed_host, ch, sizeof changed_host));
    }
    detail::scan_lengths(ctx_, root, n, rk, h);
    void* lp[] = {&n, &par, &rk, &lab};
    DBS_CU(cuLaunchKernel(cc_label_, blocks(n), 1, 1, kMclBlock, 1, 1, 0, h, lp, nullptr));
    DBS_CU(cuStreamSynchronize(h));
    r.labels = labels.download();
    DBS_CU(cuMemcpyDtoH(&r.clusters, rk + static_cast<uint64_t>(n) * sizeof(int32_t), sizeof r.clusters));
    return r;
  }

 private:
  static unsigned blocks(int64_t n) { return static_cast<unsigned>((n + kMclBlock - 1) / kMclBlock); }
  static unsigned warps(int64_t n) { return blocks(n * 32); }

  void load(int32_t n) {
    const auto k = ctx_.modules().get(codegen::make_source(codegen::MclKey{codegen::value_type_of<T>(), kMclBlock}),
                                      ctx_.device().arch());
    prune_ = k.entry("prune");
    gather_ = k.entry("gather");
    change_ = k.entry("change");
    start_count_ = k.entry("start_count");
    start_scatter_ = k.entry("start_scatter");
    rows_merge_ = k.entry("rows_merge");
    start_scale_ = k.entry("start_scale");
    cc_hook_ = k.entry("cc_hook");
    cc_init_ = k.entry("cc_init");
    cc_compress_ = k.entry("cc_compress");
    cc_label_ = k.entry("cc_label");
    kept_len_ = DeviceBuffer<int32_t>(static_cast<size_t>(std::max(n, 1)));
    change_bits_ = DeviceBuffer<uint64_t>(1);
  }

  // dev_ = mcl_start(g) on the device.
  void start(const DeviceCsr<T>& g) {
    const auto h = static_cast<CUstream>(stream_.handle());
    const PoolSlot pool = ctx_.pool_on(h);
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    int n = g.rows, weighted = o_.weighted ? 1 : 0, loops = o_.add_self_loops ? 1 : 0;
    dev_.rows = dev_.cols = n;
    dev_.row_ptr = DeviceBuffer<int32_t>(static_cast<size_t>(n) + 1, pool);
    if (n == 0) {
      DBS_CU(cuMemsetD32Async(dev_.row_ptr.ptr(), 0, 1, h));
      dev_.col_idx = DeviceBuffer<int32_t>(1, pool);
      dev_.values = DeviceBuffer<T>(1, pool);
      DBS_CU(cuStreamSynchronize(h));
      return;
    }
    DeviceBuffer<int32_t> counts(static_cast<size_t>(n), pool);
    DeviceBuffer<U> colmax(static_cast<size_t>(n), pool);
    DeviceBuffer<uint32_t> check(1, pool);
    uint64_t gp = g.row_ptr.ptr(), gc = g.col_idx.ptr(), gv = g.values.ptr(), cn = counts.ptr(), cm = colmax.ptr(),
             ck = check.ptr(), pp = dev_.row_ptr.ptr();
    DBS_CU(cuMemsetD32Async(cn, 0, static_cast<size_t>(n), h));
    DBS_CU(cuMemsetD8Async(cm, 0, static_cast<size_t>(n) * sizeof(U), h));
    DBS_CU(cuMemsetD32Async(ck, 0, 1, h));
    {
      void* params[] = {&n, &gp, &gc, &gv, &weighted, &loops, &cn, &cm, &ck};
      DBS_CU(cuLaunchKernel(start_count_, warps(n), 1, 1, kMclBlock, 1, 1, 0, h, params, nullptr));
    }
    detail::scan_lengths(ctx_, cn, n, pp, h);
    int32_t nnz = 0;
    uint32_t longest = 0;
    DBS_CU(cuStreamSynchronize(h));
    DBS_CU(cuMemcpyDtoH(&nnz, pp + static_cast<uint64_t>(n) * sizeof(int32_t), sizeof nnz));
    DBS_CU(cuMemcpyDtoH(&longest, ck, sizeof longest));
    dev_.nnz = nnz;
    const size_t nz = static_cast<size_t>(std::max(nnz, 1));
    dev_.col_idx = DeviceBuffer<int32_t>(nz, pool);
    dev_.values = DeviceBuffer<T>(nz, pool);
    DeviceBuffer<int32_t> row_of(nz, pool), other_col(nz, pool);
    DeviceBuffer<T> other_val(nz, pool);
    DBS_CU(cuMemsetD32Async(cn, 0, static_cast<size_t>(n), h));  // the counts become the rows' cursors
    uint64_t pc = dev_.col_idx.ptr(), pv = dev_.values.ptr(), ro = row_of.ptr();
    {
      void* params[] = {&n, &gp, &gc, &gv, &weighted, &loops, &pp, &cn, &cm, &pc, &pv, &ro};
      DBS_CU(cuLaunchKernel(start_scatter_, warps(n), 1, 1, kMclBlock, 1, 1, 0, h, params, nullptr));
    }
    // Each row sorted by column: the scatter placed its entries in atomic order.
    uint64_t in_c = pc, in_v = pv, out_c = other_col.ptr(), out_v = other_val.ptr();
    for (int w = 1; static_cast<uint32_t>(w) < longest; w *= 2) {
      void* params[] = {&nnz, &ro, &pp, &in_c, &in_v, &out_c, &out_v, &w};
      DBS_CU(cuLaunchKernel(rows_merge_, blocks(nnz), 1, 1, kMclBlock, 1, 1, 0, h, params, nullptr));
      std::swap(in_c, out_c);
      std::swap(in_v, out_v);
    }
    if (in_c != pc) {
      std::swap(dev_.col_idx, other_col);
      std::swap(dev_.values, other_val);
    }
    {
      uint64_t vals = dev_.values.ptr();
      void* params[] = {&n, &pp, &vals};
      DBS_CU(cuLaunchKernel(start_scale_, warps(n), 1, 1, kMclBlock, 1, 1, 0, h, params, nullptr));
    }
    DBS_CU(cuStreamSynchronize(h));
  }

  Context& ctx_;
  MclOptions o_;
  Stream stream_;
  CsrMatrix<T> p_;  // P on the host when p_current_
  bool p_current_ = true;
  DeviceCsr<T> dev_;  // P
  DeviceBuffer<int32_t> kept_len_;
  DeviceBuffer<uint64_t> change_bits_;
  CUfunction prune_ = nullptr, gather_ = nullptr, change_ = nullptr;
  // The MCL module's other entry points (codegen/keys/mcl_key.cpp: the start, the components).
  CUfunction start_count_ = nullptr, start_scatter_ = nullptr, rows_merge_ = nullptr, start_scale_ = nullptr;
  CUfunction cc_hook_ = nullptr, cc_init_ = nullptr, cc_compress_ = nullptr, cc_label_ = nullptr;
  MclExpand<T> expand_;
};

template <class T>
MclResult mcl_loop(Context& ctx, const CsrMatrix<T>& g, const MclOptions& o, MclExpand<T> expand) {
  MclResult r;
  auto mark = Clock::now();
  const auto lap = [&mark](double& into) {
    into = ms_since(mark);
    mark = Clock::now();
  };
  MclRunner<T> run(ctx, o, g, std::move(expand));  // checks the options and the shape; the start
  lap(r.times.start_ms);
  while (r.iterations < o.max_iterations && !r.converged) {
    r.trace.push_back(run.step());
    ++r.iterations;
    r.converged = r.trace.back().change <= o.tolerance;
  }
  lap(r.times.iterations_ms);
  MclResult l = run.labels();
  lap(r.times.labels_ms);
  r.labels = std::move(l.labels);
  r.clusters = l.clusters;
  return r;
}

}  // namespace

template <class T>
MclResult mcl(Context& ctx, const CsrMatrix<T>& g, const MclOptions& o) {
  return mcl_loop<T>(ctx, g, o, {});
}

template <class T>
MclResult mcl(Context& ctx, const CsrMatrix<T>& g, const MclOptions& o, const MclExpand<T>& expand) {
  if (!expand) throw UsageError("mcl: the expansion callback is empty");
  return mcl_loop<T>(ctx, g, o, expand);
}

template <class T>
CsrMatrix<T> mcl_step(Context& ctx, const CsrMatrix<T>& p, const MclOptions& o, double* change) {
  validate(p);  // the change kernel looks columns up by binary search in P's rows
  MclRunner<T> run(ctx, o, p);
  const MclIteration it = run.step();
  if (change) *change = it.change;
  return run.p();
}

template <class T>
CsrMatrix<T> mcl_start(Context& ctx, const CsrMatrix<T>& g, const MclOptions& o) {
  MclRunner<T> run(ctx, o, g, {});
  return run.p();
}

template <class T>
MclResult mcl_labels(Context& ctx, const CsrMatrix<T>& p) {
  MclRunner<T> run(ctx, MclOptions{}, p);
  return run.labels();
}

template CsrMatrix<float> mcl_start(Context&, const CsrMatrix<float>&, const MclOptions&);
template CsrMatrix<double> mcl_start(Context&, const CsrMatrix<double>&, const MclOptions&);
template MclResult mcl_labels(Context&, const CsrMatrix<float>&);
template MclResult mcl_labels(Context&, const CsrMatrix<double>&);
template MclResult mcl(Context&, const CsrMatrix<float>&, const MclOptions&);
template MclResult mcl(Context&, const CsrMatrix<double>&, const MclOptions&);
template MclResult mcl(Context&, const CsrMatrix<float>&, const MclOptions&, const MclExpand<float>&);
template MclResult mcl(Context&, const CsrMatrix<double>&, const MclOptions&, const MclExpand<double>&);
template CsrMatrix<float> mcl_step(Context&, const CsrMatrix<float>&, const MclOptions&, double*);
template CsrMatrix<double> mcl_step(Context&, const CsrMatrix<double>&, const MclOptions&, double*);

}  // namespace dbsparse

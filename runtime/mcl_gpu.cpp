// Markov clustering on the GPU (include/dbsparse/spgemm_apps.hpp): mcl_cpu's iteration with the
// expansion by hash SpGEMM and the elementwise steps by templates/mcl.cuh. Per iteration: a plan
// for P·P from P on the device (P's structure changes every iteration, so the plan is new each
// time), Q = P·P left on the device, mcl_prune on Q in place, the kept counts read back (one host
// sync) and summed into the new P's row pointers, mcl_gather into the new P, mcl_change against
// the old P. P's columns and values stay on the device; the host copy is made when asked for.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "codegen/mcl_key.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/upload_nonempty.hpp"
#include "runtime/module_registry.hpp"

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
  // expand: P·P by another library (MclExpand); empty: by hash SpGEMM.
  MclRunner(Context& ctx, const MclOptions& o, CsrMatrix<T> p, MclExpand<T> expand = {})
      : ctx_(ctx), o_(o), stream_(ctx), p_(std::move(p)), expand_(std::move(expand)) {
    o_.check();
    if (p_.rows != p_.cols)
      throw UsageError(fmt::format("mcl: P must be square, is {}x{}", p_.rows, p_.cols));
    const auto k = ctx.modules().get(codegen::make_source(codegen::MclKey{codegen::value_type_of<T>(), kMclBlock}),
                                     ctx.device().arch());
    prune_ = k.fns.at(0);
    gather_ = k.fns.at(1);
    change_ = k.fns.at(2);
    dev_ = DeviceCsr<T>(p_);
    kept_len_ = DeviceBuffer<int32_t>(static_cast<size_t>(std::max(p_.rows, 1)));
    change_bits_ = DeviceBuffer<uint64_t>(1);
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
        throw Error(fmt::format("mcl: the expansion returned a {}x{} matrix for a {}x{} P", q.rows, q.cols, n,
                                dev_.cols));
      qp = reinterpret_cast<uint64_t>(q.row_ptr);
      qc = reinterpret_cast<uint64_t>(q.col_idx);
      qv = reinterpret_cast<uint64_t>(q.values);
      it.nnz_expanded = q.nnz;
    } else {
      plan.emplace(ctx_.plan_spgemm(dev_.view(), dev_.view(), SpgemmOptions{}, h));
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
    DBS_CU(cuStreamSynchronize(h));
    const std::vector<int32_t> kept = kept_len_.download();
    std::vector<int32_t> next_ptr(static_cast<size_t>(n) + 1, 0);
    // Each row keeps at most its row of Q: the sum stays within nnz(Q), an int32.
    for (int32_t i = 0; i < n; ++i) next_ptr[i + 1] = next_ptr[i] + kept[i];
    const int32_t nnz = next_ptr[n];
    DeviceCsr<T> nd;
    nd.rows = n;
    nd.cols = dev_.cols;
    nd.nnz = nnz;
    nd.row_ptr = upload(std::span<const int32_t>(next_ptr));
    nd.col_idx = DeviceBuffer<int32_t>(static_cast<size_t>(std::max(nnz, 1)));
    nd.values = DeviceBuffer<T>(static_cast<size_t>(std::max(nnz, 1)));

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

 private:
  Context& ctx_;
  MclOptions o_;
  Stream stream_;
  CsrMatrix<T> p_;          // P on the host when p_current_
  bool p_current_ = true;
  DeviceCsr<T> dev_;        // P
  DeviceBuffer<int32_t> kept_len_;
  DeviceBuffer<uint64_t> change_bits_;
  CUfunction prune_ = nullptr, gather_ = nullptr, change_ = nullptr;
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
  // mcl_start checks the options and the shape
  CsrMatrix<T> p0 = mcl_start(g, o).template cast<T>();
  lap(r.times.start_ms);
  MclRunner<T> run(ctx, o, std::move(p0), std::move(expand));
  lap(r.times.setup_ms);
  while (r.iterations < o.max_iterations && !r.converged) {
    r.trace.push_back(run.step());
    ++r.iterations;
    r.converged = r.trace.back().change <= o.tolerance;
  }
  lap(r.times.iterations_ms);
  MclResult l = mcl_labels(run.p().template cast<double>());
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

template MclResult mcl(Context&, const CsrMatrix<float>&, const MclOptions&);
template MclResult mcl(Context&, const CsrMatrix<double>&, const MclOptions&);
template MclResult mcl(Context&, const CsrMatrix<float>&, const MclOptions&, const MclExpand<float>&);
template MclResult mcl(Context&, const CsrMatrix<double>&, const MclOptions&, const MclExpand<double>&);
template CsrMatrix<float> mcl_step(Context&, const CsrMatrix<float>&, const MclOptions&, double*);
template CsrMatrix<double> mcl_step(Context&, const CsrMatrix<double>&, const MclOptions&, double*);

}  // namespace dbsparse

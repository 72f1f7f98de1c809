// bench spgemm's triangle rows: triangle counting by dbsparse's masked product (no L, no C) against
// what a cuSPARSE user runs, SpGEMM C = L·L (a fresh product, buffers allocated beforehand as in
// the A² rows) then the mask and the sum over L. Both start from the graph on the device; dbsparse
// from A itself (its L is a prefix of each row), cuSPARSE from L, built on the host untimed.
#include <cmath>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/graph.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "tools/baselines/cusparse_pipelines.hpp"
#include "tools/baselines/cusparse_spgemm.hpp"
#include "tools/bench/bench_spgemm.hpp"
#include "tools/bench/stats.hpp"
#include "tools/bench/timing.hpp"

namespace dbsparse::tools {
namespace {

// The undirected graph of A (pattern of A + Aᵀ, no loops) and its strictly lower triangle, values 1.
template <class T>
std::pair<CsrMatrix<T>, CsrMatrix<T>> graph_and_lower(const CsrMatrix<T>& a) {
  const PatternGraph g = symmetrize(pattern_of(a), true);
  CsrMatrix<T> u = ones_matrix<T>(g), l;
  l.rows = l.cols = g.n;
  l.row_ptr.assign(static_cast<size_t>(g.n) + 1, 0);
  for (int32_t i = 0; i < g.n; ++i) {
    for (int32_t p = g.row_ptr[i]; p < g.row_ptr[i + 1] && g.col_idx[p] < i; ++p) l.col_idx.push_back(g.col_idx[p]);
    l.row_ptr[static_cast<size_t>(i) + 1] = static_cast<int32_t>(l.col_idx.size());
  }
  l.values.assign(l.col_idx.size(), T(1));
  return {std::move(u), std::move(l)};
}

}  // namespace

template <class T>
nlohmann::json bench_triangles(Context& ctx, const Stream& stream, const CsrMatrix<T>& a, nlohmann::json rec,
                               const SpgemmBenchOptions& opt) {
  const int reps = std::max(5, opt.app_reps);
  void* h = stream.handle();
  const auto [g, l] = graph_and_lower(a);
  rec["nnz_l"] = l.nnz();
  const std::vector<int64_t> ip = intermediate_products(l, l);
  rec["products"] = std::accumulate(ip.begin(), ip.end(), int64_t{0});
  const DeviceCsr<T> dg(g), dl(l);
  int64_t ours = -1;
  try {
    ours = triangle_count(ctx, dg.view(), h);  // warm-up: loads the kernel
    const std::vector<double> ms =
        time_products(reps, opt.product_budget_s, [&] { ours = triangle_count(ctx, dg.view(), h); });
    rec["dbsparse_ms"] = median(ms);
    rec["dbsparse_runs"] = ms.size();
    rec["triangles"] = ours;
  } catch (const Error& e) {
    rec["dbsparse_error"] = e.what();
  }
  if (opt.baselines) {
    try {
      CusparseHandle handle;
      CusparseSpgemm<T> cs(dl.view(), dl.view(), h, handle.get());
      if (!cs.prepare()) throw Error(fmt::format("cuSPARSE SpGEMM L*L failed: {}", cs.why()));
      double sum = triangle_mask_sum(ctx, cs.result(), dl.view(), h);  // warm-up
      const std::vector<double> ms = time_products(reps, opt.product_budget_s, [&] {
        cs.run();
        sum = triangle_mask_sum(ctx, cs.result(), dl.view(), h);
      });
      rec["cusparse_ms"] = median(ms);
      rec["cusparse_runs"] = ms.size();
      rec["cusparse_algs"] = to_string(cs.alg());
      rec["cusparse_nnz_c"] = cs.nnz();
      rec["cusparse_triangles"] = std::llround(sum);
      if (ours >= 0) {
        const bool ok = std::llround(sum) == ours;
        rec["check_ok"] = ok;
        rec["check"] = ok ? "ok" : "mismatch";
        if (!ok) rec["check_note"] = fmt::format("dbsparse {} triangles, cuSPARSE + mask {}", ours, std::llround(sum));
      }
    } catch (const Error& e) {
      rec["cusparse_error"] = e.what();
    }
  }
  return rec;
}

template nlohmann::json bench_triangles(Context&, const Stream&, const CsrMatrix<float>&, nlohmann::json,
                                        const SpgemmBenchOptions&);
template nlohmann::json bench_triangles(Context&, const Stream&, const CsrMatrix<double>&, nlohmann::json,
                                        const SpgemmBenchOptions&);

}  // namespace dbsparse::tools

// SpMM (BRP / CSR / condensed tensor-core windows) and BFS plans for Python.
#include <fmt/format.h>

#include "bind.hpp"
#include "dbsparse/bfs.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/spmm.hpp"

namespace dbs_py {
namespace {
using dbsparse::Context;
using dbsparse::CsrMatrix;
using dbsparse::UsageError;

dbsparse::SpmmPath spmm_path(const std::string& s) {
  if (s == "auto") return dbsparse::SpmmPath::Auto;
  if (s == "brp") return dbsparse::SpmmPath::Brp;
  if (s == "csr") return dbsparse::SpmmPath::CsrCudaCore;
  if (s == "condensed") return dbsparse::SpmmPath::Condensed;
  throw UsageError(fmt::format("path '{}': expected auto, brp, csr or condensed", s));
}
}  // namespace

void bind_spmm_bfs(nb::module_& m) {
  using dbsparse::SpmmPlan;
  const nb::call_guard<nb::gil_scoped_release> nogil;
  nb::class_<SpmmPlan>(m, "SpmmPlan")
      .def(
          "run",
          [](const SpmmPlan& p, uint64_t b, uint64_t c, uint64_t s, float alpha, float beta) {
            p.run(b, c, stream_ptr(s), alpha, beta);
          },
          nb::arg("b"), nb::arg("c"), nb::arg("stream"), nb::arg("alpha"), nb::arg("beta"), nogil)
      // Max / min plans: also the winning CSR entry of A for each C entry (int32, rows x n_cols).
      .def(
          "run_arg",
          [](const SpmmPlan& p, uint64_t b, uint64_t c, uint64_t arg, uint64_t s, float alpha, float beta) {
            p.run_arg(b, c, arg, stream_ptr(s), alpha, beta);
          },
          nb::arg("b"), nb::arg("c"), nb::arg("arg"), nb::arg("stream"), nb::arg("alpha"), nb::arg("beta"), nogil)
      .def_prop_ro("rows", &SpmmPlan::rows)
      .def_prop_ro("cols", &SpmmPlan::cols)
      .def_prop_ro("n_cols", &SpmmPlan::n_cols)
      .def_prop_ro("path", [](const SpmmPlan& p) { return std::string(dbsparse::to_string(p.path())); })
      .def_prop_ro("dtype", [](const SpmmPlan& p) { return std::string(dbsparse::to_string(p.dtype())); })
      .def_prop_ro("reorder", [](const SpmmPlan& p) { return std::string(dbsparse::to_string(p.reorder())); })
      .def_prop_ro("reorder_ms", &SpmmPlan::reorder_ms)
      .def_prop_ro("epilogue", [](const SpmmPlan& p) { return std::string(dbsparse::to_string(p.epilogue())); })
      .def_prop_ro("epilogue_fused", &SpmmPlan::epilogue_fused)
      .def_prop_ro("reduce", [](const SpmmPlan& p) { return std::string(dbsparse::to_string(p.reduce())); })
      .def("explain", &SpmmPlan::explain);
  m.def(
      "plan_spmm",
      [](Context& ctx, const CsrMatrix<float>& a, int n_cols, const std::string& dtype, const std::string& path,
         const std::string& reorder, const std::string& epilogue, const std::string& reduce) {
        dbsparse::SpmmOptions o;
        o.dtype = dbsparse::spmm_dtype_from_string(dtype);
        o.path = spmm_path(path);
        if (reorder != "config") o.reorder = dbsparse::parse_reorder(reorder);
        o.epilogue = dbsparse::parse_spmm_epilogue(epilogue);
        o.reduce = dbsparse::parse_spmm_reduce(reduce);
        return plan_spmm(ctx, a, n_cols, o);
      },
      nb::arg("ctx"), nb::arg("a"), nb::arg("n_cols"), nb::arg("dtype"), nb::arg("path"), nb::arg("reorder") = "config",
      nb::arg("epilogue") = "none", nb::arg("reduce") = "sum", nb::keep_alive<0, 1>(), nogil);
  // f32 A already on the device with int64 row offsets (the arrays stay the caller's: the Python
  // plan keeps them alive).
  m.def(
      "plan_spmm_view64",
      [](Context& ctx, int32_t rows, int32_t cols, int64_t nnz, uint64_t row_ptr, uint64_t col_idx, uint64_t values,
         int n_cols, const std::string& path, const std::string& reorder, const std::string& epilogue) {
        const dbsparse::DeviceCsrView64<float> v{rows,
                                                 cols,
                                                 nnz,
                                                 reinterpret_cast<const int64_t*>(row_ptr),
                                                 reinterpret_cast<const int32_t*>(col_idx),
                                                 reinterpret_cast<const float*>(values)};
        dbsparse::SpmmOptions o;
        o.path = spmm_path(path);
        if (reorder != "config") o.reorder = dbsparse::parse_reorder(reorder);
        o.epilogue = dbsparse::parse_spmm_epilogue(epilogue);
        return plan_spmm(ctx, v, n_cols, o);
      },
      nb::arg("ctx"), nb::arg("rows"), nb::arg("cols"), nb::arg("nnz"), nb::arg("row_ptr"), nb::arg("col_idx"),
      nb::arg("values"), nb::arg("n_cols"), nb::arg("path"), nb::arg("reorder") = "config",
      nb::arg("epilogue") = "none", nb::keep_alive<0, 1>(), nogil);

  using dbsparse::BfsPlan;
  nb::class_<BfsPlan>(m, "BfsPlan")
      .def(
          "run",
          [](const BfsPlan& p, int32_t source, uint64_t levels, uint64_t parents, uint64_t s) {
            if (source < 0 || source >= p.vertices())
              throw UsageError(fmt::format("source {} is outside 0 .. {}", source, p.vertices() - 1));
            p.run(source, levels, parents, stream_ptr(s));
          },
          nb::arg("source"), nb::arg("levels"), nb::arg("parents"), nb::arg("stream"), nogil)
      .def_prop_ro("vertices", &BfsPlan::vertices)
      .def("explain", &BfsPlan::explain);
  m.def(
      "plan_bfs",
      [](Context& ctx, const CsrMatrix<float>& a, bool transpose) {
        dbsparse::BfsOptions o;
        o.transpose = transpose;
        return plan_bfs(ctx, a, o);
      },
      nb::arg("ctx"), nb::arg("a"), nb::arg("transpose") = false, nb::keep_alive<0, 1>(), nogil);
  // A graph on the device with int64 row offsets, read in place; t_row_ptr 0: symmetric.
  m.def(
      "plan_bfs_view64",
      [](Context& ctx, int32_t n, int64_t entries, uint64_t row_ptr, uint64_t col_idx, int32_t t_n, int64_t t_entries,
         uint64_t t_row_ptr, uint64_t t_col_idx, bool transpose) {
        auto view = [](int32_t vn, int64_t ve, uint64_t ptr, uint64_t idx) {
          return dbsparse::DeviceGraphView64{vn, ve, reinterpret_cast<const int64_t*>(ptr),
                                             reinterpret_cast<const int32_t*>(idx)};
        };
        const dbsparse::DeviceGraphView64 a = view(n, entries, row_ptr, col_idx),
                                          at = view(t_n, t_entries, t_row_ptr, t_col_idx);
        dbsparse::BfsOptions o;
        o.transpose = transpose;
        return plan_bfs(ctx, a, o, t_row_ptr ? &at : nullptr);
      },
      nb::arg("ctx"), nb::arg("n"), nb::arg("entries"), nb::arg("row_ptr"), nb::arg("col_idx"), nb::arg("t_n"),
      nb::arg("t_entries"), nb::arg("t_row_ptr"), nb::arg("t_col_idx"), nb::arg("transpose"), nb::keep_alive<0, 1>(),
      nogil);
}

}  // namespace dbs_py

// SpMV (adaptive CSR) and SpMSpV (DB format, push/pull) plans for Python.
#include <nlohmann/json.hpp>

#include "bind.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/spmspv.hpp"
#include "dbsparse/spmv.hpp"

namespace dbs_py {
namespace {
using dbsparse::Config;
using dbsparse::Context;
using dbsparse::CsrMatrix;

// {"op", "source", "params"} as JSON text: dbsparse.explain() turns it into a dict.
std::string config_json(const Config& c) {
  return nlohmann::json{{"op", c.op}, {"source", dbsparse::to_string(c.source)}, {"params", c.params}, {"note", c.note}}
      .dump();
}

template <class T>
void bind_one(nb::module_& m, const char* suffix) {
  using Spmv = dbsparse::SpmvPlan<T>;
  using Spmspv = dbsparse::SpmspvPlan<T>;
  const nb::call_guard<nb::gil_scoped_release> nogil;
  nb::class_<Spmv>(m, (std::string("SpmvPlan") + suffix).c_str())
      .def(
          "run",
          [](const Spmv& p, uint64_t x, uint64_t y, uint64_t s, T alpha, T beta) {
            p.run(x, y, stream_ptr(s), alpha, beta);
          },
          nb::arg("x"), nb::arg("y"), nb::arg("stream"), nb::arg("alpha"), nb::arg("beta"), nogil)
      .def_prop_ro("rows", &Spmv::rows)
      .def_prop_ro("cols", &Spmv::cols)
      .def_prop_ro("nnz", &Spmv::nnz)
      .def_prop_ro("columns_reordered", &Spmv::columns_reordered)
      .def_prop_ro("reorder_ms", &Spmv::reorder_ms)
      .def_prop_ro("shares_call_state", &Spmv::shares_call_state)
      .def("explain", &Spmv::explain)
      .def("config_json", [](const Spmv& p) { return config_json(p.config()); });
  // reorder "": the config's (tuning DB, else defaults); none, degree or auto replace it.
  m.def((std::string("plan_spmv") + suffix).c_str(),
        [](Context& ctx, const CsrMatrix<T>& a, const std::string& reorder) {
          dbsparse::SpmvOptions o;
          o.reorder = reorder;
          return plan_spmv(ctx, a, o);
        },
        nb::arg("ctx"), nb::arg("a"), nb::arg("reorder") = "", nb::keep_alive<0, 1>(), nogil);
  // A CSR matrix already on the device with int64 row offsets (the arrays stay the caller's: the
  // Python plan keeps them alive).
  m.def((std::string("plan_spmv_view64") + suffix).c_str(),
        [](Context& ctx, int32_t rows, int32_t cols, int64_t nnz, uint64_t row_ptr, uint64_t col_idx, uint64_t values) {
          const dbsparse::DeviceCsrView64<T> v{rows,
                                               cols,
                                               nnz,
                                               reinterpret_cast<const int64_t*>(row_ptr),
                                               reinterpret_cast<const int32_t*>(col_idx),
                                               reinterpret_cast<const T*>(values)};
          return plan_spmv(ctx, v);
        },
        nb::arg("ctx"), nb::arg("rows"), nb::arg("cols"), nb::arg("nnz"), nb::arg("row_ptr"), nb::arg("col_idx"),
        nb::arg("values"), nb::keep_alive<0, 1>(), nogil);

  nb::class_<Spmspv>(m, (std::string("SpmspvPlan") + suffix).c_str())
      .def(
          "run", [](const Spmspv& p, uint64_t x, uint64_t y, uint64_t s) { p.run(x, y, stream_ptr(s)); }, nb::arg("x"),
          nb::arg("y"), nb::arg("stream"), nogil)
      .def(
          "run_sparse",
          [](const Spmspv& p, uint64_t idx, uint64_t val, int32_t nnz, uint64_t y, uint64_t s) {
            p.run_sparse(idx, val, nnz, y, stream_ptr(s));
          },
          nb::arg("indices"), nb::arg("values"), nb::arg("nnz"), nb::arg("y"), nb::arg("stream"), nogil)
      .def_prop_ro("rows", &Spmspv::rows)
      .def_prop_ro("cols", &Spmspv::cols)
      .def("explain", &Spmspv::explain)
      .def("config_json", [](const Spmspv& p) { return config_json(p.config()); });
  m.def((std::string("plan_spmspv") + suffix).c_str(),
        [](Context& ctx, const CsrMatrix<T>& a, const std::string& direction) {
          dbsparse::SpmspvOptions o;
          if (direction != "auto" && direction != "push" && direction != "pull")
            throw dbsparse::UsageError("direction '" + direction + "': expected auto, push or pull");
          o.direction = direction == "push"   ? dbsparse::SpmspvDirection::Push
                        : direction == "pull" ? dbsparse::SpmspvDirection::Pull
                                              : dbsparse::SpmspvDirection::Auto;
          return plan_spmspv(ctx, a, o);
        },
        nb::arg("ctx"), nb::arg("a"), nb::arg("direction") = "auto", nb::keep_alive<0, 1>(), nogil);
}
}  // namespace

void bind_spmv(nb::module_& m) {
  bind_one<float>(m, "F32");
  bind_one<double>(m, "F64");
}

}  // namespace dbs_py

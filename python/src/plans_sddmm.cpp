// SDDMM plans for Python: out[e] = alpha * dot(X[row(e)], Y[col(e)]) on A's pattern.
#include "bind.hpp"
#include "dbsparse/sddmm.hpp"

namespace dbs_py {

void bind_sddmm(nb::module_& m) {
  using dbsparse::SddmmPlan;
  const nb::call_guard<nb::gil_scoped_release> nogil;
  nb::class_<SddmmPlan>(m, "SddmmPlan")
      .def(
          "run",
          [](const SddmmPlan& p, uint64_t x, uint64_t y, uint64_t out, uint64_t s, float alpha) {
            p.run(x, y, out, stream_ptr(s), alpha);
          },
          nb::arg("x"), nb::arg("y"), nb::arg("out"), nb::arg("stream"), nb::arg("alpha"), nogil)
      .def_prop_ro("rows", &SddmmPlan::rows)
      .def_prop_ro("cols", &SddmmPlan::cols)
      .def_prop_ro("nnz", &SddmmPlan::nnz)
      .def_prop_ro("k", &SddmmPlan::k)
      .def_prop_ro("dtype", [](const SddmmPlan& p) { return std::string(dbsparse::to_string(p.dtype())); })
      .def_prop_ro("scale_by_values", &SddmmPlan::scale_by_values)
      .def("explain", &SddmmPlan::explain);
  m.def(
      "plan_sddmm",
      [](dbsparse::Context& ctx, const dbsparse::CsrMatrix<float>& a, int k, const std::string& dtype,
         bool scale_by_values) {
        dbsparse::SddmmOptions o;
        o.dtype = dbsparse::spmm_dtype_from_string(dtype);
        o.scale_by_values = scale_by_values;
        return plan_sddmm(ctx, a, k, o);
      },
      nb::arg("ctx"), nb::arg("a"), nb::arg("k"), nb::arg("dtype"), nb::arg("scale_by_values") = false,
      nb::keep_alive<0, 1>(), nogil);
}

}  // namespace dbs_py

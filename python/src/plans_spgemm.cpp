// Hash SpGEMM for Python: from device CSR (the caller's arrays read in place; C stays in the plan and
// leaves through DLPack views that keep it alive) or host CSR, and its applications.
#include <nlohmann/json.hpp>

#include "bind.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/spgemm.hpp"
#include "dbsparse/spgemm_apps.hpp"

namespace dbs_py {
namespace {
using dbsparse::Context;
using dbsparse::CsrMatrix;

template <class T>
dbsparse::DeviceCsrView<T> view(int32_t rows, int32_t cols, int64_t nnz, uint64_t rp, uint64_t ci, uint64_t v) {
  dbsparse::DeviceCsrView<T> d;
  d.rows = rows;
  d.cols = cols;
  d.nnz = nnz;
  d.row_ptr = reinterpret_cast<const int32_t*>(static_cast<uintptr_t>(rp));
  d.col_idx = reinterpret_cast<const int32_t*>(static_cast<uintptr_t>(ci));
  d.values = reinterpret_cast<const T*>(static_cast<uintptr_t>(v));
  return d;
}

// SpgemmOptions with the caller's config (a JSON object of SpgemmConfig's keys; empty: none given,
// so the plan takes its usual source). A bad key or value is the UsageError that names it.
dbsparse::SpgemmOptions options_of(const std::string& config_json) {
  dbsparse::SpgemmOptions o;
  if (!config_json.empty())
    o.config = dbsparse::config_from_json<dbsparse::SpgemmConfig>(nlohmann::json::parse(config_json));
  return o;
}

template <class T>
void bind_one(nb::module_& m, const char* suffix) {
  using Plan = dbsparse::SpgemmPlan<T>;
  const nb::call_guard<nb::gil_scoped_release> nogil;
  nb::class_<Plan>(m, (std::string("SpgemmPlan") + suffix).c_str())
      .def(
          "run", [](Plan& p, uint64_t s) { p.run(stream_ptr(s)); }, nb::arg("stream"), nogil)
      .def_prop_ro("rows", &Plan::rows)
      .def_prop_ro("cols", &Plan::cols)
      .def_prop_ro("nnz", &Plan::nnz)
      .def_prop_ro("row_ptr", &Plan::row_ptr)
      .def_prop_ro("col_idx", &Plan::col_idx)
      .def_prop_ro("values", &Plan::values)
      .def("download", &Plan::download, nogil)
      .def("explain", &Plan::explain);
  // C's owner for the DLPack views: the plan moved into a capsule (a plain Python object, no
  // reference to the plan's instance or the Context's). A framework that never releases an
  // imported view at exit then holds no instance nanobind reports as leaked. The plan's
  // buffers are freed in the legacy stream's order, so the capsule may outlive the Context.
  m.def((std::string("hold_spgemm_plan") + suffix).c_str(), [](Plan& p) {
    auto* held = new Plan(std::move(p));
    return nb::capsule(held, "dbsparse.spgemm_result", [](void* v) noexcept { delete static_cast<Plan*>(v); });
  });
  m.def((std::string("plan_spgemm_device") + suffix).c_str(),
        [](Context& ctx, int32_t ar, int32_t ac, int64_t an, uint64_t arp, uint64_t aci, uint64_t av, int32_t br,
           int32_t bc, int64_t bn, uint64_t brp, uint64_t bci, uint64_t bv, uint64_t s, const std::string& config) {
          return plan_spgemm(ctx, view<T>(ar, ac, an, arp, aci, av), view<T>(br, bc, bn, brp, bci, bv),
                             options_of(config), stream_ptr(s));
        },
        nb::arg("ctx"), nb::arg("a_rows"), nb::arg("a_cols"), nb::arg("a_nnz"), nb::arg("a_row_ptr"),
        nb::arg("a_col_idx"), nb::arg("a_values"), nb::arg("b_rows"), nb::arg("b_cols"), nb::arg("b_nnz"),
        nb::arg("b_row_ptr"), nb::arg("b_col_idx"), nb::arg("b_values"), nb::arg("stream"), nb::arg("config") = "",
        nb::keep_alive<0, 1>(), nogil);
  m.def((std::string("spgemm_host") + suffix).c_str(),
        [](Context& ctx, const CsrMatrix<T>& a, const CsrMatrix<T>& b, const std::string& config) {
          auto p = plan_spgemm(ctx, a, b, options_of(config));
          p.run(nullptr);
          return p.download();
        },
        nb::arg("ctx"), nb::arg("a"), nb::arg("b"), nb::arg("config") = "", nogil);
  m.def((std::string("square") + suffix).c_str(),
        [](Context& ctx, const CsrMatrix<T>& a, bool transpose) { return dbsparse::square(ctx, a, transpose); },
        nb::arg("ctx"), nb::arg("a"), nb::arg("transpose") = false, nogil);
  m.def((std::string("contract") + suffix).c_str(),
        [](Context& ctx, const CsrMatrix<T>& g, HostVec<int32_t> labels, int32_t k) {
          std::span<const int32_t> l(labels.data(), labels.shape(0));
          nb::gil_scoped_release release;
          return dbsparse::contract(ctx, g, l, k).c;
        },
        nb::arg("ctx"), nb::arg("g"), nb::arg("labels"), nb::arg("k"));
  m.def((std::string("mcl") + suffix).c_str(),
        [](Context& ctx, const CsrMatrix<T>& g, double inflation, double prune_below, int32_t keep_top_k,
           int32_t max_iterations, bool weighted) {
          dbsparse::MclOptions o;
          o.inflation = inflation;
          o.prune_below = prune_below;
          o.keep_top_k = keep_top_k;
          o.max_iterations = max_iterations;
          o.weighted = weighted;
          dbsparse::MclResult r;
          {
            nb::gil_scoped_release release;
            r = dbsparse::mcl(ctx, g, o);
          }
          return nb::make_tuple(to_numpy(std::move(r.labels)), r.clusters, r.iterations, r.converged);
        },
        nb::arg("ctx"), nb::arg("g"), nb::arg("inflation"), nb::arg("prune_below"), nb::arg("keep_top_k"),
        nb::arg("max_iterations"), nb::arg("weighted"));
}
}  // namespace

void bind_spgemm(nb::module_& m) {
  bind_one<float>(m, "F32");
  bind_one<double>(m, "F64");
}

}  // namespace dbs_py

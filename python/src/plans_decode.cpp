// Decoding layers for Python (SparseLinear): pruning on the host and the decode plan.
#include <fmt/format.h>

#include "bind.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/pruning.hpp"

namespace dbs_py {
namespace {
using dbsparse::DecodeDtype;
using dbsparse::DecodeMapping;
using dbsparse::UsageError;
using Weights = nb::ndarray<nb::numpy, const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

DecodeMapping mapping_of(const std::string& s) {
  for (DecodeMapping m : {DecodeMapping::Auto, DecodeMapping::Columns, DecodeMapping::RowBlocks, DecodeMapping::Lanes,
                          DecodeMapping::Ring, DecodeMapping::Dense, DecodeMapping::DenseColumns})
    if (s == dbsparse::to_string(m)) return m;
  throw UsageError(fmt::format("mapping '{}': expected auto, ring, dense-columns, dense, columns or row-blocks", s));
}
DecodeDtype dtype_of(const std::string& s) {
  if (s == "f16") return DecodeDtype::F16;
  if (s == "bf16") return DecodeDtype::BF16;
  if (s == "f32") return DecodeDtype::F32;
  throw UsageError(fmt::format("dtype '{}': expected f16, bf16 or f32", s));
}
}  // namespace

void bind_decode(nb::module_& m) {
  const nb::call_guard<nb::gil_scoped_release> nogil;
  m.def(
      "prune",
      [](Weights w, double sparsity, const std::string& method,
         std::optional<nb::ndarray<nb::numpy, const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>> norms) {
        const auto rows = static_cast<int32_t>(w.shape(0)), cols = static_cast<int32_t>(w.shape(1));
        std::span<const float> ws(w.data(), w.size());
        if (method == "magnitude") return dbsparse::prune_magnitude(ws, rows, cols, sparsity);
        if (method != "wanda") throw UsageError(fmt::format("prune method '{}': expected magnitude or wanda", method));
        if (!norms) throw UsageError("prune method wanda needs the input norms (one per column)");
        if (norms->shape(0) != static_cast<size_t>(cols))
          throw UsageError(fmt::format("norms has {} entries, the weight {} columns", norms->shape(0), cols));
        return dbsparse::prune_wanda(ws, rows, cols, std::span<const float>(norms->data(), cols), sparsity);
      },
      nb::arg("w"), nb::arg("sparsity"), nb::arg("method"), nb::arg("norms").none());

  using dbsparse::DecodeLinearPlan;
  nb::class_<DecodeLinearPlan>(m, "DecodeLinearPlan")
      .def(
          "run", [](const DecodeLinearPlan& p, uint64_t x, uint64_t y, uint64_t s) { p.run(x, y, stream_ptr(s)); },
          nb::arg("x"), nb::arg("y"), nb::arg("stream"), nogil)
      .def("set_tau", &DecodeLinearPlan::set_tau)
      .def_prop_ro("tau", &DecodeLinearPlan::tau)
      .def_prop_ro("rows", &DecodeLinearPlan::rows)
      .def_prop_ro("cols", &DecodeLinearPlan::cols)
      .def_prop_ro("weight_bytes", &DecodeLinearPlan::weight_bytes)
      .def_prop_ro("mapping", [](const DecodeLinearPlan& p) { return std::string(dbsparse::to_string(p.mapping())); })
      .def("explain", &DecodeLinearPlan::explain);
  m.def(
      "plan_decode",
      [](dbsparse::Context& ctx, const dbsparse::CsrMatrix<float>& w, const std::string& dtype, float tau, double keep,
         const std::string& mapping, double act_density) {
        dbsparse::DecodeLinearOptions o;
        o.dtype = dtype_of(dtype);
        o.tau = tau;
        o.keep = keep;
        o.mapping = mapping_of(mapping);
        o.act_density = act_density;
        return plan_decode_linear(ctx, w, o);
      },
      nb::arg("ctx"), nb::arg("w"), nb::arg("dtype"), nb::arg("tau"), nb::arg("keep"), nb::arg("mapping"),
      nb::arg("act_density"), nb::keep_alive<0, 1>(), nogil);
}

}  // namespace dbs_py

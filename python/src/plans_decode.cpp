// Decoding layers for Python (SparseLinear): pruning on the host, compact layers (the column bitmap
// built by torch on the GPU, or read from a file) and the decode plan.
#include <fmt/format.h>
#include <nanobind/stl/map.h>

#include "bind.hpp"
#include "dbsparse/decode_linear.hpp"
#include "dbsparse/error.hpp"
#include "dbsparse/pruning.hpp"
#include "dbsparse/compact_weights.hpp"

namespace dbs_py {
namespace {
using dbsparse::DecodeDtype;
using dbsparse::DecodeMapping;
using dbsparse::UsageError;
using Weights = nb::ndarray<nb::numpy, const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

DecodeMapping mapping_of(const std::string& s) {
  for (DecodeMapping m : {DecodeMapping::Auto, DecodeMapping::Columns, DecodeMapping::RowBlocks, DecodeMapping::Lanes,
                          DecodeMapping::Ring, DecodeMapping::Dense, DecodeMapping::DenseColumns, DecodeMapping::Tiles})
    if (s == dbsparse::to_string(m)) return m;
  throw UsageError(
      fmt::format("mapping '{}': expected auto, ring, dense-columns, dense, tiles, columns or row-blocks", s));
}
DecodeDtype dtype_of(const std::string& s) {
  if (s == "f16") return DecodeDtype::F16;
  if (s == "bf16") return DecodeDtype::BF16;
  if (s == "f32") return DecodeDtype::F32;
  throw UsageError(fmt::format("dtype '{}': expected f16, bf16 or f32", s));
}

dbsparse::DecodeLinearOptions options_of(const std::string& dtype, float tau, double keep, const std::string& mapping,
                                         double act_density) {
  dbsparse::DecodeLinearOptions o;
  o.dtype = dtype_of(dtype);
  o.tau = tau;
  o.keep = keep;
  o.mapping = mapping_of(mapping);
  o.act_density = act_density;
  return o;
}

template <class T>
std::vector<T> copy_of(HostVec<T> a) {
  return std::vector<T>(a.data(), a.data() + a.shape(0));
}

// A read-only NumPy view of a vector the CompactLayer (`self`) owns.
template <class T>
nb::ndarray<nb::numpy, const T, nb::ndim<1>> view_of(const std::vector<T>& v, nb::handle self) {
  return nb::ndarray<nb::numpy, const T, nb::ndim<1>>(v.data(), {v.size()}, self);
}

void bind_compact(nb::module_& m) {
  using dbsparse::CompactLayer;
  nb::class_<CompactLayer>(m, "CompactLayer")
      .def_ro("name", &CompactLayer::name)
      .def_prop_ro("rows", [](const CompactLayer& l) { return l.w.rows; })
      .def_prop_ro("cols", [](const CompactLayer& l) { return l.w.cols; })
      .def_prop_ro("strips", [](const CompactLayer& l) { return l.w.strips; })
      .def_prop_ro("nnz", [](const CompactLayer& l) { return l.w.nnz(); })
      .def_prop_ro("dtype", [](const CompactLayer& l) { return std::string(dbsparse::to_string(l.dtype)); })
      .def_prop_ro("file_bytes", &CompactLayer::file_bytes)
      .def_prop_ro("masks", [](nb::handle self) { return view_of(nb::cast<CompactLayer&>(self).w.masks, self); })
      .def_prop_ro("seg_ptr", [](nb::handle self) { return view_of(nb::cast<CompactLayer&>(self).w.seg_ptr, self); })
      .def_prop_ro("values", [](nb::handle self) { return view_of(nb::cast<CompactLayer&>(self).w.values, self); });
  m.def(
      "compact_layer",
      [](const std::string& name, int32_t rows, int32_t cols, HostVec<uint32_t> masks, HostVec<int32_t> seg_ptr,
         HostVec<uint16_t> values, const std::string& dtype) {
        CompactLayer l;
        l.name = name;
        l.dtype = dtype_of(dtype);
        if (l.dtype == DecodeDtype::F32) throw UsageError("compact_layer: values are f16 or bf16 words");
        l.w.rows = rows;
        l.w.cols = cols;
        l.w.masks = copy_of(masks);
        l.w.seg_ptr = copy_of(seg_ptr);
        l.w.values = copy_of(values);
        dbsparse::check_compact_layer(l);
        return l;
      },
      nb::arg("name"), nb::arg("rows"), nb::arg("cols"), nb::arg("masks"), nb::arg("seg_ptr"), nb::arg("values"),
      nb::arg("dtype"), nb::call_guard<nb::gil_scoped_release>(),
      "A layer in the column bitmap layout from its arrays (copied and checked; word offsets filled).");
  m.def(
      "compact_from_csr",
      [](const std::string& name, const dbsparse::CsrMatrix<float>& w, const std::string& dtype) {
        return dbsparse::make_compact_layer(name, w, dtype_of(dtype));
      },
      nb::arg("name"), nb::arg("w"), nb::arg("dtype"), nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "write_compact_weights",
      [](const std::string& path, const std::vector<const CompactLayer*>& layers,
         std::map<std::string, std::string> metadata) {
        std::vector<CompactLayer> copies;
        copies.reserve(layers.size());
        for (const CompactLayer* l : layers) copies.push_back(*l);
        dbsparse::write_compact_weights(path, copies, std::move(metadata));
      },
      nb::arg("path"), nb::arg("layers"), nb::arg("metadata"), nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "read_compact_weights", [](const std::string& path) { return dbsparse::read_compact_weights(path); },
      nb::arg("path"), nb::call_guard<nb::gil_scoped_release>());
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
      .def(
          "run_rows",
          [](const DecodeLinearPlan& p, uint64_t x, uint64_t y, int64_t n, int64_t x_stride, int64_t y_stride,
             uint64_t s) {
            for (int64_t i = 0; i < n; ++i)
              p.run(x + static_cast<uint64_t>(i * x_stride), y + static_cast<uint64_t>(i * y_stride), stream_ptr(s));
          },
          nb::arg("x"), nb::arg("y"), nb::arg("n"), nb::arg("x_stride"), nb::arg("y_stride"), nb::arg("stream"), nogil,
          "n rows one after another: row i of x at x + i * x_stride bytes, of y at y + i * y_stride.")
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
         const std::string& mapping,
         double act_density) { return plan_decode_linear(ctx, w, options_of(dtype, tau, keep, mapping, act_density)); },
      nb::arg("ctx"), nb::arg("w"), nb::arg("dtype"), nb::arg("tau"), nb::arg("keep"), nb::arg("mapping"),
      nb::arg("act_density"), nb::keep_alive<0, 1>(), nogil);
  m.def(
      "plan_decode_compact",
      [](dbsparse::Context& ctx, const dbsparse::CompactLayer& w, float tau, double keep, const std::string& mapping,
         double act_density) {
        return DecodeLinearPlan::build(ctx, w,
                                       options_of(dbsparse::to_string(w.dtype), tau, keep, mapping, act_density));
      },
      nb::arg("ctx"), nb::arg("w"), nb::arg("tau"), nb::arg("keep"), nb::arg("mapping"), nb::arg("act_density"),
      nb::keep_alive<0, 1>(), nogil);
  m.def(
      "decode_costs",
      [](dbsparse::Context& ctx, int32_t rows, int32_t cols, const std::string& dtype, double weight_density,
         double act_density) {
        const auto c =
            dbsparse::estimate_decode_costs(rows, cols, dtype_of(dtype), weight_density, act_density, ctx.profile());
        return std::map<std::string, double>{
            {"ring", c.ring_us}, {"dense-columns", c.dense_columns_us}, {"dense", c.dense_us}};
      },
      nb::arg("ctx"), nb::arg("rows"), nb::arg("cols"), nb::arg("dtype"), nb::arg("weight_density"),
      nb::arg("act_density"),
      "Estimated us of one call per mapping on ctx's device (the cost model auto reads; NaN where one cannot run).");
  bind_compact(m);
}

}  // namespace dbs_py

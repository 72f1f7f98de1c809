// SpMM plans of a host CsrMatrix (include/dbsparse/spmm.hpp): BRP-SpMM (the TC groups, then the
// residual rows), condensed TC windows (BRP's TC kernel on zero-padded tiles built on the host, no
// residual) or the CUDA-core CSR product, in f32, f16 or bf16. A plan is its spec (the host
// decisions, spmm_spec.cpp) materialized on the device (spmm_materialize.cpp); its state is
// spmm_plan_impl.hpp, its calls spmm_run.cpp, its explain spmm_explain.cpp; plans of a
// DeviceCsrView64, spmm_plan_view64.cpp. Here: the entry points and the enums' texts.
#include "dbsparse/spmm.hpp"

#include <type_traits>

#include <fmt/format.h>

#include "codegen/keys/spmm_key.hpp"
#include "dbsparse/abi/spmm.h"
#include "dbsparse/brp.hpp"
#include "dbsparse/device_csr.hpp"
#include "dbsparse/features.hpp"
#include "runtime/spmm/spmm_plan_impl.hpp"
#include "runtime/spmm/spmm_trial.hpp"

namespace dbsparse {

std::string spmm_tuning_bucket(int n_cols) { return n_cols <= 64 ? "n32" : "n128"; }

const char* to_string(SpmmPath p) {
  switch (p) {
    case SpmmPath::Auto:
      return "auto";
    case SpmmPath::Brp:
      return "brp";
    case SpmmPath::CsrCudaCore:
      return "csr-cuda-core";
    case SpmmPath::Condensed:
      return "condensed";
  }
  return "?";
}

const char* to_string(SpmmDtype d) {
  switch (d) {
    case SpmmDtype::F32:
      return "f32";
    case SpmmDtype::F16:
      return "f16";
    case SpmmDtype::BF16:
      return "bf16";
  }
  return "?";
}

SpmmDtype spmm_dtype_from_string(const std::string& s) {
  if (s == "f32" || s == "tf32") return SpmmDtype::F32;
  if (s == "f16") return SpmmDtype::F16;
  if (s == "bf16") return SpmmDtype::BF16;
  throw UsageError(fmt::format("unknown SpMM value type '{}' (f32 or its alias tf32, f16, bf16)", s));
}

int spmm_value_bytes(SpmmDtype d) { return d == SpmmDtype::F32 ? 4 : 2; }

const char* to_string(SpmmEpilogue e) { return e == SpmmEpilogue::Relu ? "relu" : "none"; }

SpmmEpilogue parse_spmm_epilogue(const std::string& s) {
  if (s == "none") return SpmmEpilogue::None;
  if (s == "relu") return SpmmEpilogue::Relu;
  throw UsageError(fmt::format("unknown SpMM epilogue '{}' (none or relu)", s));
}

const char* to_string(SpmmReduce r) { return codegen::to_string(static_cast<codegen::SpmmReduceOp>(r)); }

SpmmReduce parse_spmm_reduce(const std::string& s) {
  for (SpmmReduce r : {SpmmReduce::Sum, SpmmReduce::Mean, SpmmReduce::Max, SpmmReduce::Min})
    if (s == to_string(r)) return r;
  throw UsageError(fmt::format("unknown SpMM reduce '{}' (sum, mean, max or min)", s));
}

static_assert(static_cast<int>(SpmmReduce::Sum) == static_cast<int>(codegen::SpmmReduceOp::Sum) &&
                  static_cast<int>(SpmmReduce::Mean) == static_cast<int>(codegen::SpmmReduceOp::Mean) &&
                  static_cast<int>(SpmmReduce::Max) == static_cast<int>(codegen::SpmmReduceOp::Max) &&
                  static_cast<int>(SpmmReduce::Min) == static_cast<int>(codegen::SpmmReduceOp::Min),
              "SpmmReduce and codegen::SpmmReduceOp name the same reductions in the same order");

static_assert(static_cast<int>(SpmmDtype::F32) == static_cast<int>(codegen::SpmmValue::F32) &&
                  static_cast<int>(SpmmDtype::F16) == static_cast<int>(codegen::SpmmValue::F16) &&
                  static_cast<int>(SpmmDtype::BF16) == static_cast<int>(codegen::SpmmValue::BF16),
              "SpmmDtype and codegen::SpmmValue name the same types in the same order");

template <class T>
SpmmPlan SpmmPlan::build(Context& ctx, const CsrMatrix<T>& a, int n_cols) {
  return build(ctx, a, n_cols, SpmmOptions{});
}

template <class T>
SpmmPlan SpmmPlan::build(Context& ctx, const CsrMatrix<T>& a, int n_cols, const SpmmOptions& opt) {
  if constexpr (!std::is_same_v<T, float>) {
    throw UsageError(
        "plan_spmm: A must be a CsrMatrix<float> (there are no f64 SpMM kernels): convert it with a.cast<float>(); "
        "for f16 or bf16 data set SpmmOptions::dtype, and the plan rounds A's values once");
  } else if (opt.reduce == SpmmReduce::Mean) {
    // The mean is the sum over values divided by their row's length (spmm_spec.hpp, mean_scaled).
    validate(a);
    return build_f32(ctx, spmm_detail::mean_scaled(a), n_cols, opt);
  } else {
    return build_f32(ctx, a, n_cols, opt);
  }
}

SpmmPlan SpmmPlan::build_f32(Context& ctx, const CsrMatrix<float>& a, int n_cols, const SpmmOptions& opt) {
  if (n_cols < 1 || n_cols > abi::kSpmmMaxCols)
    throw UsageError(fmt::format("plan_spmm: n_cols must be in 1 .. {}, got {}", abi::kSpmmMaxCols, n_cols));
  if (opt.f || opt.g) validate(BrpParams{opt.f.value_or(1), opt.g.value_or(1)});
  validate(a);
  ctx.make_current();
  require_device_bytes(
      fmt::format("plan_spmm of a {} x {} matrix with {} nonzeros (A, at least)", a.rows, a.cols, a.nnz()),
      csr_device_bytes(a.rows, a.nnz(), spmm_value_bytes(opt.dtype)));
  // The config: SpmmOptions::config, else the tuning DB's; the spec applies the explicit options over it.
  // Only a plan without an explicit config reads the DB (its config, a trial's outcome).
  const std::string matrix_fp = opt.config ? std::string() : structure_fingerprint(a);
  const Config config = opt.config
                            ? *opt.config
                            : lookup_config(ctx.device().record().fingerprint, matrix_fp, config_info<SpmmConfig>(),
                                            spmm_tuning_bucket(n_cols), [&] { return compute_features(a); });
  spmm_detail::SpmmSpec spec = spmm_detail::spmm_spec(a, n_cols, opt, config, ctx.device().sm_count);
  auto make = [&](spmm_detail::SpmmSpec s) { return SpmmPlan(spmm_detail::materialize(ctx, std::move(s), a)); };
  // A trial where auto took a tensor-core path (against the CSR path) or, on the CSR path, the
  // degree order by the rows' CV alone (against A's own order: which wins also depends on N).
  const bool tc = spec.path != SpmmPath::CsrCudaCore;
  const bool auto_degree = !tc && spec.typed.reorder == "auto" && spec.order == Reorder::Degree;
  if (opt.config || spec.asked != SpmmPath::Auto || !(tc || auto_degree)) return make(std::move(spec));
  auto alternative = [&, tc] {
    SpmmOptions o = opt;
    if (tc)
      o.path = SpmmPath::CsrCudaCore;
    else
      o.reorder = Reorder::None;
    spmm_detail::SpmmSpec s = spmm_detail::spmm_spec(a, n_cols, o, config, ctx.device().sm_count);
    s.asked = SpmmPath::Auto;
    return s;
  };
  auto note = [](SpmmPlan& p, std::string text) { p.impl_->spec.trial = std::move(text); };
  std::string chosen_name = tc ? to_string(spec.path) : "csr-degree";
  spmm_detail::SpmmTrialPair pair{std::move(spec), std::move(chosen_name), alternative,
                                  tc ? "csr-cuda-core" : "csr-none"};
  return spmm_detail::auto_by_trial(ctx, matrix_fp, a.nnz(), opt.trial_ms, std::move(pair), make, note);
}

template SpmmPlan SpmmPlan::build(Context&, const CsrMatrix<float>&, int);
template SpmmPlan SpmmPlan::build(Context&, const CsrMatrix<double>&, int);
template SpmmPlan SpmmPlan::build(Context&, const CsrMatrix<float>&, int, const SpmmOptions&);
template SpmmPlan SpmmPlan::build(Context&, const CsrMatrix<double>&, int, const SpmmOptions&);

}  // namespace dbsparse

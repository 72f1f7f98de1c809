// The SpGEMM op's registry entry: hash SpGEMM (hash-spgemm-summary.md; include/dbsparse/spgemm.hpp)
// on C = A² (A·Aᵀ for a non-square A), against cuSPARSE SpGEMM in `bench spgemm`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "codegen/keys/mcl_key.hpp"
#include "codegen/keys/spgemm_key.hpp"
#include "codegen/keys/triangle_key.hpp"
#include "dbsparse/reference.hpp"
#include "dbsparse/spgemm.hpp"
#include "tools/bench/bench_spgemm.hpp"
#include "tools/bench/suites.hpp"
#include "tools/ops/op_support.hpp"
#include "tools/ops/first_calls.hpp"
#include "tools/ops/fixed_cost_calls.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::tools {
namespace {

using tuner::Measurement;
using tuner::ParamSpec;

// The objective checks every candidate against the CPU reference (and its |A||B| twin), computed
// once per matrix on every hardware thread; past this many products that would take the host
// longer than the search itself, and dbtune's default run tunes spgemm too: a matrix past it is a
// skipped row (dbtune's quick R-MAT 16 has 4.0e8 products, its scrambled edge factor 16 1.2e9).
constexpr int64_t kObjectiveMaxProducts = 600'000'000;

// The axes of codegen::spgemm_search_space (tables doubled, group 0's lanes, other blocks), so that
// `precompile` has every candidate's kernels; the group bounds stay the article's.
tuner::SearchSpace make_space() {
  tuner::SearchSpace s{"spgemm", {}, {}, config_to_json(SpgemmConfig{}), tuner::validate_as<SpgemmConfig>()};
  s.params = {
      ParamSpec::choice("t0", {64, 128}, "shared table slots per row, group 0"),
      ParamSpec::choice("t1", {1024, 2048}, "shared table slots per row, group 1"),
      ParamSpec::choice("t2", {8192, 16384}, "shared table slots per row, group 2"),
      ParamSpec::choice("lanes0", {4, 8}, "threads per row, group 0"),
      // 64: two warp-rows a block, so an SM refills as rows end (with 256 a block is held by its
      // slowest of 8 rows; docs/decisions/spgemm-config-defaults.md).
      ParamSpec::choice("block1", {64, 256, 512}, "threads per block, group 1"),
      ParamSpec::choice("lanes1", {0, 32}, "threads per row, group 1 (0: the whole block)"),
      // Block rows of group 2 with few distinct columns (a 27-point stencil's 729 products make 125)
      // leave most of 1024 threads idle through the sort's barriers.
      ParamSpec::choice("block2", {256, 512, 1024}, "threads per block (and row), group 2"),
      // Rows of few A entries and long B rows barely merge (IP ~ nnz(C)): a rank merge of the sorted
      // B rows does a hash table's and a sort's work (docs/decisions/spgemm-low-accumulation.md).
      ParamSpec::choice("merge2", {0, 8}, "group 2 rows of at most this many A entries merged by rank (0: hashed)"),
      ParamSpec::choice("block3", {512, 1024}, "threads per block, group 3 (global tables)"),
      ParamSpec::choice("split3", {4, 16, 64}, "blocks per row with a global table"),
      ParamSpec::choice("fit_tables", {0, 1}, "shared tables fitted to each group's longest row"),
      ParamSpec::choice("narrow_dense", {0, 1}, "no global rows where B fits group 2's dense table"),
  };
  // Joint moves from a hand sweep: group 0 up to 127 products a row with 256-slot tables, and
  // groups 1-2 with lower bounds; seeds and not defaults because some matrices got slower
  // (docs/decisions/spgemm-config-defaults.md).
  s.seeds = {{{"b0", 128}, {"t0", 256}, {"lanes0", 32}},
             {{"b0", 128}, {"t0", 256}, {"lanes0", 16}},
             {{"b1", 256}, {"b2", 4096}}};
  return s;
}

// B of the product the tools time: A itself when square, else Aᵀ.
CsrMatrix<float> second_operand(const CsrMatrix<float>& a) { return a.rows == a.cols ? a : transpose(a); }

CsrMatrix<float> abs_of(CsrMatrix<float> m) {
  for (auto& v : m.values) v = std::fabs(v);
  return m;
}

// The tuner's time: plan.run() once C's structure is known (the numeric phase, the hot path of a
// plan whose values change), after the first run's C is checked against reference::spgemm.
struct SpgemmObjective {
  Context& ctx;
  CsrMatrix<float> a, b, ref, scale;
  std::string skip;  // why this matrix is not searched

  SpgemmObjective(Context& c, const NamedMatrix& m) : ctx(c), a(m.csr.cast<float>()), b(second_operand(a)) {
    const int64_t products = spgemm_flops(intermediate_products(a, b)) / 2;
    if (products > kObjectiveMaxProducts) {
      skip = fmt::format("{} products; the CPU reference stops at {}", products, kObjectiveMaxProducts);
      return;
    }
    ref = reference::spgemm(a, b).cast<float>();
    scale = reference::spgemm(abs_of(a), abs_of(b)).cast<float>();
  }

  Measurement operator()(const nlohmann::json& params, int samples) {
    return guarded([&]() -> Measurement {
      if (!skip.empty()) return {TrialStatus::Skipped, 0, skip};
      SpgemmOptions opt;
      opt.config = config_from_json<SpgemmConfig>(params);
      Stream s(ctx);
      SpgemmPlan<float> plan = plan_spgemm(ctx, a, b, opt);
      plan.run(s.handle());
      const SpgemmCheck c = compare_spgemm(ref, plan.download(), scale, spgemm_tolerance("f32"));
      if (!c.ok) return {TrialStatus::WrongResult, 0, c.note};
      const double us =
          time_on_stream(s.handle(), objective_timing(samples), [&](int64_t) { plan.run(s.handle()); }).median_us;
      return {TrialStatus::Ok, us,
              fmt::format("numeric {:.1f} us, nnz(C) {}, {} overflowed row(s)", us, plan.nnz(), plan.overflow_rows())};
    });
  }
};

nlohmann::json bench(Context& ctx, const Stream& stream, const BenchRequest& r) {
  SpgemmBenchOptions opt;
  opt.timing = r.timing;
  opt.baselines = r.baselines;
  if (r.config) opt.config = config_from_json<SpgemmConfig>(*r.config);  // a bad key fails before GPU work
  opt.contract_k = r.contract_k;
  opt.mcl_iters = r.mcl_iters;
  opt.one_pass = !r.two_pass;
  opt.transpose_b = r.transpose_b;
  (void)contract_k_for(1, opt.contract_k);  // a bad --contract-k fails before GPU work
  std::vector<nlohmann::json> records, contract_records, contract_device_records, mcl_records, triangle_records;
  print_spgemm_header();
  for_each_matrix(r.specs, [&](const NamedMatrix& m, bool generated) {
    for (const auto& p : r.precisions) {
      records.push_back(bench_spgemm_matrix(ctx, stream, m, generated, p, opt));
      // The applications under the matrix's A^2 row (square matrices only).
      const nlohmann::json apps = bench_spgemm_apps_matrix(ctx, stream, m, generated, p, opt);
      if (apps.contains("contract")) contract_records.push_back(apps.at("contract"));
      if (apps.contains("contract_device")) contract_device_records.push_back(apps.at("contract_device"));
      if (apps.contains("mcl")) mcl_records.push_back(apps.at("mcl"));
      if (apps.contains("triangles")) triangle_records.push_back(apps.at("triangles"));
    }
  });
  nlohmann::json j;
  j["results"] = records;
  j["summary"] = spgemm_summary(records);
  fmt::print("{}", spgemm_apps_text());
  j["contract"] = contract_records;
  j["summary_contract"] = spgemm_app_summary(contract_records, "contract");
  j["contract_device"] = contract_device_records;
  j["summary_contract_device"] = spgemm_app_summary(contract_device_records, "contract_device");
  j["mcl"] = mcl_records;
  j["summary_mcl"] = spgemm_app_summary(mcl_records, "mcl");
  j["triangles"] = triangle_records;
  j["summary_triangles"] = spgemm_app_summary(triangle_records, "triangles");
  j["apps_timings"] = {
      {"dbsparse_ms",
       "the whole pipeline, wall clock, median over up to 3 runs after an untimed warm-up (stopping after 3 s): "
       "contract(ctx, G, labels, k) with G and the labels uploaded and C downloaded; contract_device: "
       "contract(ctx, G on the device, labels on the device, k, stream) with C left there; mcl(ctx, G, options) "
       "with the labels on the host"},
      {"cusparse_ms",
       "the same pipeline with every product by a fresh CusparseSpgemm (DEFAULT, ALG3 where DEFAULT runs out of "
       "memory), built the same way (tools/baselines/cusparse_pipelines.hpp): contraction's S and S^T by "
       "contraction_factors on the device, uploads and download included alike; MCL's loop and elementwise kernels "
       "the library's"},
      {"dbsparse_iter_ms / cusparse_iter_ms",
       "MCL: the sum of the iterations' own times (expansion and elementwise steps, P on the device) / iterations, "
       "median over the runs"},
      {"speedup", "cusparse_ms / dbsparse_ms"},
      {"check",
       "contract: C against C within the spgemm tolerance relative to the contraction of |G|; mcl: the same "
       "number of iterations and equal labels"}};
  j["product"] = "C = A*A for a square A, else A*A^T (A^T built on the host)";
  j["timings"] = {
      {"dbsparse_first_ms",
       "plan_spgemm(ctx, ...) from device CSR (A and B uploaded before timing and read in place; GPU analysis: IP, "
       "groups, lists and global tables' places, one wait and read-back of the counts; kernels already loaded) + "
       "the first run() (symbolic phase, C's row_ptr on the GPU, a second wait and read-back of nnz(C), C "
       "allocated, numeric phase) + stream sync; wall clock, median over up to --reps products, stopping after 3 s"},
      {"dbsparse_fresh_parts_ms",
       "dbsparse_first_ms split by SpgemmPlan::fresh_times() (host wall clock, medians over the same products): plan "
       "(all of plan_spgemm(ctx, ...)), analysis_wait (its GPU analysis launched, waited for and read back), "
       "symbolic_wait (place_rows + symbolic launches + C's row_ptr + the wait and nnz(C) read back), alloc_c, "
       "numeric_launch, rest (the caller's sync: the numeric phase's GPU time past its launch)"},
      {"dbsparse_cold_ms", "the same for the first plan of the matrix, which also loads any kernel not yet loaded"},
      {"dbsparse_steady_ms", "plan.run() with C's structure known (numeric phase only), event-timed median per call"},
      {"dbsparse_accesses_per_product",
       "hash-table slots the numeric phase reads to place a product (1 in a dense table, the linear probes "
       "otherwise), counted by hash_spgemm_cpu (the kernels' CPU spec) with the plan's config; left out past 2e8 "
       "products"},
      {"dbsparse_from_host_ms",
       "plan_spgemm(ctx, ...) from host CSR (uploads of A and B included) + the first run() + stream sync; one run"},
      {"dbsparse_oneshot_ms",
       "spgemm(ctx, A, B): plan from host CSR, one run, C downloaded to the host; wall clock, one run"},
      {"cusparse_ms",
       "cusparseSpGEMM (DEFAULT, else ALG3 with chunk fraction 0.2): SpGEMM and C descriptors, workEstimation (size "
       "query + call), [ALG3: estimateMemory query + call], compute (DEFAULT: size query + call), SpMatGetSize, "
       "CsrSetPointers, SpGEMM_copy, stream sync; buffers and C allocated beforehand by an untimed first sequence; "
       "inputs already on the device; wall clock, median as for dbsparse_first_ms"},
      {"speedup_first", "cusparse_ms / dbsparse_first_ms (both compute structure and values afresh)"},
      {"speedup_steady", "cusparse_ms / dbsparse_steady_ms (not like for like: numeric only against a fresh product)"},
      {"gflops", "2 * IP / time, IP = intermediate products (sum over rows of A of the B row lengths)"},
      {"peak_bytes",
       "the larger of the bytes counted (dbsparse: plan.device_bytes(), C included; cuSPARSE: A, B, buffers, C) and "
       "the drop in cuMemGetInfo's free memory across the allocations, A and B on the device included for both; MB "
       "= 1e6 bytes"}};
  j["tolerance"] = {{"f32", spgemm_tolerance("f32")},
                    {"f64", spgemm_tolerance("f64")},
                    {"relative_to", "sum |a||b| per entry of C (dbsparse on |A| and |B|)"}};
  return j;
}

std::string explain(Context& ctx, const NamedMatrix& m) {
  const CsrMatrix<float> a = m.csr.cast<float>();
  return fmt::format("{} (f32): the plan's config line says whether it was tuned, predicted or the defaults\n{}",
                     a.rows == a.cols ? "A*A" : "A*A^T", plan_spgemm(ctx, a, second_operand(a)).explain());
}

// The analysis kernels, and the applications' modules riding along so that precompile covers them too.
void add_analysis_and_apps(std::vector<codegen::KernelSource>& out) {
  for (const auto& k : codegen::spgemm_analysis_search_space()) out.push_back(codegen::make_source(k));
  out.push_back(codegen::make_source(codegen::TriangleKey{}));
  out.push_back(codegen::make_source(codegen::MclKey{codegen::ValueType::F32, 256}));
  out.push_back(codegen::make_source(codegen::MclKey{codegen::ValueType::F64, 256}));
}

// The variants SpgemmConfig's defaults reach (OpDescriptor::default_variants): each group's kernels
// in both phases and value types under the config as a plan fits it (spgemm_for_width, then
// spgemm_fitted: the shared tables shrink to the longest row), over B widths and longest rows of
// every power of two up to 2^20; the analysis kernels and the applications' modules, as variants.
std::vector<codegen::KernelSource> spgemm_default_variants() {
  const SpgemmConfig c;
  std::vector<codegen::SpgemmKey> keys;
  for (auto vt : {codegen::ValueType::F32, codegen::ValueType::F64})
    for (auto ph : {codegen::SpgemmPhase::Symbolic, codegen::SpgemmPhase::Numeric})
      for (int64_t b_cols = 1; b_cols <= (int64_t{1} << 20); b_cols *= 2)
        for (int64_t ip = 1; ip <= (int64_t{1} << 20); ip *= 2) {
          const SpgemmConfig f = spgemm_fitted(spgemm_for_width(c, b_cols), {ip, ip, ip}, b_cols);
          for (int g = 0; g < 4; ++g) {
            const auto k = codegen::spgemm_key(vt, ph, g, f);
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
          }
        }
  std::vector<codegen::KernelSource> out;
  for (const auto& k : keys) out.push_back(codegen::make_source(k));
  add_analysis_and_apps(out);
  return out;
}

OpDescriptor make() {
  OpDescriptor d;
  d.name = "spgemm";
  d.doc =
      "C = A B, both CSR: hash SpGEMM, rows grouped by intermediate products, hash tables in shared or global memory";
  d.config = config_info<SpgemmConfig>();
  d.paper = config_to_json(SpgemmConfig::paper());  // dbtune reports the tuned configs against the article's
  d.objective_doc = "plan.run time with C's structure known (numeric phase), A^2 or A A^T";
  d.space = make_space();
  d.bench_suite = spgemm_suite;
  d.variants = [](bool) {
    std::vector<codegen::KernelSource> out;
    for (const auto& k : codegen::spgemm_search_space()) out.push_back(codegen::make_source(k));
    add_analysis_and_apps(out);
    return out;
  };
  d.default_variants = spgemm_default_variants;
  d.objective = [](Context& ctx, const NamedMatrix& m, const ObjectiveOptions& o) -> std::unique_ptr<tuner::Objective> {
    if (!o.densities.empty()) throw UsageError("spgemm: B is the sparse A (or A^T); --density does not apply");
    auto obj = std::make_shared<SpgemmObjective>(ctx, m);
    return std::make_unique<tuner::Objective>([obj](const nlohmann::json& c, int n) { return (*obj)(c, n); });
  };
  d.bench_options = {"--config", "--contract-k", "--mcl-iters", "--two-pass", "--transpose-b"};
  d.bench = bench;
  d.explain = explain;
  // Tuned by default: plans look their config up in the DB. The objective skips a matrix
  // whose A^2 passes kObjectiveMaxProducts (its CPU reference would outlast the search).
  d.tuned_by_default = true;
  d.fixed_cost_calls = spgemm_fixed_cost_calls;
  d.first_call = spgemm_first_call;
  return d;
}

}  // namespace

const OpDescriptor& spgemm_op() {
  static const OpDescriptor d = make();
  return d;
}

}  // namespace dbsparse::tools

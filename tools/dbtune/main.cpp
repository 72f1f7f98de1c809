// dbtune: run once per device. Records the device and the suite's matrices (fingerprint and
// features) in the tuning DB, precompiles every kernel variant, and measures each SpMV candidate
// per matrix, keeping every trial and the best config. Without a GPU it does the parts that need
// none (matrices, features, kernels for --arch) and says so.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "codegen/kernel_cache.hpp"
#include "codegen/catalog.hpp"
#include "dbsparse/dbsparse.hpp"
#include "tools/common/suites.hpp"
#include "tools/dbtune/spmv_search.hpp"

using namespace dbsparse;

namespace {

struct Args {
  bool quick = false, no_shared = false;
  std::vector<std::string> matrices;
  std::string db_path = TuningDb::default_path();
  std::string arch;
  tools::TimingOptions timing{3, 9, 10};
};

std::vector<std::string> suite(const Args& a) {
  if (!a.matrices.empty()) return a.matrices;
  auto specs = tools::generated_suite(a.quick ? "quick" : "full");
  if (!a.no_shared) {
    auto shared = tools::shared_matrix_files();
    specs.insert(specs.end(), shared.begin(), shared.end());
  }
  return specs;
}

int run(const Args& a) {
  std::string why;
  bool gpu = cuda_device_available(&why);
  std::unique_ptr<Context> ctx;
  std::string arch = a.arch;
  if (gpu) {
    ctx = std::make_unique<Context>();
    arch = arch.empty() ? ctx->device().arch() : arch;
    fmt::print("dbtune on {} ({})\n", ctx->device().name, ctx->device().arch());
  } else {
    if (arch.empty()) arch = "sm_90";
    fmt::print("dbtune: no CUDA device found ({}).\n"
               "Running the parts that need none: matrix features into the DB and kernels for {}.\n",
               why, arch);
  }
  auto db = TuningDb::open(a.db_path);
  fmt::print("tuning DB: {}\n", db->path());
  if (ctx) db->upsert_device(ctx->device().record());

  // Kernels first: a failing variant is reported here, before any matrix work.
  auto& cache = codegen::KernelCache::global();
  int compiled = 0, failed = 0;
  for (const auto& op : codegen::known_ops()) {
    auto variants = codegen::op_variants(op);
    for (size_t i = 0; i < variants.size(); ++i) {
      // One line, rewritten in place: a cold cache compiles a few hundred kernels.
      fmt::print(stderr, "\rkernels for {}: {}/{} ", op, i + 1, variants.size());
      try {
        cache.get(variants[i], arch);
        ++compiled;
      } catch (const Error& e) {
        ++failed;
        fmt::print(stderr, "\n  kernel {} failed: {}\n", variants[i].key, e.what());
      }
    }
    fmt::print(stderr, "\n");
  }
  fmt::print("kernels: {} ready for {} in {}{}\n", compiled, arch,
             cache.persistent() ? cache.dir() : "memory", failed ? fmt::format(", {} failed", failed) : "");

  auto specs = suite(a);
  std::vector<tools::SpmvTuneResult> results;
  auto t_start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < specs.size(); ++i) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    std::string eta = i ? fmt::format("ETA {:.0f} s", elapsed / i * (specs.size() - i)) : "ETA --";
    fmt::print(stderr, "[{}/{}] {} ({})\n", i + 1, specs.size(), specs[i], eta);
    try {
      NamedMatrix m = load_matrix(specs[i]);
      MatrixRecord rec{structure_fingerprint(m.csr), m.name, compute_features(m.csr)};
      db->upsert_matrix(rec);
      if (ctx) results.push_back(tools::tune_spmv(*ctx, *db, m, rec.fingerprint, a.timing));
    } catch (const InputError& e) {
      fmt::print(stderr, "  skipped: {}\n", e.what());
    }
  }
  auto c = db->counts();
  fmt::print("DB now holds {} devices, {} matrices, {} trials, {} configs\n", c.devices, c.matrices,
             c.trials, c.configs);
  if (ctx) tools::print_spmv_tune_table(results);
  else fmt::print("No GPU: nothing was timed. Run dbtune on the GPU machine to tune.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dbtune: tune dbsparse's kernels for this GPU (run once per device)"};
  app.set_version_flag("--version", std::string("dbtune ") + DBSPARSE_VERSION);
  Args a;
  app.add_flag("--quick", a.quick, "Small suite (a few million nonzeros per matrix)");
  app.add_option("--matrices", a.matrices, "Matrix files or generator strings instead of the suite");
  app.add_flag("--no-shared", a.no_shared, "Leave out ../shared/matrices ($DBSPARSE_MATRICES)");
  app.add_option("--db", a.db_path, "Tuning DB (default $DBSPARSE_DB or $XDG_DATA_HOME/dbsparse/tuning.db)");
  app.add_option("--arch", a.arch, "Kernel target when there is no GPU (default sm_90)");
  app.add_option("--reps", a.timing.samples, "Timed samples per candidate")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  try {
    return run(a);
  } catch (const Error& e) {
    std::fprintf(stderr, "dbtune: error: %s\n", e.what());
    return 1;
  }
}

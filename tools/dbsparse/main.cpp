// dbsparse: the command-line front end. Subcommands live one per file beside this one.
#include <cstdio>
#include <map>
#include <string>

#include "dbsparse/error.hpp"
#include "tools/cli_checks.hpp"
#include "tools/dbsparse/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"dbsparse: runtime-generated, autotuned sparse GPU kernels"};
  app.set_version_flag("--version", std::string("dbsparse ") + DBSPARSE_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, dbsparse::cli::Runner> runners;
  auto add = [&](const char* name, const char* help, dbsparse::cli::Runner (*configure)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    runners[sub] = configure(*sub);
  };
  add("info", "Device, NVRTC and driver versions, kernel cache and tuning DB state", dbsparse::cli::add_info);
  add("precompile", "Compile every kernel variant into the persistent cache (no GPU needed)",
      dbsparse::cli::add_precompile);
  add("bench", "Time an op on a suite of matrices against cuSPARSE; table and JSON", dbsparse::cli::add_bench);
  add("convert",
      "Convert a matrix to the DB format on the CPU (or --format brp, on the GPU when there is one); its size against CSR and CSR+CSC",
      dbsparse::cli::add_convert);
  add("explain", "The config a plan would use for a matrix on this GPU, and where it came from",
      dbsparse::cli::add_explain);
  add("profile", "The device profile the cost models read on this GPU and its source; --measure measures and stores it",
      dbsparse::cli::add_profile);
  add("first-call",
      "Each op's first plan-and-call in a fresh process, with an empty and with a filled kernel cache (a GPU)",
      dbsparse::cli::add_first_call);
  add("explore", "Time a sweep of one tuning parameter; table, SVG plot, every point stored as a trial",
      dbsparse::cli::add_explore);
  add("bfs", "Breadth-first search from a few sources: GTEPS, levels, per-level directions, validation",
      dbsparse::cli::add_bfs);
  add("decode-bench",
      "Batch-1 linear layers of a model, pruned, activations sparsified: dbsparse against cuBLAS and cuSPARSE",
      dbsparse::cli::add_decode_bench);
  add("prune", "Prune a checkpoint's linear layers per row and save them in the compact column bitmap layout",
      dbsparse::cli::add_prune);
  add("calibrate",
      "Per linear weight, from recorded calibration activations: Wanda's input norms and TEAL's activation thresholds",
      dbsparse::cli::add_calibrate);
  add("gcn", "A 2-layer GCN forward pass: dbsparse SpMM against cuSPARSE SpMM in the same cuBLAS pipeline",
      dbsparse::cli::add_gcn);
  add("triangles", "Triangle counting on the GPU (masked product C<L> = L*L, no L or C built), checked against the CPU",
      dbsparse::cli::add_triangles);
  add("reorder",
      "Vertex orderings (degree, RCM, community) on the CPU: their time and how local each makes the pattern",
      dbsparse::cli::add_reorder);
  add("square", "C = A^2 (or A*A^T) by hash SpGEMM: first and steady run, GFLOP/s, nnz(C), checked against the CPU",
      dbsparse::cli::add_square);
  add("contract", "Graph contraction C = S*G*S^T for vertex labels (a file or random) by two hash SpGEMM products",
      dbsparse::cli::add_contract);
  add("mcl", "Markov clustering on the GPU: time per iteration, clusters, labels checked against the CPU",
      dbsparse::cli::add_mcl);
  // CLI11 says only "A subcommand is required" for a word it does not know: name it and the list.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const auto& [sub, run] : runners) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "dbsparse: unknown command '%s' (commands: %s; dbsparse --help)\n", argv[1], names.c_str());
      return 106;  // CLI11's code for a parse error
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return dbsparse::cli::exit_code_after_stdout("dbsparse", run());
  } catch (const dbsparse::NoDeviceError& e) {
    std::fprintf(stderr, "dbsparse: %s\n", e.what());
    return 3;
  } catch (const dbsparse::Error& e) {
    std::fprintf(stderr, "dbsparse: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    // Readers name the file when its declared sizes cannot be held; this is what is left over.
    std::fprintf(stderr, "dbsparse: error: out of host memory (an input larger than this machine can hold)\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dbsparse: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}

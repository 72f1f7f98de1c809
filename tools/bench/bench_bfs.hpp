#pragma once
// `dbsparse bench bfs` and `dbsparse bfs`: DB-BFS (auto, push-only, pull-only) against the BFS a
// user would write from cuSPARSE SpMV, in GTEPS as Graph500 counts them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dbsparse/bfs.hpp"
#include "dbsparse/context.hpp"
#include "dbsparse/io.hpp"

namespace dbsparse::tools {

struct BfsBenchOptions {
  int random_sources = 16;       // besides vertex 0 (Graph500: 64; the suite: 16)
  std::vector<int32_t> sources;  // instead of vertex 0 + random ones
  uint64_t seed = 1;
  int reps = 3;               // runs per source; the median is reported
  bool baselines = true;      // push-only, pull-only and the cuSPARSE loop
  bool validate = true;       // Graph500 validation of auto's runs (CPU) ...
  int validate_sources = 4;   // ... from the first this many sources (-1: all)
  bool levels_table = false;  // print auto's per-level table for the first source
  bool symmetrise = true;     // search A + A^T when A is not symmetric (else A as a directed graph)
  std::optional<nlohmann::json> config;
};

// The graphs of the default suite ("quick" or "full").
std::vector<std::string> bfs_suite(const std::string& size);

// One graph: its pattern (symmetrised when A is not symmetric), every implementation on every
// source. Prints a block of lines; returns the graph's JSON record.
nlohmann::json bench_bfs_graph(Context& ctx, const Stream& stream, const NamedMatrix& m, const BfsBenchOptions& opt);

// The table's header, and the summary over the graphs' records (printed, and returned as JSON).
void print_bfs_header();
nlohmann::json bfs_summary(const std::vector<nlohmann::json>& graphs);

}  // namespace dbsparse::tools

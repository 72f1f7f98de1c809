#include "tools/bench/suites.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "dbsparse/pruning.hpp"

namespace dbsparse::tools {

std::vector<std::string> shared_matrix_files() {
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("DBSPARSE_MATRICES"); env && *env) dirs.emplace_back(env);
  dirs.emplace_back(fs::path(DBS_SOURCE_DIR) / ".." / "shared" / "matrices");
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      auto p = e.path().string();
      if (p.ends_with(".mtx") || p.ends_with(".mtx.gz")) out.push_back(fs::weakly_canonical(p).string());
    }
    std::sort(out.begin(), out.end());
    if (!out.empty()) return out;
  }
  return {};
}

std::string resolve_shared_name(const std::string& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (spec.find(':') != std::string::npos || spec.find('/') != std::string::npos || fs::exists(spec, ec)) return spec;
  for (const auto& file : shared_matrix_files()) {
    const fs::path p(file);
    std::string stem = p.filename().string();
    for (const char* ext : {".mtx.gz", ".mtx"})
      if (stem.ends_with(ext)) stem.resize(stem.size() - std::char_traits<char>::length(ext));
    if (stem == spec || p.filename().string() == spec) return file;
  }
  return spec;
}

std::vector<std::string> generated_suite(const std::string& size) {
  if (size == "full")
    // The first six are the cuSPARSE anchor matrices (reference timings on the lent GPU); the power-law one has 5 rows past 10^5.
    return {"stencil3d:n=80,points=27", "stencil3d:n=160,points=27", "banded:n=1000000,bw=8",
            "fem:nodes=700000,k=3,blocks=9", "uniform:n=1000000,d=16", "rmat:scale=19,ef=8", "stencil3d:n=150,points=7",
            "fem:nodes=1200000,k=4,blocks=6", "rmat:scale=20,ef=8", "powerlaw:n=2000000,avg=8,alpha=1.2,max=300000",
            // Graph500's own shape: ids scrambled, so hubs give no locality.
            "rmat:scale=20,ef=16,scramble=1"};
  if (size == "quick")
    return {"stencil3d:n=40,points=27",      "banded:n=200000,bw=8", "fem:nodes=150000,k=3,blocks=9",
            "uniform:n=200000,d=16",         "rmat:scale=16,ef=8",   "powerlaw:n=200000,avg=8,alpha=1.2,max=150000",
            "rmat:scale=16,ef=16,scramble=1"};
  throw UsageError("unknown suite size '" + size + "' (expected quick or full)");
}

std::vector<std::string> spmspv_suite(const std::string& size) {
  // Where an anchor matrix exists (stencil 80^3, banded, FEM 700k, uniform, RMAT 19) the same
  // matrix is used, so the cuSPARSE rows can be compared with it.
  if (size == "full")
    return {"stencil3d:n=100,points=7",
            "stencil3d:n=150,points=7",
            "stencil3d:n=80,points=27",
            "fem:nodes=700000,k=3,blocks=9",
            "fem:nodes=1200000,k=4,blocks=6",
            "banded:n=1000000,bw=8",
            "rmat:scale=19,ef=8",
            "rmat:scale=20,ef=8",
            "uniform:n=1000000,d=16",
            "powerlaw:n=2000000,avg=8,alpha=1.5,max=100000",
            "rmat:scale=20,ef=16,scramble=1"};
  if (size == "quick")
    return {"stencil3d:n=50,points=7",       "stencil3d:n=40,points=27",
            "fem:nodes=60000,k=3,blocks=9",  "fem:nodes=80000,k=4,blocks=6",
            "banded:n=100000,bw=8",          "rmat:scale=17,ef=8",
            "uniform:n=100000,d=16",         "powerlaw:n=200000,avg=8,alpha=1.5,max=50000",
            "rmat:scale=16,ef=16,scramble=1"};
  throw UsageError("unknown suite size '" + size + "' (expected quick or full)");
}

std::vector<std::string> spgemm_suite(const std::string& size) {
  // The generators have no 19-point stencil; the 27-point one at n = 171 gives the article's ~5M rows,
  // at 27 rather than ~20 a row (A²: 125 a row in C, 3.6G products).
  if (size == "full")
    return {"roadnet:n=1393383,seed=1", "powerlaw:n=1000000,avg=5,alpha=1.5,max=5000,seed=1",
            "stencil3d:n=171,points=27", "rmat:scale=18,ef=8,seed=1", "uniform:n=1000000,d=8,seed=1"};
  if (size == "quick")
    return {"roadnet:n=100000,seed=1", "powerlaw:n=100000,avg=5,alpha=1.5,max=2000,seed=1", "stencil3d:n=30,points=27",
            "rmat:scale=14,ef=8,seed=1", "uniform:n=100000,d=8,seed=1"};
  throw UsageError("unknown suite size '" + size + "' (expected quick or full)");
}

namespace {
// Graphs at the sizes and mean degrees of the GNN datasets BRP-SpMM's seed and its peers report
// (DGL: 20K-717K rows), for issue 63: citation and social graphs as power-law rows, co-purchase,
// co-author, Yelp- and Reddit-like ones as communities (scrambled: real ids do not follow them, so
// the row order BRP picks has something to find).
std::vector<std::string> spmm_gnn_graphs(bool full) {
  std::vector<std::string> out = {// PubMed: 19,717 vertices, 88,648 entries, max degree 171.
                                  "powerlaw:n=19717,avg=4.5,alpha=2,max=171,seed=1",
                                  // Amazon co-purchase, Computers: 13,752 vertices, mean degree 35.8.
                                  "community:n=13752,k=138,p_in=0.3,p_out=0.0004,seed=1,scramble=1",
                                  // Coauthor Physics: 34,493 vertices, mean degree 14.4.
                                  "community:n=34493,k=138,p_in=0.048,p_out=0.00007,seed=1,scramble=1",
                                  // Flickr: 89,250 vertices, 899,756 entries.
                                  "powerlaw:n=89250,avg=10,alpha=1.5,max=5425,seed=1",
                                  // ogbn-arxiv, symmetrised: 169,343 vertices, mean degree 13.7.
                                  "powerlaw:n=169343,avg=13.7,alpha=1.5,max=13161,seed=1"};
  if (full) {
    // Yelp: 716,847 vertices, mean degree 19.5.
    out.push_back("community:n=716847,k=2868,p_in=0.06,p_out=0.0000063,seed=1,scramble=1");
    // Reddit: 232,965 vertices, mean degree 492 (about 115M entries).
    out.push_back("community:n=232965,k=466,p_in=0.8,p_out=0.0004,seed=1,scramble=1");
  }
  return out;
}
}  // namespace

std::vector<std::string> spmm_suite(const std::string& size, const std::string& set) {
  if (size != "quick" && size != "full") throw UsageError("unknown suite size '" + size + "' (expected quick or full)");
  if (set != "graphs" && set != "moderate" && set != "gnn" && set != "all")
    throw UsageError("unknown spmm suite set '" + set + "' (expected graphs, moderate, gnn or all)");
  const bool full = size == "full";
  if (set == "gnn") return spmm_gnn_graphs(full);
  std::vector<std::string> out;
  if (set != "moderate") {
    // Average degree 16-20 throughout, so the sizes and kinds differ rather than the density.
    // community: 500-vertex communities, 15-25 links inside and about 5 outside a vertex.
    if (full)
      out = {"powerlaw:n=20000,avg=16,alpha=1.5,max=2000,seed=1",
             "powerlaw:n=500000,avg=16,alpha=1.5,max=50000,seed=1",
             "powerlaw:n=2000000,avg=16,alpha=1.5,max=100000,seed=1",
             "rmat:scale=16,ef=16,seed=1",
             "rmat:scale=20,ef=16,seed=1",
             "rmat:scale=20,ef=16,seed=1,scramble=1",
             "uniform:n=200000,d=16,seed=1",
             "uniform:n=2000000,d=16,seed=1",
             "community:n=100000,k=200,p_in=0.05,p_out=0.00005,seed=1",
             "community:n=2000000,k=4000,p_in=0.03,p_out=0.0000025,seed=1"};
    else
      out = {"powerlaw:n=20000,avg=16,alpha=1.5,max=2000,seed=1", "rmat:scale=16,ef=16,seed=1",
             "rmat:scale=17,ef=16,seed=1,scramble=1", "uniform:n=200000,d=16,seed=1",
             "community:n=100000,k=200,p_in=0.05,p_out=0.00005,seed=1"};
  }
  if (set != "graphs") {
    // Magnitude-pruned normal weights, 50% to 90% sparse: rows as a layer's outputs, cols its inputs
    // (11008 x 4096 and back: LLaMA-7B's MLP); 16x16 blocks match the tensor cores' tiles.
    std::vector<std::string> moderate =
        full ? std::vector<std::string>{"pruned:rows=4096,cols=4096,density=0.5,seed=1",
                                        "pruned:rows=4096,cols=4096,density=0.3,seed=1",
                                        "pruned:rows=4096,cols=4096,density=0.1,seed=1",
                                        "pruned:rows=4096,cols=4096,density=0.3,block=4,seed=1",
                                        "pruned:rows=4096,cols=4096,density=0.3,block=16,seed=1",
                                        "pruned:rows=4096,cols=4096,density=0.1,block=16,seed=1",
                                        "pruned:rows=11008,cols=4096,density=0.3,seed=1",
                                        "pruned:rows=4096,cols=11008,density=0.3,seed=1"}
             : std::vector<std::string>{"pruned:rows=4096,cols=4096,density=0.5,seed=1",
                                        "pruned:rows=4096,cols=4096,density=0.1,seed=1",
                                        "pruned:rows=4096,cols=4096,density=0.3,block=16,seed=1"};
    out.insert(out.end(), moderate.begin(), moderate.end());
  }
  return out;
}

std::vector<std::string> decode_suite(const std::string& size) {
  if (size != "quick" && size != "full") throw UsageError("unknown suite size '" + size + "' (expected quick or full)");
  std::vector<std::string> models{"llama-3.1-8b"};
  if (size == "full") models.insert(models.end(), {"llama-3.2-1b", "qwen2.5-1.5b"});
  std::vector<std::string> out;
  for (const auto& model : models)
    for (const auto& l : model_shapes(model).linear) {
      std::string spec = fmt::format("pruned:rows={},cols={},density=0.5,seed=1", l.out, l.in);
      if (std::find(out.begin(), out.end(), spec) == out.end()) out.push_back(std::move(spec));
    }
  return out;
}

}  // namespace dbsparse::tools

#pragma once
// The matrices tools run on by default: generated ones that cover the domains, plus the real
// matrices in ../shared/matrices (or $DBSPARSE_MATRICES) when that folder exists.
#include <string>
#include <vector>

namespace dbsparse::tools {

// The .mtx / .mtx.gz files in $DBSPARSE_MATRICES, else in the checkout's ../shared/matrices.
// Empty when neither exists.
std::vector<std::string> shared_matrix_files();

// A bare name ("add32", "add32.mtx") that is neither a file nor a generator string becomes that
// matrix's path among shared_matrix_files(); anything else comes back unchanged.
std::string resolve_shared_name(const std::string& spec);

// Generator strings. "full": the cuSPARSE anchor matrices (5M-110M nonzeros). "quick": the
// same shapes at a few million nonzeros at most.
std::vector<std::string> generated_suite(const std::string& size);

// Generator strings for SpMSpV: 7- and 27-point stencils, FEM-like blocks, banded, RMAT, uniform
// and power-law. "full": 7M-29M nonzeros each; "quick": the same kinds at 0.9M-1.9M.
std::vector<std::string> spmspv_suite(const std::string& size);

// Generator strings for SpGEMM (A²): a road network, a web-like power-law graph, a 27-point
// stencil, R-MAT and uniform rows. "full": the hash SpGEMM article's sizes (roadNet-TX's 1.39M vertices, 1M
// power-law vertices with rows up to 5000, 5M stencil rows, R-MAT scale 18, 1M uniform rows);
// "quick": the same kinds at 16K-100K rows.
std::vector<std::string> spgemm_suite(const std::string& size);

// Generator strings for SpMM, in two sets. "graphs": >99% sparse graphs of 20K-2M rows,
// the GNN inputs (power-law, R-MAT, uniform random, community-structured); "moderate": 50-90%
// sparse pruned weight matrices (pruned:, per row and in 4x4 and 16x16 blocks); "all": both;
// "gnn" (not in "all"): graphs at the sizes and mean degrees of GNN datasets (PubMed, Amazon
// Computers, Coauthor Physics, Flickr, ogbn-arxiv; full adds Yelp and Reddit), for BRP (issue 63).
// "quick": graphs of 20K-200K rows and 4096 x 4096 weights; "full": graphs up to 2M rows and
// weights up to 11008 x 4096. UsageError naming the accepted values otherwise.
std::vector<std::string> spmm_suite(const std::string& size, const std::string& set = "all");
inline const std::vector<std::string> kSpmmSuiteSets = {"graphs", "moderate", "gnn"};

// Generator strings dbtune tunes decode on: the distinct linear-layer shapes (out x in) of
// Llama-3.1-8B ("quick"), plus Llama-3.2-1B's and Qwen2.5-1.5B's ("full"), each a normal(0, 1)
// matrix with half of each row's weights kept by magnitude.
std::vector<std::string> decode_suite(const std::string& size);

}  // namespace dbsparse::tools

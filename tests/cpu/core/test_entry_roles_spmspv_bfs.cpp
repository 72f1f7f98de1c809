// SpMSpV, BFS and CSR-view kernels declare their entry points by role; the name expressions (part
// of the kernel cache key) are the ones the plans used before roles existed, in the same order.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "codegen/keys/bfs_key.hpp"
#include "codegen/keys/csr_view_key.hpp"
#include "codegen/keys/spmspv_key.hpp"

using namespace dbsparse::codegen;

TEST_CASE("spmspv entry roles and name expressions") {
  for (auto v : {ValueType::F32, ValueType::F64}) {
    const std::string t = v == ValueType::F32 ? "float" : "double";
    SpmspvKey key;
    key.value = v;
    const auto ks = make_source(key);
    CHECK(ks.entry_names == std::vector<std::string>{"prep", "compute", "scatter", "unscatter", "fused", "sparse_prep",
                                                     "sparse_finish", "sparse_tiny"});
    CHECK(ks.name_expressions ==
          std::vector<std::string>{"dbs::spmspv_prep<" + t + ">", "dbs::spmspv_compute<" + t + ">",
                                   "dbs::spmspv_scatter<" + t + ">", "dbs::spmspv_unscatter<" + t + ">",
                                   "dbs::spmspv_fused<" + t + ">", "dbs::spmspv_sparse_prep<" + t + ">",
                                   "dbs::spmspv_sparse_finish<" + t + ">", "dbs::spmspv_sparse_tiny<" + t + ">"});
  }
}

TEST_CASE("bfs entry roles and name expressions") {
  const auto w8 = make_source(BfsKey{Direction::Auto, Semiring::OrAnd, 8, false});
  CHECK(w8.entry_names == std::vector<std::string>{"search", "dense_update"});
  CHECK(w8.name_expressions == std::vector<std::string>{"dbs::bfs_search<8>", "dbs::bfs_dense_update<8>"});
  const auto o64 = make_source(BfsKey{Direction::Pull, Semiring::OrAnd, 32, true});
  CHECK(o64.entry_names == std::vector<std::string>{"search", "dense_update", "check_view"});
  CHECK(o64.name_expressions ==
        std::vector<std::string>{"dbs::bfs_search<32>", "dbs::bfs_dense_update<32>", "dbs::bfs_check_view<long long>"});
}

TEST_CASE("csr_view entry roles and name expressions") {
  const auto o32 = make_source(CsrViewKey{false});
  CHECK(o32.entry_names == std::vector<std::string>{"check", "length_histogram", "degree_scatter"});
  CHECK(o32.name_expressions == std::vector<std::string>{"dbs::csr_check<int>", "dbs::csr_length_histogram<int>",
                                                         "dbs::csr_degree_scatter<int>"});
  const auto o64 = make_source(CsrViewKey{true});
  CHECK(o64.name_expressions == std::vector<std::string>{"dbs::csr_check<long long>",
                                                         "dbs::csr_length_histogram<long long>",
                                                         "dbs::csr_degree_scatter<long long>"});
}

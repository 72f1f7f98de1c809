#include "codegen/keys/sparse_linear_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

std::string SparseLinearKey::to_string() const {
  return fmt::format("sparse_linear.sparsify.{}.b{}", codegen::to_string(value), block);
}

SparseLinearKey SparseLinearKey::parse(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return UsageError(
        fmt::format("bad sparse_linear kernel key '{}': {} (form: sparse_linear.sparsify.f32.b256)", text, why));
  };
  auto p = split_key(text, '.');
  if (p.size() != 4 || p[0] != "sparse_linear" || p[1] != "sparsify")
    throw bad("expected sparse_linear.sparsify.<type>.b<block>");
  SparseLinearKey k;
  if (p[2] == "f32")
    k.value = ValueType::F32;
  else if (p[2] == "f64")
    k.value = ValueType::F64;
  else
    throw bad(fmt::format("unknown value type '{}'", p[2]));
  if (p[3] != "b256") throw bad("block must be b256");
  return k;
}

KernelSource make_source(const SparseLinearKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"sparse_linear.cuh\"\n", ks.key);
  ks.options = {"-std=c++17"};
  const char* t = cuda_type(key.value);
  ks.add_entry("sparsify", fmt::format("dbs::sparsify_threshold<{}, {}>", t, key.block));
  return ks;
}

std::vector<SparseLinearKey> sparse_linear_search_space() {
  return {SparseLinearKey{ValueType::F32, 256}, SparseLinearKey{ValueType::F64, 256}};
}

}  // namespace dbsparse::codegen

#include "codegen/keys/sparse_linear_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(
      fmt::format("bad sparse_linear kernel key '{}': {} (form: sparse_linear.sparsify.f32.b256)", text, why));
}

// The block is fixed: b256 is the one text parse takes.
const KeyText<SparseLinearKey>& sparse_linear_text() {
  using K = SparseLinearKey;
  static const KeyText<K> t(
      {
          word("sparse_linear"),
          word("sparsify"),
          choice("value type", &K::value, {ValueType::F32, ValueType::F64}),
          choice("block", &K::block, {256}, [](int b) { return fmt::format("b{}", b); }),
      },
      bad);
  return t;
}

}  // namespace

std::string SparseLinearKey::to_string() const { return sparse_linear_text().print(*this); }

SparseLinearKey SparseLinearKey::parse(std::string_view text) { return sparse_linear_text().parse(text); }

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

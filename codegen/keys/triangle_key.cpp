#include "codegen/keys/triangle_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

namespace {

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad triangles key '{}': {} (form: triangles.b256)", text, why));
}

const KeyText<TriangleKey>& triangle_text() {
  using K = TriangleKey;
  static const KeyText<K> t(
      {
          word("triangles"),
          number("block", 'b', &K::block).allow(block_threads()),
      },
      bad);
  return t;
}

}  // namespace

std::string TriangleKey::to_string() const { return triangle_text().print(*this); }

TriangleKey TriangleKey::parse(std::string_view text) { return triangle_text().parse(text); }

KernelSource make_source(const TriangleKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"triangles.cuh\"\n", ks.key);
  ks.options = {"-std=c++17"};
  ks.add_entry("count", fmt::format("dbs::tri_count<{}>", key.block));
  ks.add_entry("mask_sum_f32", fmt::format("dbs::tri_mask_sum<float, {}>", key.block));
  ks.add_entry("mask_sum_f64", fmt::format("dbs::tri_mask_sum<double, {}>", key.block));
  return ks;
}

std::vector<TriangleKey> triangle_search_space() { return {TriangleKey{256}, TriangleKey{128}, TriangleKey{512}}; }

}  // namespace dbsparse::codegen

#include "codegen/keys/triangle_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

std::string TriangleKey::to_string() const { return fmt::format("triangles.b{}", block); }

TriangleKey TriangleKey::parse(std::string_view text) {
  const auto p = split_key(text, '.');
  auto fail = [&](const std::string& why) {
    throw UsageError(fmt::format("bad triangles key '{}': {} (form: triangles.b256)", text, why));
  };
  if (p.size() != 2 || p[0] != "triangles") fail("expected triangles.b<threads>");
  TriangleKey k;
  k.block = number_after(p[1], 'b');
  if (k.block < 32 || k.block > 1024 || k.block % 32 != 0)
    fail(fmt::format("block '{}' is not b<a multiple of 32 in [32, 1024]>", p[1]));
  return k;
}

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

#include "codegen/keys/bfs_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/abi/bfs.h"

namespace dbsparse::codegen {
namespace {

[[noreturn]] void bad_key(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad bfs kernel key '{}': {} (form: bfs.auto.or_and.w8, optionally .o64)", text, why));
}

}  // namespace

namespace {

const KeyText<BfsKey>& bfs_text() {
  using K = BfsKey;
  static const KeyText<K> t(
      {
          word("bfs"),
          choice("direction", &K::direction, {Direction::Auto, Direction::Push, Direction::Pull}),
          choice("semiring", &K::semiring, {Semiring::OrAnd}),
          choice("warps", &K::warps, {8, 32}, [](int w) { return fmt::format("w{}", w); }),
          flag("o64", &K::offsets64, true),
      },
      bad_key);
  return t;
}

}  // namespace

std::string BfsKey::to_string() const { return bfs_text().print(*this); }

BfsKey BfsKey::parse(std::string_view text) { return bfs_text().parse(text); }

KernelSource make_source(const BfsKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  std::string src = fmt::format("// dbsparse generated kernel: {}\n", ks.key);
  src += fmt::format("#define DBS_BFS_DIR {}\n", static_cast<int>(key.direction));
  if (key.offsets64) src += "#define DBS_BFS_O64 1\n";
  src += "#include \"bfs.cuh\"\n";
  ks.source = std::move(src);
  ks.options = {"-std=c++17"};
  ks.add_entry("search", fmt::format("dbs::bfs_search<{}>", key.warps));
  ks.add_entry("dense_update", fmt::format("dbs::bfs_dense_update<{}>", key.warps));
  if (key.offsets64) ks.add_entry("check_view", "dbs::bfs_check_view<long long>");
  return ks;
}

std::vector<BfsKey> bfs_search_space() {
  std::vector<BfsKey> out;
  for (bool o64 : {false, true})
    for (int w : {8, 32})
      for (auto d : {Direction::Auto, Direction::Push, Direction::Pull})
        out.push_back(BfsKey{d, Semiring::OrAnd, w, o64});
  return out;
}

}  // namespace dbsparse::codegen

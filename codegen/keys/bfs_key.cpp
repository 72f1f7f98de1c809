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

std::string BfsKey::to_string() const {
  return fmt::format("bfs.{}.{}.w{}{}", codegen::to_string(direction), dbsparse::to_string(semiring), warps,
                     offsets64 ? ".o64" : "");
}

BfsKey BfsKey::parse(std::string_view text) {
  auto p = split_key(text, '.');
  if (p.size() != 4 && p.size() != 5) bad_key(text, "expected 4 or 5 dot-separated parts");
  if (p[0] != "bfs") bad_key(text, "op must be 'bfs'");
  BfsKey k;
  if (p[1] == "auto")
    k.direction = Direction::Auto;
  else if (p[1] == "push")
    k.direction = Direction::Push;
  else if (p[1] == "pull")
    k.direction = Direction::Pull;
  else
    bad_key(text, fmt::format("unknown direction '{}'", p[1]));
  if (p[2] != "or_and") bad_key(text, fmt::format("semiring must be or_and, got '{}'", p[2]));
  k.semiring = Semiring::OrAnd;
  if (p[3] == "w8")
    k.warps = 8;
  else if (p[3] == "w32")
    k.warps = 32;
  else
    bad_key(text, fmt::format("warps part must be w8 or w32, got '{}'", p[3]));
  if (p.size() == 5) {
    if (p[4] != "o64") bad_key(text, fmt::format("the last part must be o64 (64-bit row offsets), got '{}'", p[4]));
    k.offsets64 = true;
  }
  return k;
}

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

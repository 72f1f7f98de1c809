#include "codegen/keys/spmspv_key.hpp"

#include <fmt/format.h>

#include "codegen/keys/key_text.hpp"
#include "dbsparse/abi/spmspv.h"

namespace dbsparse::codegen {
namespace {

constexpr int kTypes = abi::kBlockTypeCount;
constexpr const char* kTypeNames[kTypes] = {"coo", "dense", "csr", "csc"};
constexpr const char* kTypeMacros[kTypes] = {"DBS_HAS_COO", "DBS_HAS_DENSE", "DBS_HAS_CSR", "DBS_HAS_CSC"};
// The device functor of each semiring (templates/spmspv/spmspv_blocks.cuh), by dbsparse::Semiring.
const char* semiring_functor(Semiring s) {
  switch (s) {
    case Semiring::PlusTimes:
      return "PlusTimes";
    case Semiring::OrAnd:
      break;  // BFS's own kernels (codegen/keys/bfs_key.cpp); parse refuses it here
  }
  return "?";
}

[[noreturn]] void bad_key(std::string_view text, const std::string& why) {
  throw UsageError(
      fmt::format("bad spmspv kernel key '{}': {} (form: "
                  "spmspv.auto.f32.plus_times.bs16.t=coo+dense+csr)",
                  text, why));
}

}  // namespace

const char* to_string(Direction d) {
  switch (d) {
    case Direction::Auto:
      return "auto";
    case Direction::Push:
      return "push";
    case Direction::Pull:
      return "pull";
  }
  return "?";
}

namespace {

void check(const SpmspvKey& k, std::string_view text) {
  if (k.semiring != Semiring::PlusTimes) bad_key(text, "spmspv kernels are plus_times; or_and is bfs.* (plan_bfs)");
}

const KeyText<SpmspvKey>& spmspv_text() {
  using K = SpmspvKey;
  static const KeyText<K> t(
      {
          word("spmspv"),
          choice("direction", &K::direction, {Direction::Auto, Direction::Push, Direction::Pull}),
          choice("value type", &K::value, {ValueType::F32, ValueType::F64}),
          choice("semiring", &K::semiring, {Semiring::PlusTimes, Semiring::OrAnd}),
          word("bs16"),
          bit_set("block type", "t=", &K::types, {kTypeNames, kTypeNames + kTypes}),
          flag("coo=warp", &K::pull_coo, PullCoo::Warp),
      },
      bad_key, check);
  return t;
}

}  // namespace

std::string SpmspvKey::to_string() const { return spmspv_text().print(*this); }

SpmspvKey SpmspvKey::parse(std::string_view text) { return spmspv_text().parse(text); }

KernelSource make_source(const SpmspvKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  const char* t = cuda_type(key.value);
  // Only macros the templates read; the value type is a template argument (name expressions).
  std::string src = fmt::format("// dbsparse generated kernel: {}\n", ks.key);
  src += fmt::format("#define DBS_DIR {}\n", static_cast<int>(key.direction));
  src += fmt::format("#define DBS_SEMIRING {}\n", semiring_functor(key.semiring));
  for (int i = 0; i < kTypes; ++i) src += fmt::format("#define {} {}\n", kTypeMacros[i], (key.types >> i) & 1u);
  src += fmt::format("#define DBS_PULL_COO_WARP {}\n", key.pull_coo == PullCoo::Warp ? 1 : 0);
  src += "#include \"spmspv.cuh\"\n";
  ks.source = std::move(src);
  ks.options = {"-std=c++17"};
  for (const char* role :
       {"prep", "compute", "scatter", "unscatter", "fused", "sparse_prep", "sparse_finish", "sparse_tiny"})
    ks.add_entry(role, fmt::format("dbs::spmspv_{}<{}>", role, t));
  return ks;
}

std::vector<SpmspvKey> spmspv_search_space(bool include_opt_in) {
  std::vector<SpmspvKey> out;
  for (auto d : {Direction::Auto, Direction::Push, Direction::Pull})
    for (auto v : {ValueType::F32, ValueType::F64})
      for (unsigned t = 0; t < (1u << kTypes); ++t)
        out.push_back(SpmspvKey{d, v, Semiring::PlusTimes, static_cast<uint8_t>(t)});
  if (!include_opt_in) return out;
  // The warp-wide COO walk (opt-in, pull side only): the variants that have COO blocks.
  for (auto d : {Direction::Auto, Direction::Pull})
    for (auto v : {ValueType::F32, ValueType::F64})
      for (unsigned t = 1; t < (1u << kTypes); t += 2)
        out.push_back(SpmspvKey{d, v, Semiring::PlusTimes, static_cast<uint8_t>(t), PullCoo::Warp});
  return out;
}

}  // namespace dbsparse::codegen

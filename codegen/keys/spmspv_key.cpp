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

std::string SpmspvKey::to_string() const {
  std::string t;
  for (int i = 0; i < kTypes; ++i)
    if (types & (1u << i)) {
      // Appended piece by piece: `"+" + std::string(...)` set off GCC 12's -Wrestrict (a false positive).
      if (!t.empty()) t += '+';
      t += kTypeNames[i];
    }
  return fmt::format("spmspv.{}.{}.{}.bs16.t={}{}", codegen::to_string(direction), codegen::to_string(value),
                     codegen::to_string(semiring), t.empty() ? "none" : t,
                     pull_coo == PullCoo::Warp ? ".coo=warp" : "");
}

SpmspvKey SpmspvKey::parse(std::string_view text) {
  auto p = split_key(text, '.');
  if (p.size() != 6 && p.size() != 7) bad_key(text, "expected 6 dot-separated parts (7 with .coo=warp)");
  if (p[0] != "spmspv") bad_key(text, "op must be 'spmspv'");
  SpmspvKey k;
  if (p[1] == "auto")
    k.direction = Direction::Auto;
  else if (p[1] == "push")
    k.direction = Direction::Push;
  else if (p[1] == "pull")
    k.direction = Direction::Pull;
  else
    bad_key(text, fmt::format("unknown direction '{}'", p[1]));
  if (p[2] == "f32")
    k.value = ValueType::F32;
  else if (p[2] == "f64")
    k.value = ValueType::F64;
  else
    bad_key(text, fmt::format("unknown value type '{}'", p[2]));
  try {
    k.semiring = dbsparse::semiring_from_string(p[3]);
  } catch (const UsageError&) {
    bad_key(text, fmt::format("unknown semiring '{}'", p[3]));
  }
  if (k.semiring != Semiring::PlusTimes) bad_key(text, "spmspv kernels are plus_times; or_and is bfs.* (plan_bfs)");
  if (p[4] != "bs16") bad_key(text, "block size must be bs16");
  if (!p[5].starts_with("t=")) bad_key(text, "types part must be t=<type>+<type>... or t=none");
  k.types = 0;
  auto list = p[5].substr(2);
  if (list != "none") {
    int last = -1;
    for (auto name : split_key(list, '+')) {
      int found = -1;
      for (int i = 0; i < kTypes; ++i)
        if (name == kTypeNames[i]) found = i;
      if (found < 0) bad_key(text, fmt::format("unknown block type '{}'", name));
      if (found <= last) bad_key(text, "block types must be listed once, in the order coo+dense+csr+csc");
      last = found;
      k.types |= static_cast<uint8_t>(1u << found);
    }
  }
  if (p.size() == 7) {
    if (p[6] != "coo=warp") bad_key(text, fmt::format("unknown part '{}' (the only optional part is coo=warp)", p[6]));
    k.pull_coo = PullCoo::Warp;
  }
  return k;
}

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

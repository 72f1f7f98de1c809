#include "codegen/spmv_key.hpp"

#include <charconv>

#include <fmt/format.h>

#include "codegen/key_text.hpp"

namespace dbsparse::codegen {
namespace {


[[noreturn]] void bad_key(std::string_view text, const std::string& why) {
  throw UsageError(fmt::format("bad spmv kernel key '{}': {} (form: spmv.scalar.f32.b256)", text, why));
}

}  // namespace

const char* to_string(SpmvStrategy s) {
  switch (s) {
    case SpmvStrategy::Scalar: return "scalar";
  }
  return "?";
}

std::string SpmvKey::to_string() const {
  return fmt::format("spmv.{}.{}.b{}", codegen::to_string(strategy), codegen::to_string(value),
                     block_size);
}

SpmvKey SpmvKey::parse(std::string_view text) {
  auto parts = split_key(text, '.');
  if (parts.size() != 4) bad_key(text, "expected 4 dot-separated parts");
  if (parts[0] != "spmv") bad_key(text, "op must be 'spmv'");
  SpmvKey k;
  if (parts[1] == "scalar") k.strategy = SpmvStrategy::Scalar;
  else bad_key(text, fmt::format("unknown strategy '{}'", parts[1]));
  if (parts[2] == "f32") k.value = ValueType::F32;
  else if (parts[2] == "f64") k.value = ValueType::F64;
  else bad_key(text, fmt::format("unknown value type '{}'", parts[2]));
  auto b = parts[3];
  if (b.size() < 2 || b[0] != 'b') bad_key(text, "block part must be b<threads>");
  auto [p, ec] = std::from_chars(b.data() + 1, b.data() + b.size(), k.block_size);
  if (ec != std::errc() || p != b.data() + b.size()) bad_key(text, "block size is not a number");
  if (k.block_size < 32 || k.block_size > 1024 || k.block_size % 32 != 0)
    bad_key(text, "block size must be a multiple of 32 in [32, 1024]");
  return k;
}

KernelSource make_source(const SpmvKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  const char* t = cuda_type(key.value);
  // Key -> macros -> kernel (the GraphBLAS JIT's shape): the macros document the variant inside
  // the dumped source, and later templates switch code paths on them.
  ks.source = fmt::format(
      "// dbsparse generated kernel: {key}\n"
      "#define DBS_KEY \"{key}\"\n"
      "#define DBS_VALUE_T {t}\n"
      "#define DBS_BLOCK {b}\n"
      "#include \"spmv_csr_scalar.cuh\"\n",
      fmt::arg("key", ks.key), fmt::arg("t", t), fmt::arg("b", key.block_size));
  ks.options = {"-std=c++17"};
  ks.name_expressions = {fmt::format("dbs::spmv_csr_scalar<{}, {}>", t, key.block_size)};
  return ks;
}

std::vector<SpmvKey> spmv_search_space() {
  std::vector<SpmvKey> out;
  for (auto v : {ValueType::F32, ValueType::F64})
    for (int b : {128, 256, 512}) out.push_back(SpmvKey{v, SpmvStrategy::Scalar, b});
  return out;
}

}  // namespace dbsparse::codegen

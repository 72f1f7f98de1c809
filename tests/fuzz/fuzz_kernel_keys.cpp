// libFuzzer: kernel-key text (a kernel cache file's name, `dbsparse precompile` output, a tuning
// row's key). Every input is a key of each family or a UsageError; a key's text parses back to the
// same key (the text is its identity: the cache and the tuning DB index by it).
#include <cstdint>
#include <string>
#include <string_view>

#include "codegen/keys/bfs_key.hpp"
#include "codegen/keys/brp_convert_key.hpp"
#include "codegen/keys/csr_view_key.hpp"
#include "codegen/keys/decode_key.hpp"
#include "codegen/keys/mcl_key.hpp"
#include "codegen/keys/sddmm_key.hpp"
#include "codegen/keys/sparse_linear_key.hpp"
#include "codegen/keys/spgemm_key.hpp"
#include "codegen/keys/spmm_key.hpp"
#include "codegen/keys/spmspv_key.hpp"
#include "codegen/keys/spmv_key.hpp"
#include "codegen/keys/triangle_key.hpp"
#include "dbsparse/error.hpp"

namespace {

template <class Key>
void one(std::string_view text) {
  try {
    const Key k = Key::parse(text);
    const std::string canonical = k.to_string();
    if (!(Key::parse(canonical) == k)) __builtin_trap();
    (void)dbsparse::codegen::make_source(k);  // a parsed key always has a source
  } catch (const dbsparse::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dbsparse::codegen;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  one<BfsKey>(text);
  one<BrpConvertKey>(text);
  one<CsrViewKey>(text);
  one<DecodeKey>(text);
  one<MclKey>(text);
  one<SddmmKey>(text);
  one<SparseLinearKey>(text);
  one<SpgemmKey>(text);
  one<SpgemmAnalysisKey>(text);
  one<SpmmKey>(text);
  one<SpmspvKey>(text);
  one<SpmvKey>(text);
  one<TriangleKey>(text);
  return 0;
}

// libFuzzer: kernel cache entries (codegen/kernel_cache_entry.cpp). Every input decodes to a kernel
// or to a reason; an entry that decodes re-encodes to the same bytes. The same input as a deflated
// AOT entry (decode_aot_entry), its inflated size capped as the cache caps it.
#include <cstdint>
#include <span>
#include <string>

#include "codegen/kernel_cache.hpp"
#include "dbsparse/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dbsparse::codegen;
  const std::span<const char> bytes(reinterpret_cast<const char*>(data), size);
  const char* why = nullptr;
  try {
    auto k = decode_cache_entry(bytes, "k", &why);
    if (k) {
      const std::string again = encode_cache_entry("k", *k);
      (void)again;
    }
    auto a = decode_aot_entry(bytes, "k", uint64_t{1} << 24, &why);
    if (a) (void)encode_aot_entry("k", *a);
  } catch (const dbsparse::Error&) {
  }
  return 0;
}

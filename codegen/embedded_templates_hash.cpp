#include "codegen/embedded_templates.hpp"
#include "codegen/kernel_source.hpp"
#include "support/hash.hpp"

namespace dbsparse::codegen {

const std::string& templates_hash() {
  static const std::string h = [] {
    Fnv1a64 f;
    for (const auto& t : embedded_templates()) {
      f.add(t.name).add("\0", 1).add(t.source).add("\0", 1);
    }
    return f.hex();
  }();
  return h;
}

std::string join_options(const std::vector<std::string>& options) {
  std::string out;
  for (const auto& o : options) {
    if (!out.empty()) out += ' ';
    out += o;
  }
  return out;
}

}  // namespace dbsparse::codegen

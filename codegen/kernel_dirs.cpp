// Where the kernel cache looks for ahead-of-time (AOT) kernels (KernelCache::default_aot_dirs).
// DBSPARSE_AOT_INSTALL_DIR is set on this file alone by CMake (the install prefix's
// share/dbsparse/kernels), so that a change of prefix rebuilds one file.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "codegen/kernel_cache.hpp"

#ifndef DBSPARSE_AOT_INSTALL_DIR
#define DBSPARSE_AOT_INSTALL_DIR ""
#endif

namespace dbsparse::codegen {
namespace fs = std::filesystem;
namespace {

// <prefix>/share/dbsparse/kernels for a binary at <prefix>/<bin or lib>/<file>, where it exists.
void add_beside(const fs::path& binary, std::vector<std::string>& out) {
  std::error_code ec;
  if (binary.empty()) return;
  const fs::path dir = fs::weakly_canonical(binary.parent_path() / ".." / "share" / "dbsparse" / "kernels", ec);
  if (!ec && fs::is_directory(dir, ec)) out.push_back(dir.string());
}

// The module holding this code: the executable for a static link, else the shared object
// (a Python extension, say).
fs::path this_module() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&add_beside), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  fs::path p = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path() : p;
}

}  // namespace

bool KernelCache::aot_disabled() {
  const char* v = std::getenv("DBSPARSE_AOT_DIR");
  return v && std::string(v) == "off";
}

std::vector<std::string> KernelCache::default_aot_dirs() {
  std::vector<std::string> out;
  if (aot_disabled()) return out;
  if (const char* v = std::getenv("DBSPARSE_AOT_DIR"); v && *v) {
    std::string list = v;
    for (size_t at = 0; at <= list.size();) {
      size_t end = list.find(':', at);
      if (end == std::string::npos) end = list.size();
      if (end > at) out.push_back(list.substr(at, end - at));
      at = end + 1;
    }
  }
  std::error_code ec;
  add_beside(fs::read_symlink("/proc/self/exe", ec), out);
  add_beside(this_module(), out);
  const fs::path installed = DBSPARSE_AOT_INSTALL_DIR;
  if (!installed.empty() && fs::is_directory(installed, ec)) out.push_back(installed.string());
  // One entry per folder, first place kept: the two binaries and the prefix often agree.
  std::vector<std::string> unique;
  for (const auto& d : out)
    if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(d);
  return unique;
}

}  // namespace dbsparse::codegen

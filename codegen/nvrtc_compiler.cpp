#include "codegen/nvrtc_compiler.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "codegen/embedded_templates.hpp"
#include "dbsparse/error.hpp"

namespace dbsparse::codegen {
namespace {

// One list, laid out by hand: clang-format 14 reflows a list of macro calls differently each pass.
// clang-format off
#define DBS_NVRTC_FUNCTIONS(X)                                                                   \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)            \
  X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize)    \
  X(nvrtcGetCUBIN) X(nvrtcAddNameExpression) X(nvrtcGetLoweredName) X(nvrtcGetNumSupportedArchs) \
  X(nvrtcGetSupportedArchs)
// clang-format on

struct NvrtcApi {
#define DBS_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  DBS_NVRTC_FUNCTIONS(DBS_NVRTC_MEMBER)
#undef DBS_NVRTC_MEMBER
  std::string error;
};

NvrtcApi load() {
  NvrtcApi api;
  void* lib = nullptr;
  std::string tried;
  // The soname first (what an installed toolkit registers), then the toolkit's own folder.
  static_assert(kNvrtcSonameMajor == 13, "the sonames below name NVRTC's major");
  for (const char* name : {"libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13", "libnvrtc.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    tried += tried.empty() ? name : std::string(", ") + name;
  }
  if (!lib) {
    api.error = "NVRTC not found (tried " + tried + ")";
    return api;
  }
#define DBS_NVRTC_RESOLVE(name)                                       \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name)); \
  if (!api.name) {                                                    \
    api.error = std::string("NVRTC lacks ") + #name;                  \
    return api;                                                       \
  }
  DBS_NVRTC_FUNCTIONS(DBS_NVRTC_RESOLVE)
#undef DBS_NVRTC_RESOLVE
  return api;
}

const NvrtcApi& api() {
  static const NvrtcApi a = load();
  if (!a.error.empty()) throw Error(a.error);
  return a;
}

void check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw Error(fmt::format("NVRTC call {} failed: {}", call, api().nvrtcGetErrorString(r)));
}

std::string dump_source(const KernelSource& ks) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::temp_directory_path(ec) / "dbsparse-failed-kernels";
  fs::create_directories(dir, ec);
  fs::path path = dir / (ks.key + ".cu");
  std::ofstream out(path);
  out << ks.source;
  return out ? path.string() : std::string("(could not write ") + path.string() + ")";
}

// Owns an nvrtcProgram so every exit path destroys it.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) api().nvrtcDestroyProgram(&p);
  }
};

}  // namespace

bool nvrtc_available(std::string* why) {
  try {
    api();
    return true;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return false;
  }
}

namespace {
std::pair<int, int> loaded_version() {
  int major = 0, minor = 0;
  check(api().nvrtcVersion(&major, &minor), "nvrtcVersion");
  return {major, minor};
}
}  // namespace

std::string nvrtc_version() {
  const auto [major, minor] = loaded_version();
  return fmt::format("{}.{}", major, minor);
}

bool nvrtc_is_soname_major() { return loaded_version().first == kNvrtcSonameMajor; }

std::vector<std::string> nvrtc_supported_archs() {
  int n = 0;
  check(api().nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(n);
  check(api().nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  std::vector<std::string> out;
  for (int a : archs) out.push_back(fmt::format("sm_{}", a));
  return out;
}

CompiledKernel compile_to_cubin(const KernelSource& ks, const std::string& arch) {
  const auto& nv = api();
  auto archs = nvrtc_supported_archs();
  if (std::find(archs.begin(), archs.end(), arch) == archs.end())
    throw UsageError(
        fmt::format("NVRTC {} cannot compile for '{}' (supported: {})", nvrtc_version(), arch, join_options(archs)));
  auto t0 = std::chrono::steady_clock::now();

  std::vector<const char*> header_names, header_sources;
  for (const auto& t : embedded_templates()) {
    header_names.push_back(t.name);
    header_sources.push_back(t.source);
  }
  Program prog;
  check(nv.nvrtcCreateProgram(&prog.p, ks.source.c_str(), (ks.key + ".cu").c_str(),
                              static_cast<int>(header_names.size()), header_sources.data(), header_names.data()),
        "nvrtcCreateProgram");
  for (const auto& e : ks.name_expressions)
    check(nv.nvrtcAddNameExpression(prog.p, e.c_str()), "nvrtcAddNameExpression");

  std::vector<std::string> opts = ks.options;
  opts.push_back("--gpu-architecture=" + arch);
  std::vector<const char*> copts;
  for (const auto& o : opts) copts.push_back(o.c_str());
  nvrtcResult r = nv.nvrtcCompileProgram(prog.p, static_cast<int>(copts.size()), copts.data());
  if (r != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nv.nvrtcGetProgramLogSize(prog.p, &log_size);
    std::string log(log_size, '\0');
    if (log_size) nv.nvrtcGetProgramLog(prog.p, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    throw CompileError(ks.key, join_options(opts), log, dump_source(ks));
  }

  CompiledKernel out;
  size_t log_size = 0;
  if (nv.nvrtcGetProgramLogSize(prog.p, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.assign(log_size, '\0');
    nv.nvrtcGetProgramLog(prog.p, out.log.data());
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  }
  size_t size = 0;
  check(nv.nvrtcGetCUBINSize(prog.p, &size), "nvrtcGetCUBINSize");
  out.cubin.resize(size);
  check(nv.nvrtcGetCUBIN(prog.p, out.cubin.data()), "nvrtcGetCUBIN");
  for (const auto& e : ks.name_expressions) {
    const char* lowered = nullptr;
    check(nv.nvrtcGetLoweredName(prog.p, e.c_str(), &lowered), "nvrtcGetLoweredName");
    out.lowered_names.emplace_back(e, lowered);
  }
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace dbsparse::codegen

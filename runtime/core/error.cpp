#include "dbsparse/error.hpp"

#include <fmt/format.h>

namespace dbsparse {

InputError::InputError(std::string file, long line, std::string expected)
    : Error(line > 0 ? fmt::format("{}:{}: expected {}", file, line, expected)
                     : fmt::format("{}: expected {}", file, expected)),
      file_(std::move(file)),
      line_(line),
      expected_(std::move(expected)) {}

CompileError::CompileError(std::string key, std::string options, std::string log,
                           std::string source_path)
    : Error(fmt::format("NVRTC failed to compile kernel '{}' (options: {}); source written to {}\n{}",
                        key, options, source_path, log)),
      key_(std::move(key)),
      options_(std::move(options)),
      log_(std::move(log)),
      source_path_(std::move(source_path)) {}

CudaError::CudaError(std::string call, int result, std::string result_name)
    : Error(fmt::format("CUDA driver call {} failed: {} ({})", call, result_name, result)),
      call_(std::move(call)),
      result_(result) {}

HostMemoryError::HostMemoryError(std::string what, double needed_bytes, double host_bytes)
    : Error(fmt::format("{} needs {:.1f} GB of host memory; this host has {:.1f} GB", what, needed_bytes / 1e9,
                        host_bytes / 1e9)),
      what_(std::move(what)),
      needed_(needed_bytes),
      host_(host_bytes) {}

}  // namespace dbsparse

// The error kinds' messages carry what a user needs to act (docs/DESIGN.md §8): DeviceOutOfMemory names
// what needed the memory, the bytes needed and free, and is still a CudaError with
// CUDA_ERROR_OUT_OF_MEMORY for code that catches that.
#include <doctest/doctest.h>

#include <string>

#include "dbsparse/error.hpp"

using namespace dbsparse;

TEST_CASE("DeviceOutOfMemoryNamesWhatAndTheSizes") {
  const DeviceOutOfMemory e("plan_spmv of a 1000 x 1000 matrix with 5000 nonzeros (A, at least)", 64004, 1000,
                            150000000000LL);
  const std::string w = e.what();
  CHECK(w.find("device out of memory") == 0);
  CHECK(w.find("plan_spmv of a 1000 x 1000 matrix") != std::string::npos);
  CHECK(w.find("64004 bytes") != std::string::npos);
  CHECK(w.find("1000 bytes") != std::string::npos);
  CHECK(w.find("150.00 GB") != std::string::npos);
  CHECK(e.needed_bytes() == 64004);
  CHECK(e.free_bytes() == 1000);
  CHECK(e.result() == 2);  // CUDA_ERROR_OUT_OF_MEMORY
  const CudaError& as_cuda = e;
  CHECK(as_cuda.call() == e.what_needs());
  // A refusal with no size (a launch or a library call): said so, not "needs 0 bytes".
  const DeviceOutOfMemory unsized("cuLaunchKernel", 0, 10, 20);
  CHECK(std::string(unsized.what()).find("was refused memory") != std::string::npos);
  CHECK(std::string(unsized.what()).find("needs 0") == std::string::npos);
}

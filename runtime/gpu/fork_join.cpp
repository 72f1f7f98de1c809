#include "runtime/gpu/fork_join.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "dbsparse/context.hpp"
#include "runtime/gpu/cuda_driver.hpp"

namespace dbsparse::detail {

ForkJoin::ForkJoin(const Context& ctx) {
  ctx.make_current();
  DBS_CU(cuEventCreate(&start_, CU_EVENT_DISABLE_TIMING));
  for (int i = 0; i < kMaxBranches; ++i) {
    DBS_CU(cuStreamCreate(&streams_[i], CU_STREAM_NON_BLOCKING));
    DBS_CU(cuEventCreate(&done_[i], CU_EVENT_DISABLE_TIMING));
  }
}

ForkJoin::~ForkJoin() {
  const auto& d = cuda::driver();
  for (int i = 0; i < kMaxBranches; ++i) {
    if (streams_[i]) d.cuStreamDestroy(streams_[i]);
    if (done_[i]) d.cuEventDestroy(done_[i]);
  }
  if (start_) d.cuEventDestroy(start_);
}

ForkJoin::Fork::Fork(ForkJoin& fj, CUstream h, int n) : fj_(fj), h_(h), n_(n) {
  if (n > kMaxBranches) throw std::logic_error(fmt::format("ForkJoin: {} branches, at most {}", n, kMaxBranches));
  if (n <= 1) return;
  lock_ = std::unique_lock<std::mutex>(fj.mutex_);
  DBS_CU(cuEventRecord(fj.start_, h));
  for (int i = 0; i < n; ++i) DBS_CU(cuStreamWaitEvent(fj.streams_[i], fj.start_, 0));
}

void ForkJoin::Fork::join() {
  if (n_ <= 1) return;
  const int n = n_;
  n_ = 0;  // joined (or failed to): branch() is h from here on
  for (int i = 0; i < n; ++i) {
    DBS_CU(cuEventRecord(fj_.done_[i], fj_.streams_[i]));
    DBS_CU(cuStreamWaitEvent(h_, fj_.done_[i], 0));
  }
  lock_ = {};
}

ForkJoin::Fork::~Fork() {
  try {
    join();
  } catch (...) {  // a launch failed already, and its error is on its way up
  }
}

}  // namespace dbsparse::detail

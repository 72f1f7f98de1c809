// Independent launches of one run on side streams that start after the work queued on the
// caller's stream and that the caller's stream waits for again: a fork and a join by events, which
// stream capture records as graph edges. Why: SpGEMM's row groups are independent, and a group of
// a few long rows on its own stream runs beside the others instead of after them
// (docs/decisions/spgemm-fork-join.md).
//
// One per Context (Context::fork_join), made on first use: creating the streams per plan cost
// every fresh product (and every MCL iteration) their set-up. Plans of one context share them, so
// two plans forking on different user streams at once may wait on each other's branches: correct,
// only less concurrent.
#pragma once

#include <cuda.h>

#include <array>
#include <mutex>

namespace dbsparse {
class Context;
}

namespace dbsparse::detail {

class ForkJoin {
 public:
  static constexpr int kMaxBranches = 4;
  explicit ForkJoin(const Context& ctx);  // non-blocking streams and events without timing
  ~ForkJoin();
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;

  // Branches 0..n-1 start after what is queued on h at construction; h waits for all of them at
  // join() or at the end of the scope. n <= 1 forks nothing: branch(0) is h. Holds the ForkJoin's
  // lock until joined, so threads sharing a context do not interleave their events.
  class Fork {
   public:
    Fork(ForkJoin& fj, CUstream h, int n);
    ~Fork();
    Fork(const Fork&) = delete;
    Fork& operator=(const Fork&) = delete;
    CUstream branch(int i) const { return n_ <= 1 ? h_ : fj_.streams_[i]; }
    void join();

   private:
    ForkJoin& fj_;
    std::unique_lock<std::mutex> lock_;
    CUstream h_;
    int n_;
  };

 private:
  std::mutex mutex_;
  std::array<CUstream, kMaxBranches> streams_{};
  std::array<CUevent, kMaxBranches> done_{};
  CUevent start_ = nullptr;
};

}  // namespace dbsparse::detail

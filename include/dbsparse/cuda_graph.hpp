#pragma once
// Work captured from a stream into one CUDA graph and replayed at the cost of one launch: where a call's work is small, its launches are its cost, and a replay issues a plan's chain
// of kernels (or several plans', several ops') at once.
//
// Every plan's run() makes no allocation, no NVRTC call and no host synchronisation, so its calls
// can be captured, side streams included (SpGEMM's groups fork onto the context's side streams;
// capture records that as graph edges). A replay reads and writes the buffers the calls were given
// during the capture: change inputs in place between replays, never reallocate them. Users' own
// stream capture (cudaStreamBeginCapture around plan.run) works the same way; this class is the
// same thing without the CUDA runtime.
#include <cstddef>
#include <functional>

#include "dbsparse/context.hpp"

namespace dbsparse {

class CudaGraph {
 public:
  // Captures what enqueue() puts on `stream` (thread-local capture mode: other threads' work is
  // not captured) and instantiates it. If enqueue throws, the capture is ended and discarded, the
  // stream stays usable, and the exception propagates.
  static CudaGraph capture(void* stream, const std::function<void()>& enqueue);
  static CudaGraph capture(const Stream& stream, const std::function<void()>& enqueue);

  CudaGraph() = default;
  ~CudaGraph();
  CudaGraph(CudaGraph&& o) noexcept;
  CudaGraph& operator=(CudaGraph&& o) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Enqueues the captured work on `stream` (any stream of the context, not only the captured one).
  void replay(void* stream) const;
  void replay(const Stream& stream) const;
  size_t nodes() const { return nodes_; }  // kernels, copies, memsets and event nodes captured
  bool empty() const { return exec_ == nullptr; }

 private:
  void* graph_ = nullptr;  // CUgraph
  void* exec_ = nullptr;   // CUgraphExec
  size_t nodes_ = 0;
};

}  // namespace dbsparse

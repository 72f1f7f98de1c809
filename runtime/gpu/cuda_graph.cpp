#include "dbsparse/cuda_graph.hpp"

#include <utility>

#include "dbsparse/error.hpp"
#include "runtime/gpu/cuda_driver.hpp"

namespace dbsparse {

CudaGraph CudaGraph::capture(void* stream, const std::function<void()>& enqueue) {
  auto s = static_cast<CUstream>(stream);
  DBS_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUgraph g = nullptr;
  try {
    enqueue();
  } catch (...) {
    cuda::driver().cuStreamEndCapture(s, &g);  // leave the stream usable; the first error wins
    if (g) cuda::driver().cuGraphDestroy(g);
    throw;
  }
  DBS_CU(cuStreamEndCapture(s, &g));
  CudaGraph out;
  out.graph_ = g;
  size_t n = 0;
  DBS_CU(cuGraphGetNodes(g, nullptr, &n));
  out.nodes_ = n;
  CUgraphExec exec = nullptr;
  DBS_CU(cuGraphInstantiateWithFlags(&exec, g, 0));
  out.exec_ = exec;
  return out;
}

CudaGraph CudaGraph::capture(const Stream& stream, const std::function<void()>& enqueue) {
  return capture(stream.handle(), enqueue);
}

CudaGraph::~CudaGraph() {
  if (exec_) cuda::driver().cuGraphExecDestroy(static_cast<CUgraphExec>(exec_));
  if (graph_) cuda::driver().cuGraphDestroy(static_cast<CUgraph>(graph_));
}

CudaGraph::CudaGraph(CudaGraph&& o) noexcept
    : graph_(std::exchange(o.graph_, nullptr)), exec_(std::exchange(o.exec_, nullptr)), nodes_(o.nodes_) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& o) noexcept {
  if (this != &o) {
    CudaGraph old(std::move(*this));
    graph_ = std::exchange(o.graph_, nullptr);
    exec_ = std::exchange(o.exec_, nullptr);
    nodes_ = o.nodes_;
  }
  return *this;
}

void CudaGraph::replay(void* stream) const {
  if (!exec_) throw UsageError("CudaGraph::replay: an empty graph (default-constructed or moved from)");
  DBS_CU(cuGraphLaunch(static_cast<CUgraphExec>(exec_), static_cast<CUstream>(stream)));
}

void CudaGraph::replay(const Stream& stream) const { replay(stream.handle()); }

}  // namespace dbsparse

#pragma once
// The BFS a library user would write from cuSPARSE: a dense 0/1 frontier f, y = A·f by cuSPARSE's
// CSR SpMV, a small kernel that admits the unreached vertices with y != 0 into the next frontier,
// and a host loop that reads the new frontier's size after every level. The baseline of
// `dbsparse bench bfs`: it shows what the no-host-sync, push/pull design buys.
#include <cstdint>
#include <memory>

#include "dbsparse/context.hpp"
#include "dbsparse/graph.hpp"
#include "tools/baselines/cusparse_spmv.hpp"

namespace dbsparse::tools {

class CusparseBfs {
 public:
  CusparseBfs(Context& ctx, const PatternGraph& g, const Stream& stream);
  ~CusparseBfs();
  CusparseBfs(const CusparseBfs&) = delete;
  CusparseBfs& operator=(const CusparseBfs&) = delete;

  // Levels only (no parents: a user of SpMV gets none without more work); returns the levels
  // expanded. Waits for the stream after every level.
  int run(int32_t source, DeviceBuffer<int32_t>& levels);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace dbsparse::tools

#pragma once
// Each op's first call as a user makes it (OpDescriptor::first_call, `dbsparse first-call`): a
// graph of 16K vertices (R-MAT scale 14, 8 edges a vertex) or a 1024 x 1024 layer at half its
// weights, the default options, the plan and its first call.
#include "dbsparse/context.hpp"
#include "tools/bench/fixed_cost.hpp"

namespace dbsparse::tools {

FirstCall spmv_first_call(Context& ctx, const Stream& stream);
FirstCall spmspv_first_call(Context& ctx, const Stream& stream);
FirstCall bfs_first_call(Context& ctx, const Stream& stream);
FirstCall spmm_first_call(Context& ctx, const Stream& stream);
FirstCall spgemm_first_call(Context& ctx, const Stream& stream);
FirstCall decode_first_call(Context& ctx, const Stream& stream);

}  // namespace dbsparse::tools

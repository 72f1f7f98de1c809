#pragma once
// Each op's smallest calls for `bench`'s fixed-cost lines (OpDescriptor::fixed_cost_calls): small
// or one-entry inputs, so that a call's time is its launches and fixed work.
#include <vector>

#include "dbsparse/context.hpp"
#include "tools/bench/fixed_cost.hpp"

namespace dbsparse::tools {

std::vector<FixedCostCall> spmv_fixed_cost_calls(Context& ctx, const Stream& stream);
std::vector<FixedCostCall> spmspv_fixed_cost_calls(Context& ctx, const Stream& stream);
std::vector<FixedCostCall> bfs_fixed_cost_calls(Context& ctx, const Stream& stream);
std::vector<FixedCostCall> spmm_fixed_cost_calls(Context& ctx, const Stream& stream);
std::vector<FixedCostCall> spgemm_fixed_cost_calls(Context& ctx, const Stream& stream);
std::vector<FixedCostCall> decode_fixed_cost_calls(Context& ctx, const Stream& stream);

}  // namespace dbsparse::tools

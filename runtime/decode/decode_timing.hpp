#pragma once
// Decoding plans timed as a model's layers run (calibrate_decode and dbtune's decode objective):
// calls over copies of a plan in one CUDA graph, enough copies that a graph's calls read three L2s,
// so the weights come from device memory as they would in a whole model.
#include <cstdint>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/decode_linear.hpp"

namespace dbsparse {

inline constexpr int kDecodeCallsPerGraph = 20;

// `plan` first, then clones of it until the copies' weights pass three times the L2 (at most 16).
std::vector<DecodeLinearPlan> decode_copies_past_l2(Context& ctx, DecodeLinearPlan plan);

// Per call, us: kDecodeCallsPerGraph calls over `copies` in turn in one graph (captured on s, with
// each copy's tau as it is now), the median of `replays` replays after an untimed one.
double decode_graph_call_us(const std::vector<DecodeLinearPlan>& copies, uint64_t x, uint64_t y, const Stream& s,
                            int replays = 7);

}  // namespace dbsparse

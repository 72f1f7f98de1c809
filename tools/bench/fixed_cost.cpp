#include "tools/bench/fixed_cost.hpp"

#include <fmt/format.h>

#include "codegen/kernel_source.hpp"
#include "runtime/gpu/cuda_driver.hpp"
#include "runtime/gpu/module_registry.hpp"

namespace dbsparse::tools {
namespace {

// A kernel that does nothing: the floor every call's launch stands on.
codegen::KernelSource empty_kernel_source() {
  codegen::KernelSource ks;
  ks.key = "bench.empty_kernel";
  ks.source = "namespace dbs { __global__ void empty_kernel() {} }\n";
  ks.options = {"-std=c++17"};
  ks.name_expressions = {"dbs::empty_kernel"};
  return ks;
}

nlohmann::json time_both(void* stream, TimingOptions t, const std::function<void(int64_t)>& launch) {
  t.graph = false;
  const TimingResult st = time_on_stream(stream, t, launch);
  t.graph = true;
  const TimingResult gr = time_on_stream(stream, t, launch);
  return {{"stream_us", st.median_us}, {"graph_us", gr.median_us}};
}

}  // namespace

nlohmann::json fixed_cost_section(Context& ctx, const Stream& stream, const TimingOptions& timing,
                                  const std::vector<FixedCostCall>& calls) {
  const CUfunction empty = ctx.modules().get(empty_kernel_source(), ctx.device().arch()).fn;
  const auto h = static_cast<CUstream>(stream.handle());
  nlohmann::json j;
  j["empty_kernel"] = time_both(stream.handle(), timing, [&](int64_t) {
    DBS_CU(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, h, nullptr, nullptr));
  });
  j["calls"] = nlohmann::json::array();
  fmt::print("fixed cost (us a call, median; stream launches / one graph replay a batch of {}):\n", timing.batch);
  const auto line = [](const std::string& what, const nlohmann::json& r) {
    fmt::print("  {:<58} {:>8.2f} / {:>8.2f}\n", what, r.at("stream_us").get<double>(), r.at("graph_us").get<double>());
  };
  line("empty kernel (1 block of 32 threads)", j["empty_kernel"]);
  for (const auto& c : calls) {
    nlohmann::json r = time_both(stream.handle(), timing, c.launch);
    r["stream_us"] = r["stream_us"].get<double>() / c.per;
    r["graph_us"] = r["graph_us"].get<double>() / c.per;
    line(c.what, r);
    r["what"] = c.what;
    r["per"] = c.per;
    j["calls"].push_back(r);
  }
  return j;
}

}  // namespace dbsparse::tools

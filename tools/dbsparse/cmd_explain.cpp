// `dbsparse explain A --op OP`: the config a plan for A would use on this GPU and where it came
// from (tuned, predicted from the nearest tuned matrix, or the defaults), then the plan itself.
#include <fmt/format.h>

#include <memory>

#include "dbsparse/dbsparse.hpp"
#include "tools/dbsparse/commands.hpp"
#include "tools/ops/registry.hpp"

namespace dbsparse::cli {

Runner add_explain(CLI::App& sub) {
  struct Args {
    std::string matrix, op = "spmv";
  };
  auto a = std::make_shared<Args>();
  sub.add_option("matrix", a->matrix, "Matrix Market file or generator string")->required();
  sub.add_option("--op", a->op, "The op (default spmv)")->check(CLI::IsMember(tools::op_names()));
  return [a]() {
    const auto& op = tools::find_op(a->op);
    NamedMatrix m = load_matrix(a->matrix);
    std::string why;
    if (!cuda_device_available(&why)) {
      fmt::print("{}: no CUDA device ({}); configs are per device, so only the defaults can be named:\n  {}\n", m.name,
                 why, op.config.defaults.dump());
      return 0;
    }
    Context ctx;
    // An op keyed by a problem key (decode) is looked up under it, in its first bucket (decode's a1:
    // what a plan with tau 0 expects); the others by structure.
    const std::string bucket = op.problem_key && !op.buckets.empty() ? op.buckets.front() : "";
    Config c = lookup_config(ctx.device().record().fingerprint, tools::db_key(op, m), op.config, bucket,
                             [&] { return op.problem_features ? op.problem_features(m) : compute_features(m.csr); });
    fmt::print("{} on {} ({}), op {}\ndevice profile: {}\nconfig: {}\n  from: {}\n  params: {}\n\n", m.name,
               ctx.device().name, ctx.device().arch(), a->op, ctx.profile().summary(), to_string(c.source), c.note,
               c.params.dump());
    fmt::print("{}", op.explain(ctx, m));
    return 0;
  };
}

}  // namespace dbsparse::cli

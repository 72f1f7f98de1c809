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
    auto f = m.csr.cast<float>();
    Config c = lookup_config(ctx.device().record().fingerprint, structure_fingerprint(f), op.config, "",
                             [&] { return compute_features(f); });
    fmt::print("{} on {} ({}), op {}\ndevice profile: {}\nconfig: {}\n  from: {}\n  params: {}\n\n", m.name,
               ctx.device().name, ctx.device().arch(), a->op, ctx.profile().summary(), to_string(c.source), c.note,
               c.params.dump());
    fmt::print("{}", op.explain(ctx, m));
    return 0;
  };
}

}  // namespace dbsparse::cli

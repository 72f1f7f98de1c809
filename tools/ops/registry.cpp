#include "tools/ops/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dbsparse::tools {

// Each op's descriptor, defined in tools/ops/<op>_op.cpp.
const OpDescriptor& spmv_op();
const OpDescriptor& spmspv_op();
const OpDescriptor& bfs_op();
const OpDescriptor& spmm_op();
const OpDescriptor& spgemm_op();
const OpDescriptor& decode_op();
const OpDescriptor& sddmm_op();

const std::vector<const OpDescriptor*>& ops() {
  static const std::vector<const OpDescriptor*> all = {&spmv_op(),   &spmspv_op(), &bfs_op(),  &spmm_op(),
                                                       &spgemm_op(), &decode_op(), &sddmm_op()};
  return all;
}

std::vector<std::string> op_names() {
  std::vector<std::string> out;
  for (const auto* o : ops()) out.push_back(o->name);
  return out;
}

std::vector<std::string> default_tuned_op_names() {
  std::vector<std::string> out;
  for (const auto* o : ops())
    if (o->tuned_by_default) out.push_back(o->name);
  return out;
}

DeviceProfile measure_profile(Context& ctx, const std::function<void(const std::string&)>& progress) {
  if (progress) progress("device: bandwidths, launch, grid barrier and atomic latencies");
  DeviceProfile p = measure_device_profile(ctx);
  if (progress) progress(p.summary());
  for (const auto* o : ops())
    if (o->calibrate) {
      if (progress) progress(fmt::format("{}: calibrating its cost model", o->name));
      o->calibrate(ctx, p, progress);
    }
  return p;
}

std::string db_key(const OpDescriptor& op, const NamedMatrix& m) {
  return op.problem_key ? op.problem_key(m) : structure_fingerprint(m.csr);
}

MatrixRecord db_record(const OpDescriptor& op, const NamedMatrix& m) {
  if (op.problem_key) return MatrixRecord{op.problem_key(m), m.name, op.problem_features(m)};
  return MatrixRecord{structure_fingerprint(m.csr), m.name, compute_features(m.csr)};
}

std::vector<codegen::KernelSource> default_variants(const OpDescriptor& op) {
  return op.default_variants ? op.default_variants() : op.variants(/*opt_in=*/false);
}

const OpDescriptor& find_op(const std::string& name) {
  for (const auto* o : ops())
    if (o->name == name) return *o;
  throw UsageError(fmt::format("unknown op '{}' (known: {})", name, fmt::join(op_names(), ", ")));
}

}  // namespace dbsparse::tools

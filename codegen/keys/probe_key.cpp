#include "codegen/keys/probe_key.hpp"

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse::codegen {

std::string ProbeKey::to_string() const { return "device_probe"; }

ProbeKey ProbeKey::parse(std::string_view text) {
  if (text != "device_probe") throw UsageError(fmt::format("bad probe key '{}' (form: device_probe)", text));
  return {};
}

KernelSource make_source(const ProbeKey& key) {
  KernelSource ks;
  ks.key = key.to_string();
  ks.source = fmt::format("// dbsparse generated kernel: {}\n#include \"device_probe.cuh\"\n", ks.key);
  ks.options = {"-std=c++17"};
  ks.add_entry("copy", "dbs::probe_copy");
  ks.add_entry("read", "dbs::probe_read");
  ks.add_entry("empty", "dbs::probe_empty");
  ks.add_entry("atomic_chain", "dbs::probe_atomic_chain");
  ks.add_entry("grid_barrier", "dbs::probe_grid_barrier");
  return ks;
}

}  // namespace dbsparse::codegen

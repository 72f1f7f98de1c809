#include "support/host_memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "dbsparse/error.hpp"

namespace dbsparse {

double host_memory_bytes() {
  if (const char* v = std::getenv("DBSPARSE_HOST_MEMORY"); v && *v) {
    char* end = nullptr;
    double x = std::strtod(v, &end);
    const char unit = end ? static_cast<char>(std::toupper(static_cast<unsigned char>(*end))) : '\0';
    const double scale = unit == 'K' ? 1e3 : unit == 'M' ? 1e6 : unit == 'G' ? 1e9 : unit == 'T' ? 1e12 : 1.0;
    if (end != v && x > 0 && (unit == '\0' || (scale > 1 && end[1] == '\0'))) return x * scale;
    throw UsageError(
        fmt::format("DBSPARSE_HOST_MEMORY='{}': expected a positive number of bytes, optionally with a K, "
                    "M, G or T suffix",
                    v));
  }
  // 80% of the physical memory: the rest is the system's and the other processes'. At 100% a
  // 2e9 x 2e9 header (24.0 GB of pointers on a 24.7 GB host) passed and paged for minutes.
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  double limit = pages > 0 && page > 0 ? 0.8 * static_cast<double>(pages) * static_cast<double>(page) : 1e18;
  // A process address-space limit (ulimit -v, a batch system's) below that is the real one: past it
  // an allocation fails after the work that led to it.
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    limit = std::min(limit, 0.8 * static_cast<double>(as.rlim_cur));
  return limit;
}

void require_host_bytes(double bytes, const std::string& what) {
  const double host = host_memory_bytes();
  if (bytes > host) throw HostMemoryError(what, bytes, host);
}

}  // namespace dbsparse

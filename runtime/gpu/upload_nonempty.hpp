#pragma once
// Host arrays to the device for kernel parameters (internal to the runtime).
#include <span>

#include "dbsparse/context.hpp"

namespace dbsparse::detail {

// At least one element, so that a kernel parameter is never a null pointer of an empty array.
template <class U>
DeviceBuffer<U> upload_nonempty(std::span<const U> host) {
  if (host.empty()) return DeviceBuffer<U>(1);
  return DeviceBuffer<U>(host);
}

}  // namespace dbsparse::detail

// Shared by the binding files: the Python package's view of the C++ API (python/dbsparse wraps it).
// Arguments arrive as raw device pointers and a CUstream (ints) from the Python layer, which reads
// them off torch / CuPy / CUDA-array-interface / DLPack objects; host arrays arrive as NumPy.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <vector>

#include "dbsparse/context.hpp"
#include "dbsparse/matrix.hpp"

namespace dbs_py {
namespace nb = nanobind;

template <class T>
using HostVec = nb::ndarray<nb::numpy, const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

inline void* stream_ptr(uint64_t s) { return reinterpret_cast<void*>(static_cast<uintptr_t>(s)); }

// A NumPy array that owns a moved-in vector.
template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(heap->data(), {heap->size()}, owner);
}

// CSR from host arrays, checked entry by entry (UsageError names the argument and the entry).
template <class T>
dbsparse::CsrMatrix<T> make_csr(int64_t rows, int64_t cols, HostVec<int32_t> indptr, HostVec<int32_t> indices,
                                HostVec<T> values);

void bind_spmv(nb::module_& m);
void bind_spmm_bfs(nb::module_& m);
void bind_spgemm(nb::module_& m);
void bind_decode(nb::module_& m);
void bind_sddmm(nb::module_& m);

}  // namespace dbs_py

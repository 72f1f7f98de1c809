// dbsparse._core: errors, the device context, host CSR and device-memory views. The ops' plans are
// bound in the other files of this folder.
#include <Python.h>
#include <fmt/format.h>

#include <string>

#include "bind.hpp"
#include "dbsparse/error.hpp"

namespace dbs_py {

// The checks and the copy are the library's (csr_from_arrays, fuzzed as fuzz_csr_arrays).
template <class T>
dbsparse::CsrMatrix<T> make_csr(int64_t rows, int64_t cols, HostVec<int32_t> indptr, HostVec<int32_t> indices,
                                HostVec<T> values) {
  return dbsparse::csr_from_arrays<T>(rows, cols, {indptr.data(), indptr.shape(0)}, {indices.data(), indices.shape(0)},
                                      {values.data(), values.shape(0)});
}
template dbsparse::CsrMatrix<float> make_csr(int64_t, int64_t, HostVec<int32_t>, HostVec<int32_t>, HostVec<float>);
template dbsparse::CsrMatrix<double> make_csr(int64_t, int64_t, HostVec<int32_t>, HostVec<int32_t>, HostVec<double>);

namespace {
// Python classes of the C++ exceptions: created in Python (dbsparse/_errors.py defines the
// hierarchy users catch) and handed over once, so one class serves both sides.
PyObject* g_usage = nullptr;
PyObject* g_input = nullptr;
PyObject* g_device = nullptr;
PyObject* g_compile = nullptr;
PyObject* g_db = nullptr;
PyObject* g_error = nullptr;
PyObject* g_device_oom = nullptr;
PyObject* g_host_oom = nullptr;

void set_error_classes(nb::object usage, nb::object input, nb::object device, nb::object compile, nb::object db,
                       nb::object error, nb::object device_oom, nb::object host_oom) {
  for (PyObject** slot : {&g_usage, &g_input, &g_device, &g_compile, &g_db, &g_error, &g_device_oom, &g_host_oom})
    Py_XDECREF(*slot);
  g_device_oom = device_oom.release().ptr();
  g_host_oom = host_oom.release().ptr();
  g_usage = usage.release().ptr();
  g_input = input.release().ptr();
  g_device = device.release().ptr();
  g_compile = compile.release().ptr();
  g_db = db.release().ptr();
  g_error = error.release().ptr();
}

template <class T>
void bind_csr(nb::module_& m, const char* name) {
  using C = dbsparse::CsrMatrix<T>;
  nb::class_<C>(m, name)
      .def_ro("rows", &C::rows)
      .def_ro("cols", &C::cols)
      .def_prop_ro("nnz", &C::nnz)
      // Copies (NumPy owns them): for results going back to SciPy.
      .def("indptr", [](const C& a) { return to_numpy(std::vector<int32_t>(a.row_ptr)); })
      .def("indices", [](const C& a) { return to_numpy(std::vector<int32_t>(a.col_idx)); })
      .def("data", [](const C& a) { return to_numpy(std::vector<T>(a.values)); });
  m.def((std::string("make_") + name).c_str(), &make_csr<T>, nb::arg("rows"), nb::arg("cols"), nb::arg("indptr"),
        nb::arg("indices"), nb::arg("data"));
}
}  // namespace

}  // namespace dbs_py

NB_MODULE(_core, m) {
  using namespace dbs_py;
  m.doc() = "dbsparse's C++ core (use the dbsparse package, not this module)";
  m.def("_set_error_classes", &set_error_classes);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    const auto raise = [](PyObject* cls, PyObject* fallback, const char* what) {
      PyErr_SetString(cls ? cls : fallback, what);
    };
    try {
      std::rethrow_exception(p);
    } catch (const dbsparse::InputError& e) {
      raise(g_input, PyExc_ValueError, e.what());
    } catch (const dbsparse::UsageError& e) {
      raise(g_usage, PyExc_ValueError, e.what());
    } catch (const dbsparse::DeviceOutOfMemory& e) {  // before CudaError, its base
      raise(g_device_oom, PyExc_MemoryError, e.what());
    } catch (const dbsparse::HostMemoryError& e) {
      raise(g_host_oom, PyExc_MemoryError, e.what());
    } catch (const dbsparse::CompileError& e) {
      raise(g_compile, PyExc_RuntimeError, e.what());
    } catch (const dbsparse::CudaError& e) {
      raise(g_device, PyExc_RuntimeError, e.what());
    } catch (const dbsparse::NoDeviceError& e) {
      raise(g_device, PyExc_RuntimeError, e.what());
    } catch (const dbsparse::DbError& e) {
      raise(g_db, PyExc_RuntimeError, e.what());
    } catch (const dbsparse::Error& e) {
      raise(g_error, PyExc_RuntimeError, e.what());
    }
  });

  m.def("version", [] { return std::string(DBSPARSE_VERSION); });
  m.def("add_kernel_dir", &dbsparse::add_kernel_dir, nb::arg("path"),
        "A folder of precompiled kernels (`dbsparse precompile --aot`) searched before NVRTC compiles");
  m.def("device_available", [] {
    std::string why;
    const bool ok = dbsparse::cuda_device_available(&why);
    return nb::make_tuple(ok, why);
  });
  nb::class_<dbsparse::Context>(m, "Context")
      .def(nb::init<int>(), nb::arg("ordinal") = 0)
      .def_prop_ro("name", [](const dbsparse::Context& c) { return c.device().name; })
      .def_prop_ro("arch", [](const dbsparse::Context& c) { return c.device().arch(); })
      .def_prop_ro("sm_count", [](const dbsparse::Context& c) { return c.device().sm_count; })
      .def("make_current", &dbsparse::Context::make_current);
  bind_csr<float>(m, "CsrF32");
  bind_csr<double>(m, "CsrF64");
  // A device array the caller's framework can take through DLPack without a copy; `owner` (a plan)
  // stays alive while the array does. dtype: NumPy-style code 'i4', 'f4', 'f8', 'f2', 'bf2'.
  m.def(
      "device_view",
      [](uint64_t ptr, size_t n, const std::string& dtype, int device, nb::handle owner) {
        nb::dlpack::dtype dt = dtype == "i4"   ? nb::dtype<int32_t>()
                               : dtype == "f4" ? nb::dtype<float>()
                               : dtype == "f8" ? nb::dtype<double>()
                                               : nb::dlpack::dtype{static_cast<uint8_t>(dtype == "bf2" ? 4 : 2), 16, 1};
        size_t shape[1] = {n};
        // array_api: an object with __dlpack__ / __dlpack_device__ (a bare capsule is what a
        // framework-less ndarray returns, and CuPy's from_dlpack takes no capsule).
        return nb::ndarray<nb::array_api>(reinterpret_cast<void*>(static_cast<uintptr_t>(ptr)), 1, shape, owner,
                                          nullptr, dt, nb::device::cuda::value, device);
      },
      nb::arg("ptr"), nb::arg("n"), nb::arg("dtype"), nb::arg("device"), nb::arg("owner"),
      "n values of `dtype` ('i4', 'f4', 'f8', 'f2', 'bf2') at device pointer `ptr` on CUDA device `device`, as an "
      "array a framework takes through DLPack without a copy; `owner` stays alive while the array does.");
  // Fields of a DLPack object that has neither data_ptr() nor __cuda_array_interface__ (JAX, ...).
  m.def(
      "dlpack_info",
      [](nb::ndarray<> a) {
        std::vector<int64_t> shape, strides;
        for (size_t i = 0; i < a.ndim(); ++i)
          shape.push_back(static_cast<int64_t>(a.shape(i))), strides.push_back(a.stride(i));
        const auto dt = a.dtype();
        return nb::make_tuple(reinterpret_cast<uintptr_t>(a.data()), shape, strides, static_cast<int>(dt.code),
                              static_cast<int>(dt.bits), a.device_type(), a.device_id());
      },
      "(data pointer, shape, strides, dtype code, dtype bits, device type, device id) of a DLPack object.");
  bind_spmv(m);
  bind_spmm_bfs(m);
  bind_spgemm(m);
  bind_decode(m);
  bind_sddmm(m);
}

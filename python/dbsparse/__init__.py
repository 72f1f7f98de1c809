"""dbsparse: sparse-matrix GPU kernels generated at run time (NVRTC) and tuned per device.

Arrays go in and out without copies: torch CUDA tensors, CuPy arrays, anything with
``__cuda_array_interface__`` or ``__dlpack__``. Calls run on the framework's current stream (or
``stream=``) with the GIL released. Plans are kept and called again::

    import dbsparse, torch, scipy.sparse as sp
    A = sp.random(10000, 10000, density=1e-3, format="csr", dtype="float32")
    plan = dbsparse.plan_spmv(A)
    x = torch.ones(10000, device="cuda")
    y = plan(x)                    # torch tensor, on torch's current stream

Ops: spmv, spmspv, spmm, spgemm, bfs, square, contract, mcl; SparseLinear in dbsparse.nn; Graph and
a differentiable spmm(graph, X, reduce=...) for GNNs in dbsparse.gnn.
"""
from ._errors import (CompileError, DeviceError, DeviceOutOfMemory, Error, HostMemoryError, InputError, TuningDbError,
                      UsageError)
from . import _core

_core._set_error_classes(UsageError, InputError, DeviceError, CompileError, TuningDbError, Error, DeviceOutOfMemory,
                         HostMemoryError)

# Kernels precompiled into the package (a wheel built with DBSPARSE_AOT_ARCHS): found before NVRTC.
import atexit as _atexit  # noqa: E402
import os as _os  # noqa: E402
import sys as _sys  # noqa: E402


@_atexit.register
def _drop_compiled_references():
    """torch.compile's caches (a compiled function's guards and closures) keep the plans of the
    objects they saw, a gnn Graph's say, and the globals of the module that defined it, until torch
    is torn down, after this module: nanobind then prints them as leaks. Dropped here, while the
    interpreter is whole (atexit runs last-registered first, so before torch's own hooks)."""
    dynamo = _sys.modules.get("torch._dynamo")
    if dynamo is not None:
        try:
            dynamo.reset()
        except Exception:  # noqa: BLE001 - best effort at exit: nothing to report to
            pass
    import gc
    gc.collect()
    # What the caches still hold (a compiled frame keeps its module's globals): the native state
    # of every plan, layer and context, dropped while the extension is whole (_lifetime.py).
    from . import _lifetime, _ops
    _lifetime.release_all()
    _ops._contexts.clear()
    gc.collect()


_kernels = _os.path.join(_os.path.dirname(__file__), "share", "dbsparse", "kernels")
if _os.path.isdir(_kernels):
    _core.add_kernel_dir(_kernels)

from ._apps import SpgemmResult, contract, mcl, spgemm, square  # noqa: E402
from ._ops import (BfsPlan, SpmmPlan, SpmspvPlan, SpmvPlan, bfs, context, plan_bfs, plan_spmm,  # noqa: E402
                   plan_spmspv, plan_spmv, spmm, spmspv, spmv)
from ._ops import SddmmPlan, plan_sddmm  # noqa: E402
from ._tools import precompile, tune  # noqa: E402

__version__ = _core.version()


def device_available():
    """(True, '') when a CUDA device can be used, else (False, why)."""
    return _core.device_available()


def explain(a, op="spmv", **kw):
    """The config dbsparse would use for matrix `a` and `op` ('spmv', 'spmspv', 'spmm', 'bfs') as a
    dict: op, source (tuned, predicted, default), params, and the plan's text. Plans the op (JIT)."""
    planners = {"spmv": plan_spmv, "spmspv": plan_spmspv, "spmm": lambda m, **k: plan_spmm(m, k.pop("n_cols", 32), **k),
                "bfs": plan_bfs}
    if op not in planners:
        raise UsageError(f"op: expected one of {', '.join(planners)}, got {op!r}")
    return planners[op](a, **kw).explain()


def __getattr__(name):
    if name == "SparseLinear":
        from .nn import SparseLinear
        return SparseLinear
    if name == "Graph":  # torch imported on first use, not by `import dbsparse`
        from .gnn import Graph
        return Graph
    raise AttributeError(f"module 'dbsparse' has no attribute {name!r}")


__all__ = ["Error", "UsageError", "InputError", "DeviceError", "CompileError", "TuningDbError", "DeviceOutOfMemory",
           "HostMemoryError", "plan_spmv", "spmv", "plan_sddmm", "SddmmPlan",
           "plan_spmspv", "spmspv", "plan_spmm", "spmm", "plan_bfs", "bfs", "spgemm", "square", "contract", "mcl",
           "SpmvPlan", "SpmspvPlan", "SpmmPlan", "BfsPlan", "SpgemmResult", "explain", "tune", "precompile",
           "device_available", "context", "SparseLinear", "Graph"]

"""Sparse matrices in: SciPy (host), torch sparse CSR/COO tensors and CuPy CSR (device). Plans
analyse A once on the host (formats are built there), so a device matrix is read back once at
planning; SpGEMM from device CSR reads the arrays in place."""
import sys

import numpy as np

from ._errors import UsageError
from . import _core

_NP = {"f32": np.float32, "f64": np.float64}


def _scipy_like(a):
    """A SciPy or CuPy sparse matrix or array, any format (converted to CSR)."""
    mod = type(a).__module__
    return (mod.startswith("scipy.sparse") or mod.startswith("cupyx.scipy.sparse")) and hasattr(a, "tocsr")


def host_csr(a, dtype, name="A"):
    """A as the C++ CsrF32 / CsrF64 (indices int32; values in `dtype`: 'f32' or 'f64')."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        if a.layout == torch.sparse_coo:
            a = a.coalesce().to_sparse_csr()
        if a.layout != torch.sparse_csr:
            raise UsageError(f"{name}: expected a sparse CSR or COO tensor, got layout {a.layout}")
        rows, cols = a.shape
        indptr, indices, data = (a.crow_indices().cpu().numpy(), a.col_indices().cpu().numpy(),
                                 a.values().float().cpu().numpy() if a.dtype in (torch.float16, torch.bfloat16)
                                 else a.values().cpu().numpy())
    elif _scipy_like(a):
        if type(a).__module__.startswith("cupyx"):  # CuPy: to SciPy (one copy to the host)
            a = a.get()
        if getattr(a, "format", "csr") != "csr":
            a = a.tocsr()
        rows, cols = a.shape
        indptr, indices, data = a.indptr, a.indices, a.data
    else:
        raise UsageError(f"{name}: expected a SciPy / CuPy sparse matrix or a torch sparse tensor, got {type(a).__name__}")
    if len(indptr) and int(indptr[-1]) > 2**31 - 1:
        raise UsageError(f"{name}: {int(indptr[-1])} entries; dbsparse's indices are 32-bit (at most 2^31 - 1)")
    make = _core.make_CsrF32 if dtype == "f32" else _core.make_CsrF64
    return make(int(rows), int(cols), _int32(indptr, f"{name}.indptr"), _int32(indices, f"{name}.indices"),
                _finite(data, dtype, f"{name}.data"))


def _int32(a, what):
    """a as int32, refused where a value would wrap (an int64 index past 2^31 - 1 became another)."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise UsageError(f"{what}: expected integer indices, got dtype {a.dtype}")
    if a.dtype != np.int32 and a.size and (int(a.max()) > 2**31 - 1 or int(a.min()) < -2**31):
        bad = int(np.argmax((a > 2**31 - 1) | (a < -2**31)))
        raise UsageError(f"{what}[{bad}] = {int(a[bad])} does not fit dbsparse's 32-bit indices")
    return np.ascontiguousarray(a, dtype=np.int32)


def _finite(a, dtype, what):
    """a as dtype's floats, refused when complex or when a value is or becomes NaN or inf."""
    a = np.asarray(a)
    if a.dtype.kind == "c":
        raise UsageError(f"{what}: complex values ({a.dtype}); dbsparse takes real ones")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(a, dtype=_NP[dtype])
    if out.size and not np.isfinite(out).all():
        bad = int(np.argmin(np.isfinite(out)))
        raise UsageError(f"{what}[{bad}] = {float(a[bad])}: expected a finite value that fits {dtype}")
    return out


def value_dtype(a, default="f32"):
    """'f64' for a double matrix, else `default`."""
    dt = getattr(a, "dtype", None)
    return "f64" if str(dt) in ("float64", "torch.float64") else default


def to_scipy(c):
    """A C++ CsrF32/CsrF64 result as a SciPy csr_matrix (imported on use)."""
    import scipy.sparse as sp
    return sp.csr_matrix((c.data(), c.indices(), c.indptr()), shape=(c.rows, c.cols))


def device_csr(a, name, op="SpGEMM", indptr64=False, values=True):
    """(rows, cols, nnz, indptr, indices, data, keep, framework, dtype, device) of a device CSR matrix
    whose arrays the plan reads in place; None for anything else. Indices are int32 and indptr
    int32, or int64 with indptr64 (the 64-bit offsets of SpMV / SpMM / BFS past 2^31 entries); an
    index array of another type is converted: a copy, kept in `keep`. `op` names the op in errors.
    values=False (BFS reads the pattern only): values of any dtype, dtype None."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        if a.layout != torch.sparse_csr or not a.is_cuda:
            return None
        ip = a.crow_indices().to(torch.int64 if indptr64 else torch.int32)
        ix, v = a.col_indices().to(torch.int32), a.values().contiguous()
        dt = {torch.float32: "f32", torch.float64: "f64"}.get(v.dtype)
        if dt is None and values:
            raise UsageError(f"{name}: values {v.dtype}; {op} takes float32 or float64")
        return (a.shape[0], a.shape[1], v.numel(), ip.data_ptr(), ix.data_ptr(), v.data_ptr(), (ip, ix, v), "torch", dt,
                a.device.index)
    cupy = sys.modules.get("cupy")
    if cupy is not None and type(a).__module__.startswith("cupyx") and _scipy_like(a):
        if a.format != "csr":
            a = a.tocsr()
        ip = a.indptr.astype(cupy.int64 if indptr64 else cupy.int32, copy=False)
        ix, v = a.indices.astype(cupy.int32, copy=False), a.data
        dt = {"float32": "f32", "float64": "f64"}.get(str(v.dtype))
        if dt is None and values:
            raise UsageError(f"{name}: values {v.dtype}; {op} takes float32 or float64")
        return (a.shape[0], a.shape[1], int(v.size), ip.data.ptr, ix.data.ptr, v.data.ptr, (ip, ix, v, a), "cupy", dt,
                v.device.id)
    return None


def device_nnz(a):
    """Stored entries of a torch or CuPy CUDA CSR matrix without touching its arrays; None otherwise."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        return a.values().numel() if a.layout == torch.sparse_csr and a.is_cuda else None
    cupy = sys.modules.get("cupy")
    if cupy is not None and type(a).__module__.startswith("cupyx") and _scipy_like(a) and a.format == "csr":
        return int(a.nnz)
    return None


"""SpGEMM and its applications (A², graph contraction, Markov clustering)."""
import json
import numbers
import sys

from ._errors import UsageError
from . import _arrays as arr
from . import _core
from . import _matrix as mat
from ._ops import context


class SpgemmResult:
    """C = A B computed from device CSR: C's arrays stay on the device and leave through DLPack
    views (zero copy) that keep them alive."""

    def __init__(self, plan, keep, framework, dtype, device):
        self.framework, self.dtype, self.device = framework, dtype, device
        self._shape, self._nnz, self._text = (plan.rows, plan.cols), plan.nnz, plan.explain()
        self._parts = [(plan.row_ptr, plan.rows + 1, "i4"), (plan.col_idx, plan.nnz, "i4"),
                       (plan.values, plan.nnz, "f4" if dtype == "f32" else "f8")]
        # The views' owner is the plan moved into a capsule: no nanobind instance (the plan's, the
        # Context's) stays reachable from a view a framework keeps to the interpreter's exit.
        # A and B ride along (plain Python objects): the views keep the inputs as long as before.
        hold = _core.hold_spgemm_planF32 if dtype == "f32" else _core.hold_spgemm_planF64
        self._owner = (hold(plan), keep)

    def arrays(self):
        """(indptr, indices, data) as device arrays of the inputs' framework (int32, int32, dtype)."""
        fw = sys.modules[self.framework]
        dev = f"cuda:{self.device}"
        names = {"i4": "int32", "f4": "float32", "f8": "float64"}

        def one(ptr, n, dt):
            # An empty part is made empty here, not viewed: a consumer may never release an empty
            # DLPack view (whose data pointer may be null).
            if n == 0:
                if self.framework == "torch":
                    return fw.empty(0, dtype=getattr(fw, names[dt]), device=dev)
                with fw.cuda.Device(self.device):
                    return fw.empty(0, dtype=names[dt])
            return fw.from_dlpack(_core.device_view(ptr, n, dt, self.device, self._owner))

        return tuple(one(*part) for part in self._parts)

    def matrix(self):
        """C as a torch sparse CSR tensor or a CuPy csr_matrix (no copy)."""
        ip, ix, v = self.arrays()
        shape = self._shape
        if self.framework == "torch":
            torch = sys.modules["torch"]
            return torch.sparse_csr_tensor(ip, ix, v, size=shape)
        import cupyx.scipy.sparse as csp
        return csp.csr_matrix((v, ix, ip), shape=shape)

    def explain(self):
        return {"op": "spgemm", "text": self._text}


def spgemm(a, b, stream=None, config=None):
    """C = A B by hash SpGEMM. Device CSR inputs (torch sparse CSR CUDA tensors, CuPy csr_matrix)
    give a device result in the same framework, the inputs read in place; SciPy inputs give a SciPy
    result (uploaded and downloaded once). config: a dict of SpgemmConfig's keys (docs/USAGE.md's
    table, e.g. {"merge2": 8}: group 2's rows of few entries merged instead of hashed), the others
    at their defaults; None: the defaults for device inputs, the tuning DB's config for SciPy ones.
    Example::

        C = dbsparse.spgemm(A, A)          # torch.sparse_csr CUDA tensor in, same out
    """
    cfg = _config_text(config)
    da, db = mat.device_csr(a, "A"), mat.device_csr(b, "B")
    if (da is None) != (db is None):
        raise UsageError("A and B: give both on the device (torch / CuPy CSR) or both on the host (SciPy)")
    if da is None:
        dt = "f64" if "f64" in (mat.value_dtype(a), mat.value_dtype(b)) else "f32"
        ha, hb = mat.host_csr(a, dt, "A"), mat.host_csr(b, dt, "B")
        if ha.cols != hb.rows:
            raise UsageError(f"A is {ha.rows}x{ha.cols}, B {hb.rows}x{hb.cols}: inner sizes differ")
        return mat.to_scipy((_core.spgemm_hostF32 if dt == "f32" else _core.spgemm_hostF64)(context(0), ha, hb, cfg))
    if da[1] != db[0]:
        raise UsageError(f"A is {da[0]}x{da[1]}, B {db[0]}x{db[1]}: inner sizes differ")
    if da[8] != db[8]:
        raise UsageError(f"A holds {da[8]} values, B {db[8]}: give both the same dtype")
    if da[9] != db[9]:
        raise UsageError(f"A is on cuda:{da[9]}, B on cuda:{db[9]}")
    ctx = context(da[9] or 0)
    s = arr.stream_of(stream, da[7], da[9])
    make = _core.plan_spgemm_deviceF32 if da[8] == "f32" else _core.plan_spgemm_deviceF64
    plan = make(ctx, *da[:6], *db[:6], s, cfg)
    plan.run(s)
    return SpgemmResult(plan, (da[6], db[6]), da[7], da[8], da[9] or 0).matrix()


def _config_text(config):
    """A config dict as the JSON text the bindings take ("" for None); refused before any GPU work
    when it is not a dict of names to integers (the bindings check each name and range)."""
    if config is None:
        return ""
    if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
        raise UsageError(f"config: expected a dict of SpgemmConfig keys to integers, e.g. {{'merge2': 8}}; "
                         f"got {type(config).__name__}")
    for k, v in config.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise UsageError(f"config: '{k}' must be an integer, got {v!r}")
    return json.dumps({k: int(v) for k, v in config.items()})


def square(a, transpose=False):
    """A·A (A·Aᵀ with transpose, or when A is not square) for a SciPy matrix: SciPy out."""
    dt = mat.value_dtype(a)
    return mat.to_scipy((_core.squareF32 if dt == "f32" else _core.squareF64)(context(0), mat.host_csr(a, dt), transpose))


def contract(g, labels, k):
    """S·G·Sᵀ: the k x k graph of clusters (labels[v] in 0..k-1) of a SciPy graph: SciPy out."""
    import numpy as np
    lab = np.ascontiguousarray(labels, dtype=np.int32)
    if lab.ndim != 1 or lab.shape[0] != g.shape[0]:
        raise UsageError(f"labels: expected {g.shape[0]} entries (one per vertex), got shape {lab.shape}")
    if lab.size and (lab.min() < 0 or lab.max() >= k):
        raise UsageError(f"labels: values must be in 0 .. {k - 1}")
    dt = mat.value_dtype(g)
    return mat.to_scipy((_core.contractF32 if dt == "f32" else _core.contractF64)(context(0), mat.host_csr(g, dt), lab, int(k)))


def mcl(g, inflation=2.0, prune_below=1e-4, keep_top_k=50, max_iterations=100, weighted=False):
    """Markov clustering of a SciPy graph on the GPU: (labels, clusters, iterations, converged)."""
    dt = mat.value_dtype(g)
    return (_core.mclF32 if dt == "f32" else _core.mclF64)(context(0), mat.host_csr(g, dt), float(inflation),
                                                          float(prune_below), int(keep_top_k), int(max_iterations),
                                                          bool(weighted))

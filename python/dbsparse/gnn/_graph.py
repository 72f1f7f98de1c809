"""Graph: a sparse matrix A kept with its transpose, its row lengths and its plans, so a GNN plans
once and every layer, epoch and backward pass reuses the plans.

A is held as CSR index tensors (int64) on the graph's device plus its values in A's entry order.
Aᵀ is built once at construction by a stable sort of A's entries by column: `perm[k]` is the A
entry that Aᵀ's entry k is, so Aᵀ's values are values[perm] and anything computed per Aᵀ entry
maps back to A's order through it. Plans (the kernels' analysis, upload and JIT) are made on first
use per (op, n_cols, dtype, reduce, side) and made again when the values change (their tensor is
written in place, e.g. by an optimizer step, or replaced)."""
import sys

import numpy as np
import torch

from .._errors import UsageError
from .._handles import Handles

_graphs = Handles("dbsparse::gnn", "graph", "Graph")
_KERNEL_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
# The widths the kernels take (the bindings refuse others): wider calls run the PyTorch path.
SPMM_MAX_COLS, SDDMM_MAX_K = 4096, 512


def graph_of(handle):
    """The Graph of a handle (UsageError once it is freed)."""
    return _graphs.get(handle)


class _Side:
    """One orientation of the matrix: rows, cols, indptr, the row and column of each entry in this
    side's entry order, row lengths, and `to_a` (this side's entry k is A's entry to_a[k]; None on A)."""

    def __init__(self, rows, cols, row, col, to_a):
        self.rows, self.cols, self.row, self.col, self.to_a = rows, cols, row, col, to_a
        counts = torch.bincount(row, minlength=rows)
        self.indptr = torch.zeros(rows + 1, dtype=torch.int64, device=row.device)
        torch.cumsum(counts, 0, out=self.indptr[1:])
        self.deg = counts.to(torch.float32)


def _kernel_ok():
    """Whether dbsparse's kernels can run here (the package's _core sees a CUDA device)."""
    from .. import device_available
    return device_available()[0]


def _plan_spmm(host, n_cols, dtype, reduce, device, path):
    from .. import _ops
    kw = {"reduce": reduce} if reduce != "sum" else {}
    return _ops.plan_spmm(host, n_cols, dtype=dtype, path=path, device=device, **kw)


def _plan_sddmm(host, k, dtype, device):
    from .. import _ops
    return _ops.plan_sddmm(host, k, dtype=dtype, device=device)


class Graph:
    """A sparse matrix A (n_rows x n_cols) for GNN layers: dbsparse.spmm(graph, X, reduce=...).

    Built from a torch sparse CSR or COO tensor, a SciPy sparse matrix, or an `edge_index` (2 x E
    integers, PyTorch Geometric's: edge j -> i is the column [j, i], stored as A[i, j], so A X sums
    the messages at each edge's target) with optional `edge_weight` (E values; ones without) and
    `num_nodes`. COO, SciPy and edge_index inputs are put in CSR order (rows, then columns; an
    edge_index keeps repeated edges as separate entries, so each edge has its own value); a torch
    CSR tensor's entry order is kept. `values` are in that order; set `values.requires_grad_()` (or
    pass an edge_weight that requires grad) to get their gradient.

    CUDA tensors of float32, float16 or bfloat16 run dbsparse's kernels (plans made on first use
    and kept); anything else (CPU tensors, float64) runs the same computation in PyTorch.
    `path` is the SpMM plans' path ('auto', 'brp', 'csr', 'condensed')."""

    def __init__(self, a, edge_weight=None, num_nodes=None, device=None, path="auto"):
        rows, cols, row, col, src, order = _coo_of(a, edge_weight, num_nodes)
        dev = torch.device(device) if device is not None else row.device
        if dev.type == "cuda" and dev.index is None:  # 'cuda' means the current device, as torch reads it
            dev = torch.device("cuda", torch.cuda.current_device())
        row, col = row.to(dev), col.to(dev)
        self.path = path
        if order is not None and not src.requires_grad:  # values fixed: put them in CSR order once
            src, order = src.index_select(0, order), None
        self._src = src.to(dev) if src.device != dev else src
        self._order = order.to(dev) if order is not None else None
        self.a = _Side(rows, cols, row, col, None)
        perm = torch.argsort(col, stable=True)
        self.t = _Side(cols, rows, col[perm], row[perm], perm)
        self.perm = perm
        # A pattern equal to its transpose's, entry for entry (columns sorted in each row): Aᵀ's
        # plans are A's when the values are symmetric too (checked when planning).
        self._symmetric_pattern = (rows == cols and torch.equal(self.t.indptr, self.a.indptr)
                                   and torch.equal(self.t.col, self.a.col))
        self.device = dev
        self._plans, self._hosts, self._values_key = {}, {}, None
        self._kernels = None
        self.handle = _graphs.register(self)

    @classmethod
    def from_csr(cls, indptr, indices, values=None, shape=None, device=None, path="auto"):
        """A Graph of CSR arrays (torch tensors), entry order kept; `values` (None: ones) is used
        as it is, so its gradient reaches the caller's tensor."""
        n = indices.numel()
        v = _values_tensor(values, n, "values", indices.device)
        rows = indptr.numel() - 1
        shape = tuple(shape) if shape is not None else (rows, int(indices.max()) + 1 if n else 0)
        g = cls(torch.sparse_csr_tensor(indptr, indices, v.detach(), size=shape), device=device, path=path)
        g._src = v if device is None or v.device == g.device else v.to(g.device)
        return g

    # The matrix.
    @property
    def shape(self):
        return (self.a.rows, self.a.cols)

    @property
    def nnz(self):
        return self.a.col.numel()

    @property
    def indptr(self):
        return self.a.indptr

    @property
    def indices(self):
        return self.a.col

    @property
    def row_lengths(self):
        return self.a.deg

    @property
    def values(self):
        """A's values in A's entry order (a gather of edge_weight, differentiable, where an
        edge_index's edges were reordered)."""
        return self._src if self._order is None else self._src.index_select(0, self._order)

    def side(self, transposed):
        return self.t if transposed else self.a

    def to_torch(self, transposed=False):
        """A (or Aᵀ) as a torch sparse CSR tensor (values detached)."""
        s = self.side(transposed)
        v = self.values.detach()
        v = v if s.to_a is None else v.index_select(0, s.to_a)
        return torch.sparse_csr_tensor(s.indptr, s.col, v, size=(s.rows, s.cols))

    def to(self, device):
        """This graph on another device (its values copied; plans are made there on first use)."""
        g = Graph.__new__(Graph)
        g.__init__(self.to_torch(), device=device, path=self.path)
        return g

    def __repr__(self):
        return f"<dbsparse.Graph {self.a.rows}x{self.a.cols}, {self.nnz} entries, on {self.device}>"

    # Plans.
    def uses_kernels(self, x, max_cols=SPMM_MAX_COLS):
        """Whether a call with `x` (n_cols = x.shape[1]) runs dbsparse's kernels (else the PyTorch path)."""
        if not (x.is_cuda and x.dtype in _KERNEL_DTYPES and self.nnz and 0 < x.shape[1] <= max_cols):
            return False
        if self._kernels is None:
            self._kernels = _kernel_ok()
        return self._kernels

    def _check_values(self):
        src = self._src
        key = (src.data_ptr(), src._version, src.dtype)
        if key != self._values_key:
            self._plans.clear()
            self._hosts.clear()
            self._values_key = key

    def _symmetric(self):
        """Whether Aᵀ is A, values included (its plans are then A's)."""
        if not self._symmetric_pattern:
            return False
        if "symmetric" not in self._hosts:
            v = self.values.detach()
            self._hosts["symmetric"] = bool(torch.equal(v.index_select(0, self.perm), v))
        return self._hosts["symmetric"]

    def _host(self, transposed, scaled):
        """A (or Aᵀ) as a float32 SciPy CSR matrix with the current values, the plans' input.
        scaled: each entry divided by the other side's length of the row it came from (Aᵀ's entry
        of A's entry e over len(row(e)) of A): one SpMM then gives the mean's backward."""
        import scipy.sparse as sp
        key = (transposed, scaled)
        h = self._hosts.get(key)
        if h is None:
            s, o = self.side(transposed), self.side(not transposed)
            v = self.values.detach()
            v = (v if s.to_a is None else v.index_select(0, s.to_a)).float()
            if scaled:
                v = v / o.deg.clamp(min=1).index_select(0, s.col)
            h = sp.csr_matrix((v.cpu().numpy(), s.col.to(torch.int32).cpu().numpy(),
                               s.indptr.to(torch.int32).cpu().numpy()), shape=(s.rows, s.cols))
            self._hosts[key] = h
        return h

    def spmm_plan(self, n_cols, dtype, reduce, transposed, scaled=False):
        """The SpMM plan of A (or Aᵀ) for n_cols columns, dtype ('f32', 'f16', 'bf16') and reduce
        (scaled: see _host; with reduce 'sum')."""
        self._check_values()
        if transposed and self._symmetric():
            transposed = False
        key = ("spmm", n_cols, dtype, reduce, transposed, scaled)
        p = self._plans.get(key)
        if p is None:
            p = self._plans[key] = _plan_spmm(self._host(transposed, scaled), n_cols, dtype, reduce,
                                              self._device_index(), self.path)
        return p

    def sddmm_plan(self, k, dtype):
        """The SDDMM plan on A's pattern for k-wide inputs."""
        self._check_values()
        key = ("sddmm", k, dtype)
        p = self._plans.get(key)
        if p is None:
            p = self._plans[key] = _plan_sddmm(self._host(False, False), k, dtype, self._device_index())
        return p

    def _device_index(self):
        return self.device.index or 0 if self.device.type == "cuda" else 0


def _as_index(t, what):
    if t.dtype not in (torch.int32, torch.int64):
        raise UsageError(f"{what}: expected integer indices, got {t.dtype}")
    return t.to(torch.int64)


def _values_tensor(v, n, what, device):
    v = torch.ones(n, dtype=torch.float32, device=device) if v is None else v
    if not isinstance(v, torch.Tensor):
        v = torch.as_tensor(np.asarray(v))
    if v.dim() != 1 or v.numel() != n:
        raise UsageError(f"{what}: expected {n} values (one per entry), got shape {tuple(v.shape)}")
    if not v.is_floating_point():
        v = v.to(torch.float32)
    return v


_MAX_DIM = 2**31 - 1


def _check_size(rows, cols, what):
    """A's sizes within the 32-bit row and column indices the kernels and plans take."""
    if rows > _MAX_DIM or cols > _MAX_DIM:
        raise UsageError(f"{what}: a {rows} x {cols} matrix is past 2^31 - 1 rows or columns (dbsparse's "
                         f"indices are 32-bit)")


def _coo_of(a, edge_weight, num_nodes):
    """(rows, cols, row, col, values source, order): entries in CSR order, values = src[order]
    (order None: src is in CSR order already)."""
    if isinstance(a, torch.Tensor) and a.layout == torch.strided:
        return _from_edge_index(a, edge_weight, num_nodes)
    if edge_weight is not None or num_nodes is not None:
        raise UsageError("edge_weight and num_nodes go with an edge_index; a sparse matrix carries its own")
    if isinstance(a, torch.Tensor):
        if a.dim() != 2:
            raise UsageError(f"A: expected a 2-D sparse tensor, got shape {tuple(a.shape)}")
        _check_size(a.shape[0], a.shape[1], "A")
        if a.layout == torch.sparse_coo:
            a = a.coalesce()
            i = a.indices()
            v = _values_tensor(a.values(), i.shape[1], "A.values", i.device)
            return a.shape[0], a.shape[1], i[0], i[1], v, None
        if a.layout == torch.sparse_csr:
            ip, col = _as_index(a.crow_indices(), "A.crow_indices"), _as_index(a.col_indices(), "A.col_indices")
            row = torch.repeat_interleave(torch.arange(a.shape[0], device=ip.device), ip.diff())
            v = _values_tensor(a.values(), col.numel(), "A.values", ip.device)
            return a.shape[0], a.shape[1], row, col, v, None
        raise UsageError(f"A: expected a sparse CSR or COO tensor or an edge_index, got layout {a.layout}")
    mod = type(a).__module__
    if mod.startswith("scipy.sparse") and hasattr(a, "tocoo"):
        _check_size(a.shape[0], a.shape[1], "A")
        c = a.tocsr(copy=True)
        c.sum_duplicates()
        c.sort_indices()
        row = np.repeat(np.arange(c.shape[0], dtype=np.int64), np.diff(c.indptr))
        v = c.data if c.data.dtype.kind == "f" else c.data.astype(np.float32)
        return (c.shape[0], c.shape[1], torch.from_numpy(row), torch.from_numpy(c.indices.astype(np.int64)),
                torch.from_numpy(np.ascontiguousarray(v)), None)
    if mod.startswith("cupyx"):
        raise UsageError("A: a CuPy matrix; pass A.get() (SciPy) or a torch sparse tensor")
    raise UsageError(f"A: expected a torch sparse CSR/COO tensor, a SciPy sparse matrix or an edge_index, "
                     f"got {type(a).__name__}")


def _from_edge_index(ei, edge_weight, num_nodes):
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise UsageError(f"edge_index: expected shape (2, E), got {tuple(ei.shape)}")
    ei = _as_index(ei, "edge_index")
    e = ei.shape[1]
    if num_nodes is not None and int(num_nodes) < 0:
        raise UsageError(f"num_nodes: expected 0 or more, got {int(num_nodes)}")
    n = int(num_nodes) if num_nodes is not None else (int(ei.max()) + 1 if e else 0)
    _check_size(n, n, "edge_index" if num_nodes is None else "num_nodes")
    if e and (int(ei.min()) < 0 or int(ei.max()) >= n):
        raise UsageError(f"edge_index: node ids must be in [0, {n}) (num_nodes {n}), got "
                         f"[{int(ei.min())}, {int(ei.max())}]")
    src, dst = ei[0], ei[1]
    order = torch.argsort(dst * max(n, 1) + src, stable=True)
    w = _values_tensor(edge_weight, e, "edge_weight", ei.device)
    return n, n, dst[order], src[order], w, order


def is_graph(a):
    """Whether `a` is a Graph (without importing torch where it is not loaded)."""
    mod = sys.modules.get(__name__)
    return mod is not None and isinstance(a, mod.Graph)

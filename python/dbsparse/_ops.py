"""The ops and their plans. A plan does the analysis, the upload and the JIT once; calling it runs
the kernels on the caller's stream with no allocation (unless `out` is omitted) and no host sync."""
import json
import numbers
import sys
import threading

from ._errors import UsageError
from . import _arrays as arr
from . import _core
from . import _lifetime
from . import _matrix as mat

_contexts = {}
_lock = threading.Lock()


def context(device=0):
    """The dbsparse device context of CUDA device `device` (made on first use; DeviceError without a GPU)."""
    ctx = _contexts.get(device)
    if ctx is None:
        with _lock:
            ctx = _contexts.get(device)
            if ctx is None:
                ctx = _contexts[device] = _core.Context(device)
    return ctx


def _dev(device):
    return 0 if device is None else int(device)


class _Released:
    """What a plan's native parts become once the exit hook released them: any use says so."""

    def __init__(self, owner):
        self._owner = owner

    def __getattr__(self, name):
        raise UsageError(f"dbsparse {self._owner}: its native state was released at interpreter exit")


class _Plan:
    """Common parts: the C++ plan, its context, and explain()."""

    def __init__(self, op, plan, ctx, device):
        self._op, self._plan, self._ctx, self.device = op, plan, ctx, device
        _lifetime.hold(self)

    def _release_native(self):
        self._plan = self._ctx = _Released(type(self).__name__)

    def explain(self):
        """The plan's config as a dict (op, source: tuned / predicted / default, params) plus its text."""
        d = json.loads(self._plan.config_json()) if hasattr(self._plan, "config_json") else {"op": self._op}
        d["text"] = self._plan.explain()
        return d

    def __repr__(self):
        return f"<dbsparse {type(self).__name__} {self._plan.explain().splitlines()[0]}>"


class SpmvPlan(_Plan):
    """y = alpha * A @ x + beta * y with adaptive CSR. Example::

        plan = dbsparse.plan_spmv(A)          # SciPy / torch / CuPy sparse matrix
        y = plan(x)                           # x: a CUDA tensor/array of A.shape[1] values
        plan(x, out=y, alpha=2.0, beta=1.0)   # y = 2 A x + y, in place

    Streams: a plan whose calls write state of its own (plan.shares_call_state: A's columns in
    degree order keep a copy of x, split long rows keep partial sums) must not run on two streams
    at once; give each concurrent stream its own plan, or plan with reorder="none".
    """

    def explain(self):
        d = super().explain()
        p = self._plan
        d.update(columns_reordered=p.columns_reordered, reorder_ms=p.reorder_ms,
                 shares_call_state=p.shares_call_state)
        return d

    @property
    def shares_call_state(self):
        """True when calls write plan-owned device state: one stream at a time (see the class doc)."""
        return self._plan.shares_call_state

    def __call__(self, x, out=None, alpha=1.0, beta=0.0, stream=None):
        p = self._plan
        xa = arr.device_array(x, "x")
        arr.check("x", xa, (p.cols,), self.dtype, self.device)
        alpha, beta = arr.real("alpha", alpha), arr.real("beta", beta)
        if out is None:
            out = arr.empty((p.rows,), self.dtype, xa[4], xa[3])
        ya = arr.device_array(out, "out")
        arr.check("out", ya, (p.rows,), self.dtype, self.device)
        arr.disjoint("out", ya, ("x", xa))
        self._ctx.make_current()
        p.run(xa[0], ya[0], arr.stream_of(stream, xa[4], xa[3]), alpha, beta)
        return out

    @property
    def shape(self):
        return (self._plan.rows, self._plan.cols)


_INT32_MAX = 2**31 - 1


def _takes_offsets64(a, offsets64):
    """Whether A goes the 64-bit way: a torch or CuPy CUDA CSR past 2^31 - 1 entries, or offsets64=True."""
    nnz = mat.device_nnz(a)
    return bool(offsets64 or (offsets64 is None and nnz is not None and nnz > _INT32_MAX))


def _device_csr64(a, op, device, values=True):
    """A's arrays for the 64-bit way (mat.device_csr with int64 indptr) and the CUDA device they are on,
    which `device`, when given, must name."""
    d = mat.device_csr(a, "A", op, indptr64=True, values=values)
    if d is None:
        raise UsageError("A: 64-bit offsets need a torch or CuPy CSR matrix on the GPU")
    dev = d[9] if device is None else int(device)
    if dev != d[9]:
        raise UsageError(f"device: A is on CUDA device {d[9]}, not {dev}")
    return d, dev


def plan_spmv(a, dtype=None, device=None, offsets64=None, reorder=None):
    """Plans SpMV for A (a SciPy, CuPy or torch sparse matrix; analysed once on the host). dtype:
    'f32' or 'f64' (default: A's).

    reorder: None for the tuning DB's choice (by default 'auto': A's columns in degree order where
    a few columns hold many entries and x is past L1, with x gathered into that order each call);
    'none', 'degree' or 'auto' replace it and keep the rest of the tuned config. A, x and y stay as
    given either way; plan.explain() says whether the columns were reordered and the host ms.

    A torch or CuPy CSR matrix already on the GPU with more than 2^31 - 1 entries (past what the
    host path's int32 offsets hold) is planned in place with 64-bit row offsets: its values are read
    where they are, its column indices narrowed to int32 once (a copy the plan keeps), and the plan
    keeps the matrix alive. offsets64=True takes that path at any size, False never."""
    if reorder not in (None, "none", "degree", "auto"):
        raise UsageError(f"reorder: none, degree or auto (None: the tuning DB's), got {reorder!r}")
    if _takes_offsets64(a, offsets64):
        if reorder == "degree":
            raise UsageError("reorder: a device matrix with 64-bit offsets is planned in place, without a column "
                             "order (degree needs A on the host)")
        d, dev = _device_csr64(a, "SpMV", device)
        if dtype is not None and dtype != d[8]:
            raise UsageError(f"dtype: a device matrix is read in place, so dtype must be its own ({d[8]}), got {dtype}")
        ctx = context(dev)
        p = (_core.plan_spmv_view64F32 if d[8] == "f32" else _core.plan_spmv_view64F64)(ctx, *d[:6])
        plan = SpmvPlan("spmv", p, ctx, dev)
        plan.dtype, plan._keep = d[8], d[6]
        return plan
    dt = dtype or mat.value_dtype(a)
    if dt not in ("f32", "f64"):
        raise UsageError(f"dtype: SpMV takes f32 or f64, got {dt}")
    ctx = context(_dev(device))
    p = (_core.plan_spmvF32 if dt == "f32" else _core.plan_spmvF64)(ctx, mat.host_csr(a, dt), reorder or "")
    plan = SpmvPlan("spmv", p, ctx, _dev(device))
    plan.dtype = dt
    return plan


def spmv(a, x, out=None, alpha=1.0, beta=0.0, stream=None):
    """y = alpha A x + beta y, planning A each call (keep a plan_spmv for repeated calls)."""
    return plan_spmv(a, dtype=arr.device_array(x, "x")[2])(x, out, alpha, beta, stream)


class SpmspvPlan(_Plan):
    """y = A @ x for a sparse x (DB format, push or pull chosen on the GPU per call). Example::

        plan = dbsparse.plan_spmspv(A)
        y = plan(x)                                   # dense x, zeros inactive
        y = plan(indices=idx, values=vals)            # x as int32 indices + values
    """

    def __call__(self, x=None, out=None, *, indices=None, values=None, stream=None):
        p = self._plan
        if (x is None) == (indices is None):
            raise UsageError("give either x (dense) or indices and values (sparse)")
        if x is not None:
            xa = arr.device_array(x, "x")
            arr.check("x", xa, (p.cols,), self.dtype, self.device)
            ia = va = None
            fw, dev = xa[4], xa[3]
        else:
            if values is None:
                raise UsageError("indices given without values")
            ia, va = arr.device_array(indices, "indices"), arr.device_array(values, "values")
            if len(ia[1]) != 1 or ia[2] != "i32":
                raise UsageError(f"indices: expected a 1-D int32 array, got shape {ia[1]} {ia[2]}")
            arr.check("values", va, ia[1], self.dtype, self.device)
            arr.check("indices", ia, ia[1], "i32", self.device)
            xa = None
            fw, dev = ia[4], ia[3]
        if out is None:
            out = arr.empty((p.rows,), self.dtype, fw, dev)
        ya = arr.device_array(out, "out")
        arr.check("out", ya, (p.rows,), self.dtype, self.device)
        arr.disjoint("out", ya, ("x", xa), ("indices", ia), ("values", va))
        s = arr.stream_of(stream, fw, dev)
        self._ctx.make_current()
        if x is not None:
            p.run(xa[0], ya[0], s)
        else:
            p.run_sparse(ia[0], va[0], ia[1][0], ya[0], s)
        return out


def plan_spmspv(a, dtype=None, direction="auto", device=None):
    """Plans SpMSpV for A (DB format). direction: 'auto' (per call, on the GPU), 'push' or 'pull'."""
    if direction not in ("auto", "push", "pull"):
        raise UsageError(f"direction: expected auto, push or pull, got {direction!r}")
    dt = dtype or mat.value_dtype(a)
    if dt not in ("f32", "f64"):
        raise UsageError(f"dtype: SpMSpV takes f32 or f64, got {dt}")
    ctx = context(_dev(device))
    p = (_core.plan_spmspvF32 if dt == "f32" else _core.plan_spmspvF64)(ctx, mat.host_csr(a, dt), direction)
    plan = SpmspvPlan("spmspv", p, ctx, _dev(device))
    plan.dtype = dt
    return plan


def spmspv(a, x=None, *, indices=None, values=None, out=None, stream=None):
    """y = A x for a sparse x, planning A each call (keep a plan_spmspv for repeated calls)."""
    probe = x if x is not None else values
    return plan_spmspv(a, dtype=arr.device_array(probe, "x")[2])(x, out, indices=indices, values=values, stream=stream)


class SpmmPlan(_Plan):
    """C = alpha * A @ B + beta * C for B with n_cols columns (row-major). Example::

        plan = dbsparse.plan_spmm(A, 64)              # f32; dtype='f16' / 'bf16' for Tensor-Core inputs
        C = plan(B)                                   # B: (A.shape[1], 64) CUDA tensor
    """

    def __call__(self, b, out=None, alpha=1.0, beta=0.0, stream=None, arg=None):
        """C = alpha * reduce(A, B) + beta * C. arg (max / min plans only): an int32 device array of
        shape (rows, n_cols) that gets, for each entry of C, the index of A's CSR entry that won (the
        lowest on ties; -1 for an empty row)."""
        p = self._plan
        ba = arr.device_array(b, "B")
        arr.check("B", ba, (p.cols, p.n_cols), self.dtype, self.device)
        alpha, beta = arr.real("alpha", alpha), arr.real("beta", beta)
        if out is None:
            out = arr.empty((p.rows, p.n_cols), self.dtype, ba[4], ba[3])
        ca = arr.device_array(out, "out")
        arr.check("out", ca, (p.rows, p.n_cols), self.dtype, self.device)
        arr.disjoint("out", ca, ("B", ba))
        arg_ptr = 0
        if arg is not None:
            if self.reduce not in ("max", "min"):
                raise UsageError(f"arg: only a max or min plan writes it (this plan's reduce is {self.reduce})")
            aa = arr.device_array(arg, "arg")
            arr.check("arg", aa, (p.rows, p.n_cols), "i32", self.device)
            arr.disjoint("arg", aa, ("B", ba), ("out", ca))
            arg_ptr = aa[0]
        self._ctx.make_current()
        stream = arr.stream_of(stream, ba[4], ba[3])
        if arg_ptr:
            p.run_arg(ba[0], ca[0], arg_ptr, stream, alpha, beta)
        else:
            p.run(ba[0], ca[0], stream, alpha, beta)
        return out

    @property
    def reduce(self):
        """'sum', 'mean', 'max' or 'min': how each row's products are combined."""
        return getattr(self._plan, "reduce", "sum")

    def explain(self):
        return {"op": "spmm", "path": self._plan.path, "dtype": self._plan.dtype, "reorder": self._plan.reorder,
                "reorder_ms": self._plan.reorder_ms, "epilogue": self._plan.epilogue,
                "epilogue_fused": self._plan.epilogue_fused, "reduce": self.reduce, "text": self._plan.explain()}


def plan_spmm(a, n_cols, dtype="f32", path="auto", device=None, reorder=None, offsets64=None, epilogue=None,
              reduce="sum"):
    """Plans SpMM for A and B of n_cols columns. dtype: 'f32', 'f16' or 'bf16' (B's and C's);
    path: 'auto', 'brp', 'csr' or 'condensed'. reorder: the order the CSR path's warps take A's rows
    in (None or 'auto': the tuning DB's, by default auto, the degree order where row lengths vary;
    'none'; 'degree': by decreasing length; 'rcm' or 'community': square A only). A, B and C stay
    as given, and plan.explain() gives the ordering's host time.

    epilogue: None (or 'none'), or 'relu': every call then writes C = max(alpha A B + beta C, 0)
    (NaN kept), a GNN layer's activation without a pass of its own over C where the plan can fuse
    it (the CSR path; plan.epilogue_fused says), else in a pass after the product.

    A float32 torch or CuPy CSR matrix on the GPU with more than 2^31 - 1 entries is planned in
    place with 64-bit row offsets (the CSR path, f32; the column indices narrowed to int32 once, a
    copy the plan keeps; the degree order, where asked or auto picks it, made on the GPU; rcm and
    community need the host path); offsets64=True takes that path at any size, False never.

    reduce: how row i's products a_e * B[col(e), j] combine into C[i, j]: 'sum' (the product),
    'mean' (the sum over the row's length), 'max' or 'min'; an empty row gives 0 (as torch_scatter
    and PyG). Not 'sum' takes the CSR path (path 'brp' or 'condensed' is a UsageError) and the
    32-bit offsets; a max / min plan's call can also write which entry won (arg=)."""
    if dtype not in ("f32", "f16", "bf16"):
        raise UsageError(f"dtype: SpMM takes f32, f16 or bf16, got {dtype!r}")
    if reorder not in (None, "auto", "none", "degree", "rcm", "community"):
        raise UsageError(f"reorder: auto, none, degree, rcm or community, got {reorder!r}")
    if epilogue not in (None, "none", "relu"):
        raise UsageError(f"epilogue: none or relu, got {epilogue!r}")
    epilogue = epilogue or "none"
    if reduce not in ("sum", "mean", "max", "min"):
        raise UsageError(f"reduce: sum, mean, max or min, got {reduce!r}")
    if reduce != "sum" and path in ("brp", "condensed"):
        raise UsageError(f"reduce {reduce} runs on the CSR path only, not path={path!r}")
    if _takes_offsets64(a, offsets64):
        if reduce != "sum":
            raise UsageError(f"reduce {reduce}: with 64-bit offsets only the sum (offsets64=False for the others)")
        d, dev = _device_csr64(a, "SpMM", device)
        if d[8] != "f32" or dtype != "f32":
            raise UsageError(f"dtype: SpMM with 64-bit offsets takes f32 (A is {d[8]}, dtype {dtype})")
        if reorder not in (None, "auto", "none", "degree"):
            raise UsageError(f"reorder {reorder}: with 64-bit offsets the order is made on the GPU: none, degree or auto")
        ctx = context(dev)
        plan = SpmmPlan("spmm", _core.plan_spmm_view64(ctx, *d[:6], int(n_cols), path,
                                                       "config" if reorder in (None, "auto") else reorder, epilogue),
                        ctx, dev)
        plan.dtype, plan._keep = "f32", d[6]
        return plan
    ctx = context(_dev(device))
    core = _core.plan_spmm(ctx, mat.host_csr(a, "f32"), int(n_cols), dtype, path,
                           "config" if reorder in (None, "auto") else reorder, epilogue, reduce)
    plan = SpmmPlan("spmm", core, ctx, _dev(device))
    plan.dtype = dtype
    return plan


def spmm(a, b, out=None, alpha=1.0, beta=0.0, stream=None, epilogue=None, reduce=None):
    """C = A B (epilogue='relu': max(A B, 0)), planning A each call (keep a plan_spmm for repeated calls).

    With a dbsparse.Graph as A, a `reduce` ('sum', 'mean', 'max', 'min'), a B that requires grad or
    a CPU torch tensor B, this is dbsparse.gnn.spmm: differentiable, a torch custom op, returning a
    new tensor (out, alpha, beta, stream and epilogue are not taken there)."""
    if _gnn_call(a, b, reduce):
        given = [k for k, v, d in (("out", out, None), ("alpha", alpha, 1.0), ("beta", beta, 0.0), ("stream", stream, None),
                                   ("epilogue", epilogue, None)) if v != d]
        if given:
            raise UsageError(f"{', '.join(given)}: not taken by the differentiable spmm (a Graph, reduce= or a "
                             "tensor that requires grad); use plan_spmm for them")
        from .gnn import spmm as gnn_spmm
        return gnn_spmm(a, b, reduce or "sum")
    ba = arr.device_array(b, "B")
    if len(ba[1]) != 2:
        raise UsageError(f"B: expected a 2-D array, got shape {ba[1]}")
    return plan_spmm(a, ba[1][1], dtype=ba[2], epilogue=epilogue)(b, out, alpha, beta, stream)


def _gnn_call(a, b, reduce):
    """Whether spmm(a, b) is the differentiable torch op: a Graph, a reduce, or a torch B that
    requires grad (grad mode on) or lives on the CPU."""
    if reduce is not None:
        return True
    gnn = sys.modules.get("dbsparse.gnn._graph")
    if gnn is not None and gnn.is_graph(a):
        return True
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(b, torch.Tensor) or b.layout != torch.strided:
        return False
    return (b.requires_grad and torch.is_grad_enabled()) or b.device.type == "cpu"


class BfsPlan(_Plan):
    """Breadth-first search from a source vertex (DB-BFS, direction-optimising). Example::

        plan = dbsparse.plan_bfs(G)
        levels = plan(0)                          # int32, -1 where unreached
        levels, parents = plan(0, parents=True)
    """

    def __call__(self, source, parents=False, out=None, stream=None, framework=None):
        p = self._plan
        n = p.vertices
        if out is None:
            lv = arr.empty((n,), "i32", framework, self.device)
            pa = arr.empty((n,), "i32", framework, self.device) if parents else None
        else:
            lv, pa = (out if isinstance(out, tuple) else (out, None))
        source = arr.vertex("source", source)
        if not 0 <= source < n:
            raise UsageError(f"source: {source} is not a vertex (the graph has {n})")
        la = arr.device_array(lv, "levels")
        arr.check("levels", la, (n,), "i32", self.device)
        pptr = 0
        if pa is not None:
            paa = arr.device_array(pa, "parents")
            arr.check("parents", paa, (n,), "i32", self.device)
            arr.disjoint("parents", paa, ("levels", la))
            pptr = paa[0]
        self._ctx.make_current()
        p.run(source, la[0], pptr, arr.stream_of(stream, la[4], la[3]))
        return (lv, pa) if pa is not None else lv


def plan_bfs(a, transpose=False, device=None, offsets64=None, transposed=None):
    """Plans BFS on the graph of A (square; A[u, v] != 0 is an edge v -> u unless transpose).

    A torch or CuPy CSR matrix on the GPU with more than 2^31 - 1 entries is searched in place with
    64-bit row offsets (offsets64=True: at any size, False: never). That path reads A's pattern
    only, with columns sorted in each row, and checks it on the GPU first: A must be symmetric, or
    `transposed` must be A's transpose as a CSR matrix on the same device. The plan keeps both alive."""
    if _takes_offsets64(a, offsets64):
        d, dev = _device_csr64(a, "BFS", device, values=False)
        if d[0] != d[1]:
            raise UsageError(f"A: the adjacency matrix must be square, is {d[0]}x{d[1]}")
        dt = None
        if transposed is not None:
            dt = mat.device_csr(transposed, "transposed", "BFS", indptr64=True, values=False)
            if dt is None:
                raise UsageError("transposed: expected a torch or CuPy CSR matrix on the GPU, like A")
            if dt[9] != d[9]:
                raise UsageError(f"transposed: on CUDA device {dt[9]}, A on {d[9]}")
            if (dt[0], dt[1], dt[2]) != (d[1], d[0], d[2]):
                raise UsageError(f"transposed: {dt[0]}x{dt[1]} with {dt[2]} entries; A's transpose is {d[1]}x{d[0]} "
                                 f"with {d[2]}")
        ctx = context(dev)
        core = _core.plan_bfs_view64(ctx, d[0], d[2], d[3], d[4], dt[0] if dt else 0, dt[2] if dt else 0,
                                     dt[3] if dt else 0, dt[4] if dt else 0, bool(transpose))
        plan = BfsPlan("bfs", core, ctx, dev)
        plan._keep = (d[6], dt[6] if dt else None)
        return plan
    if transposed is not None:
        raise UsageError("transposed: only for a graph on the GPU with 64-bit offsets (the host path transposes A itself)")
    ctx = context(_dev(device))
    return BfsPlan("bfs", _core.plan_bfs(ctx, mat.host_csr(a, "f32"), transpose), ctx, _dev(device))


def bfs(a, source, parents=False, framework=None):
    """Levels (and parents) of a BFS from `source` as int32 device arrays (framework: 'torch' or
    'cupy'; default whichever is imported, torch first); planning A each call."""
    return plan_bfs(a)(source, parents=parents, framework=framework)


class SddmmPlan(_Plan):
    """out[e] = alpha * dot(X[row(e), :], Y[col(e), :]) for each stored entry e of A (in CSR order),
    times A's value with scale_by_values. Example::

        plan = dbsparse.plan_sddmm(A, 64)            # X: (A.shape[0], 64), Y: (A.shape[1], 64)
        vals = plan(X, Y)                           # a new (A.nnz,) array in X's framework and dtype
    """

    def __call__(self, x, y, out=None, alpha=1.0, stream=None):
        p = self._plan
        xa = arr.device_array(x, "X")
        arr.check("X", xa, (p.rows, p.k), self.dtype, self.device)
        ya = arr.device_array(y, "Y")
        arr.check("Y", ya, (p.cols, p.k), self.dtype, self.device)
        alpha = arr.real("alpha", alpha)
        if out is None:
            out = arr.empty((p.nnz,), self.dtype, xa[4], xa[3])
        oa = arr.device_array(out, "out")
        arr.check("out", oa, (p.nnz,), self.dtype, self.device)
        arr.disjoint("out", oa, ("X", xa), ("Y", ya))
        self._ctx.make_current()
        p.run(xa[0], ya[0], oa[0], arr.stream_of(stream, xa[4], xa[3]), alpha)
        return out

    @property
    def shape(self):
        return (self._plan.rows, self._plan.cols)

    def explain(self):
        return {"op": "sddmm", "dtype": self._plan.dtype, "k": self._plan.k, "nnz": self._plan.nnz,
                "scale_by_values": self._plan.scale_by_values, "text": self._plan.explain()}


def plan_sddmm(a, k, dtype="f32", device=None, scale_by_values=False):
    """Plans SDDMM on A's pattern for X (A.shape[0] x k) and Y (A.shape[1] x k), row-major, k = 1 ..
    512: plan(X, Y) returns out with out[e] = dot(X[row(e)], Y[col(e)]) for each stored entry of A
    in CSR order (SciPy's / torch's order of A's values), times A's value with scale_by_values.
    dtype: 'f32', 'f16' or 'bf16' (X's, Y's and out's; the dot is summed in f32)."""
    if dtype not in ("f32", "f16", "bf16"):
        raise UsageError(f"dtype: SDDMM takes f32, f16 or bf16, got {dtype!r}")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= int(k) <= 512:
        raise UsageError(f"k: an integer in 1 .. 512, got {k!r}")
    if not isinstance(scale_by_values, bool):
        raise UsageError(f"scale_by_values: True or False, got {scale_by_values!r}")
    host = mat.host_csr(a, "f32")  # A's errors before the device's
    ctx = context(_dev(device))
    core = _core.plan_sddmm(ctx, host, int(k), dtype, scale_by_values)
    plan = SddmmPlan("sddmm", core, ctx, _dev(device))
    plan.dtype = dtype
    return plan

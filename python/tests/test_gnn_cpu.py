"""dbsparse.gnn on the CPU: the PyTorch path and, through a host stand-in for the kernels' plans
(plan_spmm with reduce/arg and plan_sddmm as the bindings state them), the code that drives the
kernels: forward of every reduction against a per-row loop, gradcheck in float64 for X and for the
values (empty rows, both sides), ties for max/min, half dtypes, plan caching, torch.compile,
Graph inputs, dbsparse.spmm's routing. Needs torch, not a GPU."""
import gc
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch")

import dbsparse  # noqa: E402
from dbsparse import UsageError  # noqa: E402
from dbsparse.gnn import Graph, _graph, _op  # noqa: E402

REDUCTIONS = ("sum", "mean", "max", "min")


def small(seed=0, rows=9, cols=7, density=0.35):
    """A SciPy CSR matrix with empty rows (2 and 6) and an empty column (3), float64 values."""
    rng = np.random.default_rng(seed)
    d = (rng.random((rows, cols)) < density) * rng.uniform(0.5, 2.0, (rows, cols)) * rng.choice([-1, 1], (rows, cols))
    d[2, :] = d[6, :] = 0
    d[:, 3] = 0
    d[0, 0] = 1.25  # row 0 never empty
    return sp.csr_matrix(d)


def loop_ref(a, x, reduce):
    """Per-row loop over A's entries (CSR order): out and, for max/min, the winning entry (the
    first of equal products; -1 for an empty row). float64."""
    a = a.tocsr()
    x = x.detach().double().numpy()
    out = np.zeros((a.shape[0], x.shape[1]))
    arg = np.full((a.shape[0], x.shape[1]), -1)
    for i in range(a.shape[0]):
        lo, hi = a.indptr[i], a.indptr[i + 1]
        for f in range(x.shape[1]):
            prods = [a.data[e] * x[a.indices[e], f] for e in range(lo, hi)]
            if not prods:
                continue
            if reduce == "sum":
                out[i, f] = sum(prods)
            elif reduce == "mean":
                out[i, f] = sum(prods) / len(prods)
            else:
                best = max(prods) if reduce == "max" else min(prods)
                k = prods.index(best)
                out[i, f], arg[i, f] = best, lo + k
    return torch.from_numpy(out), torch.from_numpy(arg)


class HostSpmmPlan:
    """The bindings' SpMM plan on the host: plan(b, out=None, alpha, beta, stream, arg). Ties go to
    the LAST equal entry, unlike the PyTorch path, so tests see that backward follows `arg`."""

    def __init__(self, a, n_cols, dtype, reduce):
        assert dtype in ("f32", "f16", "bf16") and reduce in REDUCTIONS
        self.a, self.n_cols, self.dtype, self.reduce = a, n_cols, dtype, reduce

    def __call__(self, b, out=None, alpha=1.0, beta=0.0, stream=None, arg=None):
        a = self.a
        assert tuple(b.shape) == (a.shape[1], self.n_cols) and b.is_contiguous()
        assert {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[self.dtype] == b.dtype
        if self.reduce in ("max", "min"):
            assert arg is not None and arg.dtype == torch.int32 and tuple(arg.shape) == (a.shape[0], self.n_cols)
        bf = b.double().numpy()
        res = np.zeros((a.shape[0], self.n_cols))
        win = np.full((a.shape[0], self.n_cols), -1)
        for i in range(a.shape[0]):
            lo, hi = a.indptr[i], a.indptr[i + 1]
            if lo == hi:
                continue
            prods = a.data[lo:hi, None].astype(np.float64) * bf[a.indices[lo:hi]]
            if self.reduce == "sum":
                res[i] = prods.sum(0)
            elif self.reduce == "mean":
                res[i] = prods.mean(0)
            else:
                pick = prods[::-1].argmax(0) if self.reduce == "max" else prods[::-1].argmin(0)
                k = hi - 1 - pick
                res[i], win[i] = prods[k - lo, np.arange(self.n_cols)], k
        r = torch.from_numpy(alpha * res).to(b.dtype)
        out = r if out is None else out.copy_(r + beta * out if beta else r)
        if arg is not None:
            arg.copy_(torch.from_numpy(win))
        return out


class HostSddmmPlan:
    def __init__(self, a, k, dtype):
        self.a, self.k, self.dtype = a.tocoo(), k, dtype

    def __call__(self, x, y, out=None, alpha=1.0):
        assert x.shape[1] == y.shape[1] == self.k
        c = self.a
        # CSR order: tocoo of a canonical CSR keeps it
        r = alpha * (x.double()[torch.from_numpy(c.row.astype(np.int64))]
                     * y.double()[torch.from_numpy(c.col.astype(np.int64))]).sum(1)
        return r.float() if out is None else out.copy_(r)


@pytest.fixture
def host_kernels(monkeypatch):
    """Graphs take the kernels' path on the CPU, with host stand-in plans; returns the plans made."""
    made = []

    def plan_spmm(host, n_cols, dtype, reduce, device, path):
        made.append(("spmm", n_cols, dtype, reduce, host.shape))
        return HostSpmmPlan(host, n_cols, dtype, reduce)

    def plan_sddmm(host, k, dtype, device):
        made.append(("sddmm", k, dtype, host.shape))
        return HostSddmmPlan(host, k, dtype)

    monkeypatch.setattr(_graph, "_plan_spmm", plan_spmm)
    monkeypatch.setattr(_graph, "_plan_sddmm", plan_sddmm)
    monkeypatch.setattr(_graph.Graph, "uses_kernels", lambda self, x, max_cols=_graph.SPMM_MAX_COLS:
                        x.dtype in _graph._KERNEL_DTYPES and self.nnz > 0 and 0 < x.shape[1] <= max_cols)
    return made


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("transpose", [False, True])
def test_forward_of_every_reduction_equals_the_per_row_loop(reduce, transpose):
    a = small(1)
    ref_a = a.T.tocsr() if transpose else a
    x = torch.randn(ref_a.shape[1], 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    want, want_arg = loop_ref(ref_a, x, reduce)
    g = Graph(a)
    got = dbsparse.spmm(g, x, reduce=reduce) if not transpose else dbsparse.gnn.spmm(g, x, reduce, transpose=True)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert (got[[2, 6]] == 0).all() if not transpose else (got[3] == 0).all()  # empty rows give 0
    if reduce in ("max", "min"):
        _, arg = _op.gnn_spmm(x, g.values, g.handle, g.side(transpose).rows, reduce, transpose)
        # on Aᵀ the arg names Aᵀ's entries: the loop's entry is in ref_a's (= Aᵀ's canonical CSR) order
        assert torch.equal(arg.long(), want_arg)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_float32_float16_bfloat16_keep_their_dtype_and_match(reduce):
    a = small(2)
    x = torch.randn(7, 16, generator=torch.Generator().manual_seed(2))
    want, _ = loop_ref(a, x, reduce)
    g = Graph(a.astype(np.float32))
    for dt, tol in ((torch.float32, 1e-5), (torch.float16, 1e-2), (torch.bfloat16, 2e-2)):
        xd = x.to(dt).detach().clone().requires_grad_()
        got = dbsparse.spmm(g, xd, reduce=reduce)
        assert got.dtype == dt
        want_d, _ = loop_ref(a, xd.detach(), reduce)
        torch.testing.assert_close(got.double(), want_d, rtol=tol, atol=tol * 4)
        got.float().sum().backward()
        assert xd.grad.dtype == dt and xd.grad.shape == xd.shape


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("transpose", [False, True])
def test_gradcheck_x_and_values_float64(reduce, transpose):
    g = Graph(small(3))
    g.values.requires_grad_()
    x = torch.randn(g.side(transpose).cols, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3),
                    requires_grad=True)
    f = lambda x, v: dbsparse.gnn.spmm(g, x, reduce, transpose=transpose)  # noqa: E731 - v is g.values
    assert torch.autograd.gradcheck(f, (x, g.values), eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_gradcheck_through_edge_index_edge_weights(reduce):
    """An edge_index's edges are reordered to CSR: the weights' gradient comes back in edge order."""
    rng = np.random.default_rng(4)
    ei = torch.from_numpy(rng.integers(0, 8, (2, 20)))
    ei[:, 5] = ei[:, 6]  # a repeated edge: two entries, each with its own weight
    w = torch.from_numpy(rng.uniform(0.5, 1.5, 20)).requires_grad_()
    x = torch.randn(10, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4), requires_grad=True)
    f = lambda x, w: dbsparse.spmm(Graph(ei, edge_weight=w, num_nodes=10), x, reduce=reduce)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x, w), eps=1e-6, atol=1e-7)


def test_sum_gradients_are_the_hand_worked_ones():
    # A = [[2, 0, 3], [0, 0, 0], [0, 5, 0]]; out = A X; L = sum(out * G)
    a = sp.csr_matrix(np.array([[2.0, 0, 3], [0, 0, 0], [0, 5, 0]]))
    g = Graph(a)
    g.values.requires_grad_()
    x = torch.tensor([[1.0, 2], [3, 4], [5, 6]], dtype=torch.float64, requires_grad=True)
    G = torch.tensor([[1.0, -1], [7, 7], [2, 0.5]], dtype=torch.float64)
    (dbsparse.spmm(g, x) * G).sum().backward()
    # dX = Aᵀ G; da_e = dot(G[row], X[col])
    assert torch.equal(x.grad, torch.tensor([[2.0, -2], [10, 2.5], [3, -3]], dtype=torch.float64))
    assert torch.equal(g.values.grad, torch.tensor([1.0 * 1 - 2, 5 - 6, 2 * 3 + 0.5 * 4], dtype=torch.float64))


@pytest.mark.parametrize("kernels", [False, True])
def test_max_ties_send_the_gradient_to_the_one_winner_the_forward_picked(kernels, request):
    made = request.getfixturevalue("host_kernels") if kernels else None
    # row 0: entries 0 and 1 give equal products 2*3 = 3*2; row 1 empty; row 2: one entry
    a = sp.csr_matrix((np.array([2.0, 3.0, 4.0], np.float32), np.array([0, 1, 0]), np.array([0, 2, 2, 3])),
                      shape=(3, 2))
    g = Graph(a)
    g.values.requires_grad_()
    x = torch.tensor([[3.0], [2.0]], requires_grad=True)
    out, arg = _op.gnn_spmm(x, g.values, g.handle, 3, "max", False)
    first_wins = not kernels  # the PyTorch path: the first equal entry; the stand-in: the last
    assert arg.flatten().tolist() == ([0, -1, 2] if first_wins else [1, -1, 2])
    out = dbsparse.spmm(g, x, reduce="max")
    assert out.flatten().tolist() == [6.0, 0.0, 12.0]
    out.sum().backward()
    if first_wins:  # winner entry 0 (a=2, col 0) and entry 2 (a=4, col 0)
        assert x.grad.flatten().tolist() == [6.0, 0.0]
        assert g.values.grad.tolist() == [3.0, 0.0, 3.0]
    else:  # winner entry 1 (a=3, col 1) and entry 2
        assert x.grad.flatten().tolist() == [4.0, 3.0]
        assert g.values.grad.tolist() == [0.0, 2.0, 3.0]
    if kernels:
        assert ("spmm", 1, "f32", "max", (3, 2)) in made


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("transpose", [False, True])
def test_kernel_path_with_host_plans_equals_the_pytorch_path(host_kernels, reduce, transpose):
    a = small(5).astype(np.float32)
    x = torch.randn(a.shape[0] if transpose else a.shape[1], 6, generator=torch.Generator().manual_seed(5))
    gk, gr = Graph(a), Graph(a)
    gk.values.requires_grad_()
    gr.values.requires_grad_()
    xk, xr = x.clone().requires_grad_(), x.clone().requires_grad_()
    yk = dbsparse.gnn.spmm(gk, xk, reduce, transpose=transpose)
    G = torch.randn(yk.shape, generator=torch.Generator().manual_seed(6))
    (yk * G).sum().backward()
    yr = dbsparse.gnn.spmm(gr, xr.double(), reduce, transpose=transpose)
    # the reference: the PyTorch path (scatter-based) in float64
    dxr, dvr = torch.autograd.grad((yr * G.double()).sum(), (xr, gr.values))
    torch.testing.assert_close(yk.double(), yr, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(xk.grad.double(), dxr.double(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gk.values.grad.double(), dvr.double(), rtol=1e-5, atol=1e-5)
    kinds = {m[0] for m in host_kernels}
    assert "spmm" in kinds and (reduce in ("max", "min") or "sddmm" in kinds)


def test_plans_are_made_once_and_again_when_the_values_change(host_kernels):
    a = small(6).astype(np.float32)
    g = Graph(a)
    w = torch.nn.Parameter(g.values)  # the same storage: an optimizer writes it in place
    g._src = w
    x = torch.randn(7, 8, requires_grad=True)
    for _ in range(3):
        dbsparse.spmm(g, x, reduce="mean").sum().backward()
    assert sorted(host_kernels) == sorted([("spmm", 8, "f32", "mean", (9, 7)), ("spmm", 8, "f32", "sum", (7, 9)),
                                           ("sddmm", 8, "f32", (9, 7))])
    with torch.no_grad():
        w.mul_(2.0)
    host_kernels.clear()
    y = dbsparse.spmm(g, x, reduce="sum")
    assert host_kernels == [("spmm", 8, "f32", "sum", (9, 7))]
    torch.testing.assert_close(y.double(), loop_ref(sp.csr_matrix((a.data * 2, a.indices, a.indptr), a.shape),
                                                    x, "sum")[0], rtol=1e-5, atol=1e-5)


class TwoLayers(torch.nn.Module):
    def __init__(self, g, reduce):
        super().__init__()
        self.g, self.reduce = g, reduce
        torch.manual_seed(7)
        self.l1, self.l2 = torch.nn.Linear(5, 8), torch.nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(dbsparse.spmm(self.g, self.l1(x), reduce=self.reduce))
        return dbsparse.spmm(self.g, self.l2(h), reduce=self.reduce)


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("kernels", [False, True])
def test_torch_compile_fullgraph_forward_and_backward_equal_eager(reduce, kernels, request):
    if kernels:
        request.getfixturevalue("host_kernels")
    a = sp.random(12, 12, density=0.3, format="csr", dtype=np.float32, random_state=np.random.default_rng(8))
    g = Graph(a)
    g.values.requires_grad_()
    model = TwoLayers(g, reduce)
    x = torch.randn(12, 5, generator=torch.Generator().manual_seed(8))
    eager = model(x)
    eager.square().sum().backward()
    want = [p.grad.clone() for p in (model.l1.weight, g.values)]
    model.zero_grad()
    g.values.grad = None
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    got = compiled(x)
    got.square().sum().backward()
    torch.testing.assert_close(got, eager)
    for p, w in zip((model.l1.weight, g.values), want):
        torch.testing.assert_close(p.grad, w)


def test_graph_from_every_input_kind_is_the_same_csr():
    a = small(9).astype(np.float32)
    coo = a.tocoo()
    rows, cols = torch.from_numpy(coo.row.astype(np.int64)), torch.from_numpy(coo.col.astype(np.int64))
    vals = torch.from_numpy(coo.data)
    shuffle = torch.randperm(vals.numel(), generator=torch.Generator().manual_seed(9))
    sq = sp.csr_matrix((a.data, a.indices, a.indptr), shape=a.shape)
    sq.resize(9, 9)  # an edge_index is square: num_nodes 9
    inputs = {
        "scipy": Graph(sq),
        "scipy_coo_unsorted": Graph(sp.coo_matrix((coo.data[shuffle.numpy()], (coo.row[shuffle.numpy()],
                                                                               coo.col[shuffle.numpy()])), (9, 9))),
        "torch_csr": Graph(torch.sparse_csr_tensor(torch.from_numpy(a.indptr.astype(np.int64)),
                                                   torch.from_numpy(a.indices.astype(np.int64)), vals, size=(9, 9))),
        "torch_coo": Graph(torch.sparse_coo_tensor(torch.stack([rows, cols])[:, shuffle], vals[shuffle], (9, 9))),
        "edge_index": Graph(torch.stack([cols, rows])[:, shuffle], edge_weight=vals[shuffle], num_nodes=9),
    }
    want = inputs["scipy"]
    assert want.shape == (9, 9) and want.nnz == a.nnz
    for name, g in inputs.items():
        assert torch.equal(g.indptr, torch.from_numpy(a.indptr.astype(np.int64))), name
        assert torch.equal(g.indices, torch.from_numpy(a.indices.astype(np.int64))), name
        assert torch.equal(g.values.float(), torch.from_numpy(a.data)), name
        assert torch.equal(g.row_lengths, torch.from_numpy(np.diff(a.indptr)).float()), name
        # Aᵀ and its permutation
        t = g.to_torch(transposed=True).to_dense()
        assert torch.equal(t, g.to_torch().to_dense().T), name
        assert torch.equal(g.values.detach()[g.perm], g.to_torch(transposed=True).values()), name


def test_bad_inputs_are_refused_naming_the_argument():
    with pytest.raises(UsageError, match="edge_index"):
        Graph(torch.zeros(3, 4, dtype=torch.int64))
    with pytest.raises(UsageError, match="num_nodes"):
        Graph(torch.tensor([[0, 5], [1, 2]]), num_nodes=3)
    with pytest.raises(UsageError, match="edge_weight"):
        Graph(torch.tensor([[0, 1], [1, 2]]), edge_weight=torch.ones(3))
    with pytest.raises(UsageError, match="edge_weight and num_nodes"):
        Graph(sp.eye(3, format="csr"), num_nodes=3)
    g = Graph(sp.eye(3, format="csr"))
    with pytest.raises(UsageError, match="reduce"):
        dbsparse.spmm(g, torch.ones(3, 2), reduce="prod")
    with pytest.raises(UsageError, match=r"X: expected \(3, n\)"):
        dbsparse.spmm(g, torch.ones(4, 2))
    with pytest.raises(UsageError, match="floating"):
        dbsparse.spmm(g, torch.ones(3, 2, dtype=torch.int64))
    with pytest.raises(UsageError, match="out"):
        dbsparse.spmm(g, torch.ones(3, 2), out=torch.ones(3, 2))


def test_dbsparse_spmm_routes_cpu_tensors_and_keeps_the_array_api():
    from dbsparse._ops import _gnn_call
    a = small(10).astype(np.float32)
    x = torch.randn(7, 3)
    torch.testing.assert_close(dbsparse.spmm(a, x).double(), loop_ref(a, x, "sum")[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dbsparse.spmm(a, x, reduce="max").double(), loop_ref(a, x, "max")[0], rtol=1e-5,
                               atol=1e-5)

    class CudaArray:  # a CUDA array of another framework: the array API, as before
        __cuda_array_interface__ = {"shape": (7, 3), "typestr": "<f4", "data": (0, False), "version": 3}

    assert not _gnn_call(a, CudaArray(), None)
    assert _gnn_call(a, CudaArray(), "sum")
    with pytest.raises(UsageError, match="host array"):
        dbsparse.spmm(a, np.ones((7, 3), np.float32))


def test_a_vector_x_gives_a_vector():
    a = small(11)
    x = torch.randn(7, dtype=torch.float64)
    torch.testing.assert_close(dbsparse.spmm(Graph(a), x), torch.from_numpy(a @ x.numpy()))


def test_a_freed_graph_leaves_the_registry():
    g = Graph(sp.eye(3, format="csr"))
    h = g.handle
    del g
    gc.collect()
    with pytest.raises(UsageError, match="gone"):
        _op.gnn_spmm(torch.ones(3, 1), torch.ones(3), h, 3, "sum", False)


def test_sddmm_is_the_dot_of_each_entrys_row_and_column():
    a = small(12)
    x = torch.randn(9, 4, dtype=torch.float64)
    y = torch.randn(7, 4, dtype=torch.float64)
    c = a.tocoo()
    want = torch.tensor([2.0 * float(x[i] @ y[j]) for i, j in zip(c.row, c.col)], dtype=torch.float64)
    torch.testing.assert_close(dbsparse.gnn.sddmm(Graph(a), x, y, alpha=2.0), want)


def test_importing_dbsparse_imports_neither_torch_geometric_nor_the_gnn_package():
    code = ("import sys, dbsparse; assert 'torch_geometric' not in sys.modules; "
            "assert 'dbsparse.gnn' not in sys.modules; dbsparse.Graph; import dbsparse.gnn.pyg; "
            "assert 'torch_geometric' not in sys.modules; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_pyg_route_with_a_fake_torch_geometric(monkeypatch):
    """route() patches the module-level spmm of fused layer classes; the product runs through a
    Graph made once per adjacency object; other calls fall back to PyG's function."""
    import types
    from dbsparse.gnn import pyg

    class MessagePassing(torch.nn.Module):
        def message_and_aggregate(self, adj_t, x):
            raise NotImplementedError

    fallback_calls = []

    def pyg_spmm(src, other, reduce="sum"):
        fallback_calls.append(reduce)
        return src.to_dense() @ other

    conv_mod = types.ModuleType("fake_pyg_conv")
    conv_mod.spmm = pyg_spmm

    class Conv(MessagePassing):
        aggr = "add"

        def message_and_aggregate(self, adj_t, x):
            return sys.modules["fake_pyg_conv"].spmm(adj_t, x, reduce=self.aggr)

    class Unfused(MessagePassing):
        pass

    Conv.__module__ = Unfused.__module__ = "fake_pyg_conv"
    tg, tg_nn = types.ModuleType("torch_geometric"), types.ModuleType("torch_geometric.nn")
    tg_nn.MessagePassing = MessagePassing
    tg.nn = tg_nn
    for name, mod in (("torch_geometric", tg), ("torch_geometric.nn", tg_nn), ("fake_pyg_conv", conv_mod)):
        monkeypatch.setitem(sys.modules, name, mod)
    layer = Conv()
    model = torch.nn.Sequential(layer, Unfused())
    a = small(13).astype(np.float32)
    adj = torch.sparse_csr_tensor(torch.from_numpy(a.indptr.astype(np.int64)), torch.from_numpy(a.indices.astype(
        np.int64)), torch.from_numpy(a.data), size=a.shape)
    x = torch.randn(7, 4, requires_grad=True)
    undo = pyg.route(model)
    assert undo.modules == ["fake_pyg_conv"] and conv_mod.spmm is not pyg_spmm
    y1, y2 = layer.message_and_aggregate(adj, x), layer.message_and_aggregate(adj, x)
    torch.testing.assert_close(y1, torch.from_numpy(a.toarray()) @ x)
    assert fallback_calls == [] and pyg.graph_for(adj) is pyg.graph_for(adj)
    y1.sum().backward()
    torch.testing.assert_close(x.grad, torch.from_numpy(a.toarray()).T @ torch.ones(9, 4))
    layer.aggr = "mul"  # not a dbsparse reduction: PyG's own function
    layer.message_and_aggregate(adj, x)
    assert fallback_calls == ["mul"]
    layer.aggr = "mean"

    class FakeSparseTensor:  # torch_sparse.SparseTensor's csr() and sparse_sizes()
        def csr(self):
            return adj.crow_indices(), adj.col_indices(), None

        def sparse_sizes(self):
            return a.shape

    got = layer.message_and_aggregate(FakeSparseTensor(), x)
    torch.testing.assert_close(got.double(), loop_ref(sp.csr_matrix((np.ones_like(a.data), a.indices, a.indptr),
                                                                    a.shape), x, "mean")[0], rtol=1e-5, atol=1e-5)
    undo()
    assert conv_mod.spmm is pyg_spmm


def test_pyg_route_needs_torch_geometric_when_it_is_absent():
    from dbsparse.gnn import pyg
    if "torch_geometric" in sys.modules or __import__("importlib").util.find_spec("torch_geometric") is not None:
        pytest.skip("torch_geometric is installed")
    with pytest.raises(ImportError):
        pyg.route(torch.nn.Linear(2, 2))


def test_a_symmetric_graph_plans_once_for_both_sides(host_kernels):
    a = small(14, rows=8, cols=8).astype(np.float32)
    sym = (a + a.T).tocsr()
    sym.sort_indices()
    x = torch.randn(8, 4, requires_grad=True)
    g = Graph(sym)
    dbsparse.spmm(g, x).sum().backward()
    assert host_kernels == [("spmm", 4, "f32", "sum", (8, 8))]  # Aᵀ = A: the backward reuses A's plan
    torch.testing.assert_close(x.grad, torch.from_numpy(sym.toarray()).T @ torch.ones(8, 4))
    host_kernels.clear()
    skew = sp.csr_matrix((np.arange(1, sym.nnz + 1, dtype=np.float32), sym.indices, sym.indptr), sym.shape)
    x.grad = None
    dbsparse.spmm(Graph(skew), x).sum().backward()  # same pattern, values not symmetric: two plans
    assert len(host_kernels) == 2
    torch.testing.assert_close(x.grad, torch.from_numpy(skew.toarray()).T @ torch.ones(8, 4))


def test_widths_past_the_kernels_run_the_pytorch_path(host_kernels):
    a = small(15).astype(np.float32)
    g = Graph(a)
    g.values.requires_grad_()
    x = torch.randn(7, 600, requires_grad=True)  # SpMM takes 600 columns, SDDMM at most 512
    y = dbsparse.spmm(g, x)
    y.sum().backward()
    assert sorted(m[0] for m in host_kernels) == ["spmm", "spmm"]
    torch.testing.assert_close(g.values.grad.double(), dbsparse.gnn.sddmm(Graph(a), torch.ones(9, 600),
                                                                         x.detach()).double())


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_gradcheck_x_through_exact_ties(reduce):
    """A repeated edge with its weight repeated: two entries of one row give the same product for
    every X, so the tie stays under any perturbation of X, and the one winner's gradient is exact.
    (Ties between values cannot pass a finite-difference check: max is not differentiable there.)"""
    ei = torch.tensor([[0, 1, 1, 2, 3, 3], [1, 0, 0, 0, 2, 4]])  # 1 -> 0 twice; node 3 has no in-edge
    w = torch.tensor([1.5, -2.0, -2.0, 0.75, 1.25, 0.5], dtype=torch.float64)
    g = Graph(ei, edge_weight=w, num_nodes=5)
    x = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(16), requires_grad=True)
    _, arg = _op.gnn_spmm(x.detach(), g.values, g.handle, 5, reduce, False)
    # row 0's entries: 0 and 1 (the repeated edge, tied), 2; the lowest tied entry wins; row 3 is empty
    assert set(arg[0].tolist()) <= {0, 2} and arg[3].tolist() == [-1, -1, -1]
    assert torch.autograd.gradcheck(lambda x: dbsparse.spmm(g, x, reduce=reduce), (x,), eps=1e-6, atol=1e-7)


def test_plans_are_asked_of_the_bindings_as_they_are_stated(monkeypatch):
    """_graph's planners call dbsparse.plan_spmm (reduce= only past sum, so a binding without it
    still plans sums) and dbsparse.plan_sddmm(a, k, dtype=, device=)."""
    from dbsparse import _ops
    calls = []
    monkeypatch.setattr(_ops, "plan_spmm", lambda a, n, **kw: calls.append(("spmm", a.shape, n, kw)))
    monkeypatch.setattr(_ops, "plan_sddmm", lambda a, k, **kw: calls.append(("sddmm", a.shape, k, kw)),
                        raising=False)
    h = sp.eye(4, format="csr", dtype=np.float32)
    _graph._plan_spmm(h, 32, "bf16", "sum", 1, "auto")
    _graph._plan_spmm(h, 16, "f32", "max", 0, "csr")
    _graph._plan_sddmm(h, 8, "f16", 0)
    assert calls == [("spmm", (4, 4), 32, {"dtype": "bf16", "path": "auto", "device": 1}),
                     ("spmm", (4, 4), 16, {"dtype": "f32", "path": "csr", "device": 0, "reduce": "max"}),
                     ("sddmm", (4, 4), 8, {"dtype": "f16", "device": 0})]


def test_gnn_train_example_trains_as_the_pytorch_reference_on_the_cpu():
    # The example asserts itself that dbsparse's model and the scatter-based one train alike.
    import pathlib
    import subprocess
    import sys
    example = pathlib.Path(__file__).resolve().parents[1] / "examples" / "gnn_train.py"
    r = subprocess.run([sys.executable, str(example), "--cpu", "--nodes", "2000", "--epochs", "5"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "largest loss difference" in r.stdout


@pytest.mark.parametrize("make, match", [
    (lambda: dbsparse.Graph(torch.tensor([[0, 1], [1, 0]]), num_nodes=-5), "num_nodes: expected 0 or more"),
    (lambda: dbsparse.Graph(torch.tensor([[0, 1], [1, 0]]), num_nodes=2**62), "past 2\\^31 - 1"),
    (lambda: dbsparse.Graph(torch.tensor([[0, 2**40], [1, 0]])), "edge_index: .*past 2\\^31 - 1"),
    (lambda: dbsparse.Graph(torch.sparse_coo_tensor(torch.tensor([[0], [1]]), torch.tensor([1.0]), (2**40, 2))),
     "A: .*past 2\\^31 - 1"),
])
def test_graph_sizes_past_32_bit_indices_are_refused_by_name(make, match):
    with pytest.raises(dbsparse.UsageError, match=match):
        make()

"""Every op against SciPy / torch on the H200 (skipped without a GPU and torch)."""
import threading

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as csg

import dbsparse
from conftest import gpu, cupy_gpu, torch


def rand(n, m, density, seed, dtype=np.float32):
    return sp.random(n, m, density=density, format="csr", dtype=dtype, random_state=np.random.default_rng(seed))


def cuda(a):
    return torch.as_tensor(a).cuda()


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmv_matches_scipy_and_writes_out_in_place(dtype):
    a = rand(3000, 2000, 0.01, 1, dtype)
    x = np.random.default_rng(2).standard_normal(2000).astype(dtype)
    plan = dbsparse.plan_spmv(a)
    y = plan(cuda(x))
    np.testing.assert_allclose(y.cpu().numpy(), a @ x, rtol=1e-4, atol=1e-4)
    out = torch.ones(3000, dtype=y.dtype, device="cuda")
    ptr = out.data_ptr()
    got = plan(cuda(x), out=out, alpha=2.0, beta=1.0)
    assert got.data_ptr() == ptr  # zero copy: the caller's buffer
    np.testing.assert_allclose(out.cpu().numpy(), 2 * (a @ x) + 1, rtol=1e-4, atol=1e-4)
    assert plan.explain()["op"] == "spmv"


@gpu
@pytest.mark.parametrize("reorder", ["degree", "none", "auto"])
def test_spmv_with_the_callers_column_order_matches_scipy(reorder):
    a = rand(3000, 2000, 0.01, 7)
    x = np.random.default_rng(8).standard_normal(2000).astype(np.float32)
    plan = dbsparse.plan_spmv(a, reorder=reorder)
    np.testing.assert_allclose(plan(cuda(x)).cpu().numpy(), a @ x, rtol=1e-4, atol=1e-4)
    e = plan.explain()
    assert e["params"]["reorder"] == reorder and f"reorder {reorder} from the caller" in e["note"]
    if reorder != "auto":  # auto's choice depends on the tuned thresholds
        assert e["columns_reordered"] == (reorder == "degree")
    if e["columns_reordered"]:
        assert e["shares_call_state"] and plan.shares_call_state and e["reorder_ms"] >= 0
    default = dbsparse.plan_spmv(a).explain()
    assert "from the caller" not in default["note"]


@gpu
def test_spmv_from_torch_sparse_csr_and_bad_arguments():
    a = rand(500, 400, 0.05, 3)
    t = torch.sparse_csr_tensor(torch.as_tensor(a.indptr, dtype=torch.int64), torch.as_tensor(a.indices, dtype=torch.int64),
                                torch.as_tensor(a.data), size=a.shape).cuda()
    plan = dbsparse.plan_spmv(t)
    x = torch.randn(400, device="cuda")
    np.testing.assert_allclose(plan(x).cpu().numpy(), a @ x.cpu().numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(dbsparse.UsageError, match="x: expected shape"):
        plan(torch.randn(401, device="cuda"))
    with pytest.raises(dbsparse.UsageError, match="x: expected dtype f32"):
        plan(torch.randn(400, device="cuda", dtype=torch.float64))
    with pytest.raises(dbsparse.UsageError, match="x: expected a CUDA tensor"):
        plan(torch.randn(400))
    with pytest.raises(dbsparse.UsageError, match="not contiguous"):
        plan(torch.randn(400, 2, device="cuda")[:, 0])


@gpu
def test_current_stream_rule_orders_after_prior_work_on_a_side_stream():
    a = rand(20000, 20000, 5e-4, 4)
    plan = dbsparse.plan_spmv(a)
    side = torch.cuda.Stream()
    x = torch.zeros(20000, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(5_000_000)  # ~ms of work ahead on the side stream
        x.fill_(1.0)                  # ... then x is written
        y = plan(x)                   # must run after the fill: the same (current) stream
    side.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), a @ np.ones(20000, np.float32), rtol=1e-4, atol=1e-4)
    y2 = torch.empty_like(y)
    plan(x, out=y2, stream=side)      # an explicit stream
    side.synchronize()
    assert torch.equal(y, y2)


@gpu
def test_graph_capture_and_replay():
    a = rand(4000, 4000, 2e-3, 5)
    plan = dbsparse.plan_spmv(a)
    x = torch.randn(4000, device="cuda")
    y = torch.empty(4000, device="cuda")
    plan(x, out=y)  # warm (JIT and module load happen at plan time; this is the first launch)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        plan(x, out=y)
    x.copy_(torch.randn(4000, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), a @ x.cpu().numpy(), rtol=1e-4, atol=1e-4)


@gpu
def test_plans_reused_from_two_threads():
    a = rand(3000, 3000, 3e-3, 6)
    plan = dbsparse.plan_spmv(a)
    xs = [torch.randn(3000, device="cuda") for _ in range(2)]
    outs, errors = [None, None], []

    def work(i):
        try:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for _ in range(50):
                    outs[i] = plan(xs[i])
            s.synchronize()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errors
    for i in range(2):
        np.testing.assert_allclose(outs[i].cpu().numpy(), a @ xs[i].cpu().numpy(), rtol=1e-4, atol=1e-4)


@gpu
def test_spmspv_dense_and_sparse_x_match_scipy():
    a = rand(5000, 5000, 1e-3, 7)
    plan = dbsparse.plan_spmspv(a)
    idx = np.sort(np.random.default_rng(8).choice(5000, 40, replace=False)).astype(np.int32)
    val = np.random.default_rng(9).standard_normal(40).astype(np.float32)
    x = np.zeros(5000, np.float32)
    x[idx] = val
    ref = a @ x
    np.testing.assert_allclose(plan(cuda(x)).cpu().numpy(), ref, rtol=1e-4, atol=1e-5)
    got = plan(indices=cuda(idx), values=cuda(val))
    np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(dbsparse.UsageError, match="indices: expected a 1-D int32"):
        plan(indices=cuda(idx.astype(np.int64)), values=cuda(val))


@gpu
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_spmm_matches_torch_sparse(dtype):
    a = rand(2000, 1500, 4e-3, 10)
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    b = torch.randn(1500, 64, device="cuda").to(tdt)
    c = dbsparse.plan_spmm(a, 64, dtype=dtype)(b)
    ref = torch.as_tensor(a.toarray()).cuda() @ b.float()
    tol = 1e-3 if dtype == "f32" else 3e-2
    assert torch.allclose(c.float(), ref, rtol=tol, atol=tol * ref.abs().max().item())
    assert dbsparse.spmm(a, b).shape == (2000, 64)


@gpu
@pytest.mark.parametrize("path", ["csr", "brp", "condensed"])
def test_spmm_relu_epilogue_matches_torch_relu(path):
    a = rand(2000, 1500, 4e-3, 14)
    b = torch.randn(1500, 32, device="cuda")
    plan = dbsparse.plan_spmm(a, 32, path=path, epilogue="relu")
    assert plan.explain()["epilogue"] == "relu" and plan.explain()["epilogue_fused"] == (path == "csr")
    ref = torch.relu(torch.as_tensor(a.toarray()).cuda() @ b)
    tol = 1e-4 if path == "csr" else 3e-3  # brp / condensed: TF32 tensor cores
    assert torch.allclose(plan(b), ref, rtol=tol, atol=tol * ref.abs().max().item())
    assert (dbsparse.spmm(a, b, epilogue="relu") >= 0).all()
    with pytest.raises(dbsparse.UsageError, match="epilogue"):
        dbsparse.plan_spmm(a, 32, epilogue="gelu")


@gpu
@pytest.mark.parametrize("reorder", ["degree", "rcm", "community"])
def test_spmm_in_a_row_order_matches_torch_in_the_users_order(reorder):
    a = rand(3000, 3000, 3e-3, 12)
    b = torch.randn(3000, 32, device="cuda")
    plan = dbsparse.plan_spmm(a, 32, reorder=reorder)
    assert plan.explain()["reorder"] == reorder and plan.explain()["reorder_ms"] >= 0
    ref = torch.as_tensor(a.toarray()).cuda() @ b
    assert torch.allclose(plan(b), ref, rtol=1e-4, atol=1e-4 * ref.abs().max().item())
    if reorder != "degree":  # degree orders rows by their own lengths: any shape
        with pytest.raises(dbsparse.UsageError, match="square"):
            dbsparse.plan_spmm(rand(3000, 2000, 3e-3, 13), 32, reorder=reorder)
    with pytest.raises(dbsparse.UsageError, match="reorder"):
        dbsparse.plan_spmm(a, 32, reorder="rabbit")


def _graph_with_ties(rows, cols, seed):
    """Every 7th row empty, row 5 long (150 entries, or every column of a narrower graph), the others
    1..20 entries (at most `cols`); values in {-1, 1, 2} (ties)."""
    rng = np.random.default_rng(seed)
    indptr, indices, data = [0], [], []
    for r in range(rows):
        n = min(cols, 0 if r % 7 == 0 else (150 if r == 5 else int(rng.integers(1, 21))))
        indices.extend(sorted(rng.choice(cols, size=n, replace=False).tolist()))
        data.extend(rng.choice([-1.0, 1.0, 2.0], size=n).tolist())
        indptr.append(len(indices))
    return sp.csr_matrix((np.array(data, np.float32), np.array(indices, np.int32), np.array(indptr, np.int32)),
                         shape=(rows, cols))


def _reduce_reference(a, b, reduce):
    """(C, arg) in float64 / int32: each row's products a_e * B[col(e)] reduced; arg the lowest winning entry."""
    c = np.zeros((a.shape[0], b.shape[1]))
    arg = np.full((a.shape[0], b.shape[1]), -1, np.int32)
    for i in range(a.shape[0]):
        lo, hi = a.indptr[i], a.indptr[i + 1]
        if lo == hi:
            continue
        prod = a.data[lo:hi, None].astype(np.float64) * b[a.indices[lo:hi]].astype(np.float64)
        if reduce in ("sum", "mean"):
            c[i] = prod.sum(0) / (hi - lo if reduce == "mean" else 1)
        else:
            win = prod.argmax(0) if reduce == "max" else prod.argmin(0)  # the first extreme: the lowest entry
            c[i] = prod[win, np.arange(b.shape[1])]
            arg[i] = lo + win
    return c, arg


@gpu
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
def test_spmm_reduce_matches_a_numpy_reference(reduce, dtype):
    a = _graph_with_ties(600, 300, 21)
    for n in (8, 33, 128):
        bh = np.random.default_rng(n).integers(-2, 3, size=(300, n)).astype(np.float32)
        tdt = torch.float32 if dtype == "f32" else torch.bfloat16
        b = torch.as_tensor(bh).cuda().to(tdt)
        plan = dbsparse.plan_spmm(a, n, dtype=dtype, reduce=reduce)
        assert plan.reduce == reduce and plan.explain()["reduce"] == reduce
        ref, ref_arg = _reduce_reference(a, bh, reduce)
        if reduce in ("max", "min"):
            arg = torch.empty((600, n), dtype=torch.int32, device="cuda")
            c = plan(b, arg=arg)
            np.testing.assert_array_equal(c.float().cpu().numpy(), ref)  # exact products of small integers
            np.testing.assert_array_equal(arg.cpu().numpy(), ref_arg)
        else:
            c = plan(b)
            tol = 1e-5 if dtype == "f32" else 1e-2
            np.testing.assert_allclose(c.float().cpu().numpy(), ref, rtol=tol, atol=tol)
        out = torch.ones((600, n), dtype=tdt, device="cuda")  # alpha and beta as for the sum
        plan(b, out=out, alpha=0.5, beta=-1.0)
        np.testing.assert_allclose(out.float().cpu().numpy(), 0.5 * ref - 1.0, rtol=1e-2, atol=1e-2)


@gpu
def test_spmm_reduce_refuses_what_it_cannot_do():
    a = _graph_with_ties(60, 40, 3)
    b = torch.ones((40, 8), device="cuda")
    with pytest.raises(dbsparse.UsageError, match="reduce"):
        dbsparse.plan_spmm(a, 8, reduce="prod")
    with pytest.raises(dbsparse.UsageError, match="CSR path"):
        dbsparse.plan_spmm(a, 8, reduce="max", path="brp")
    with pytest.raises(dbsparse.UsageError, match="arg"):
        dbsparse.plan_spmm(a, 8, reduce="mean")(b, arg=torch.empty((60, 8), dtype=torch.int32, device="cuda"))
    with pytest.raises(dbsparse.UsageError, match="arg"):
        dbsparse.plan_spmm(a, 8, reduce="max")(b, arg=torch.empty((60, 8), dtype=torch.int64, device="cuda"))


@gpu
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("k", [1, 16, 33, 128])
@pytest.mark.parametrize("scale", [False, True])
def test_sddmm_matches_scipy(k, dtype, scale):
    a = _graph_with_ties(500, 400, 5)
    a.data = np.random.default_rng(1).standard_normal(a.nnz).astype(np.float32)
    tdt = torch.float32 if dtype == "f32" else torch.bfloat16
    x = torch.randn(500, k, device="cuda").to(tdt)
    y = torch.randn(400, k, device="cuda").to(tdt)
    plan = dbsparse.plan_sddmm(a, k, dtype=dtype, scale_by_values=scale)
    assert plan.explain()["op"] == "sddmm" and plan.shape == (500, 400)
    got = plan(x, y, alpha=0.5)
    assert got.shape == (a.nnz,) and got.dtype == tdt
    xh, yh = x.float().cpu().numpy().astype(np.float64), y.float().cpu().numpy().astype(np.float64)
    rows = np.repeat(np.arange(500), np.diff(a.indptr))
    ref = 0.5 * (xh[rows] * yh[a.indices]).sum(1) * (a.data if scale else 1.0)
    mag = 0.5 * (np.abs(xh[rows]) * np.abs(yh[a.indices])).sum(1) * (np.abs(a.data) if scale else 1.0)
    tol = 1e-5 if dtype == "f32" else 1e-2
    assert (np.abs(got.float().cpu().numpy() - ref) <= tol * mag + 1e-30).all()
    out = torch.empty(a.nnz, dtype=tdt, device="cuda")
    assert plan(x, y, out=out).data_ptr() == out.data_ptr()
    with pytest.raises(dbsparse.UsageError, match="Y"):
        plan(x, x)


@gpu
def test_bfs_levels_and_parents_match_scipy():
    g = rand(3000, 3000, 2e-3, 11)
    g = ((g + g.T) > 0).astype(np.float32).tocsr()
    levels, parents = dbsparse.bfs(g, 0, parents=True)
    dist = csg.shortest_path(g, unweighted=True, indices=0)
    ref = np.where(np.isinf(dist), -1, dist).astype(np.int32)
    lv, pa = levels.cpu().numpy(), parents.cpu().numpy()
    np.testing.assert_array_equal(lv, ref)
    for v in np.nonzero(lv > 0)[0]:  # a parent sits one level up, across an edge
        assert lv[pa[v]] == lv[v] - 1 and g[pa[v], v] != 0
    with pytest.raises(dbsparse.UsageError, match="source"):
        dbsparse.plan_bfs(g)(3000)


def torch_csr(a, values_dtype=None):
    return torch.sparse_csr_tensor(torch.as_tensor(a.indptr, dtype=torch.int64), torch.as_tensor(a.indices, dtype=torch.int64),
                                   torch.as_tensor(a.data if values_dtype is None else a.data.astype(values_dtype)),
                                   size=a.shape).cuda()


@gpu
def test_bfs_with_64bit_offsets_searches_a_torch_csr_in_place():
    # The path a CUDA graph past 2^31 entries takes (forced here at a small size): the pattern read
    # in place with int64 row offsets, checked on the GPU first; values of any dtype.
    g = rand(3000, 3000, 2e-3, 14)
    sym = ((g + g.T) > 0).astype(np.float32).tocsr()
    sym.sort_indices()
    dist = csg.shortest_path(sym, unweighted=True, indices=5)
    plan = dbsparse.plan_bfs(torch_csr(sym, np.int8), offsets64=True)
    assert ".o64" in plan.explain()["text"]
    np.testing.assert_array_equal(plan(5).cpu().numpy(), np.where(np.isinf(dist), -1, dist).astype(np.int32))
    # Directed: A[u, v] != 0 is an edge v -> u; the transpose is given, not computed.
    d = (g > 0).astype(np.float32).tocsr()
    d.sort_indices()
    dt = d.T.tocsr()
    dt.sort_indices()
    ref = csg.shortest_path(d.T, unweighted=True, indices=5)  # csgraph's edges run row -> column
    lv = dbsparse.plan_bfs(torch_csr(d), offsets64=True, transposed=torch_csr(dt))(5)
    np.testing.assert_array_equal(lv.cpu().numpy(), np.where(np.isinf(ref), -1, ref).astype(np.int32))
    with pytest.raises(dbsparse.UsageError, match="not symmetric"):
        dbsparse.plan_bfs(torch_csr(d), offsets64=True)
    with pytest.raises(dbsparse.UsageError, match="transposed"):
        dbsparse.plan_bfs(d, transposed=dt)


@gpu
def test_a_broken_torch_csr_is_refused_not_read_out_of_bounds():
    # torch does not check a CSR tensor's arrays unless asked: a column past the end must be a
    # UsageError, not an illegal address (which would end the process's CUDA context).
    crow = torch.tensor([0, 2, 3], dtype=torch.int64)
    col = torch.tensor([0, 7, 1], dtype=torch.int64)
    t = torch.sparse_csr_tensor(crow, col, torch.ones(3), size=(2, 3), check_invariants=False).cuda()
    for make in (lambda: dbsparse.plan_spmv(t, offsets64=True), lambda: dbsparse.plan_spmm(t, 32, offsets64=True)):
        with pytest.raises(dbsparse.UsageError, match=r"col_idx\[1\] = 7"):
            make()
    ok = dbsparse.plan_spmv(rand(30, 20, 0.2, 9))  # the context still works
    assert ok(cuda(np.ones(20, dtype=np.float32))).shape == (30,)


@gpu
def test_spgemm_on_device_matches_scipy_without_copying_inputs():
    a = rand(2000, 1500, 3e-3, 12)
    b = rand(1500, 1800, 3e-3, 13)
    ta = torch.sparse_csr_tensor(torch.as_tensor(a.indptr), torch.as_tensor(a.indices), torch.as_tensor(a.data),
                                 size=a.shape).cuda()
    tb = torch.sparse_csr_tensor(torch.as_tensor(b.indptr), torch.as_tensor(b.indices), torch.as_tensor(b.data),
                                 size=b.shape).cuda()
    c = dbsparse.spgemm(ta, tb)
    assert c.layout == torch.sparse_csr and c.is_cuda
    np.testing.assert_allclose(c.to_dense().cpu().numpy(), (a @ b).toarray(), rtol=1e-4, atol=1e-5)
    host = dbsparse.spgemm(a, b)
    np.testing.assert_allclose(host.toarray(), (a @ b).toarray(), rtol=1e-4, atol=1e-5)


@gpu
def test_spgemm_with_a_config_merges_rows_and_names_a_bad_key():
    # B 20000 columns wide (wider than group 2's table) with rows of about 430 entries; A's rows
    # take 3 of them (IP ~1300, group 2, few entries): merge2 merges them.
    rng = np.random.default_rng(16)
    b = sp.csr_matrix((rng.random(40 * 450).astype(np.float32),
                       (np.repeat(np.arange(40), 450), rng.integers(0, 4000, 40 * 450))), shape=(40, 20000))
    b.sum_duplicates()
    a = sp.csr_matrix((rng.random(300).astype(np.float32), (np.arange(300) // 3 % 100, rng.integers(0, 40, 300))),
                      shape=(100, 40))
    a.sum_duplicates()
    ta, tb = (torch.sparse_csr_tensor(torch.as_tensor(m.indptr), torch.as_tensor(m.indices), torch.as_tensor(m.data),
                                      size=m.shape).cuda() for m in (a, b))
    want = (a @ b).toarray()
    for cfg in ({"merge2": 8}, {"merge2": 8, "block2": 256}):
        c = dbsparse.spgemm(ta, tb, config=cfg)
        np.testing.assert_allclose(c.to_dense().cpu().numpy(), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(dbsparse.spgemm(a, b, config=cfg).toarray(), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(dbsparse.UsageError, match="merge3"):
        dbsparse.spgemm(ta, tb, config={"merge3": 1})
    with pytest.raises(dbsparse.UsageError, match="merge2"):
        dbsparse.spgemm(a, b, config={"merge2": 33})


@gpu
def test_square_contract_and_mcl_match_scipy():
    a = rand(800, 800, 5e-3, 14)
    np.testing.assert_allclose(dbsparse.square(a).toarray(), (a @ a).toarray(), rtol=1e-4, atol=1e-5)
    labels = np.random.default_rng(15).integers(0, 20, 800).astype(np.int32)
    s = sp.csr_matrix((np.ones(800, np.float32), (labels, np.arange(800))), shape=(20, 800))
    np.testing.assert_allclose(dbsparse.contract(a, labels, 20).toarray(), (s @ a @ s.T).toarray(), rtol=1e-4, atol=1e-4)
    # two cliques joined by one edge: two clusters
    blocks = sp.block_diag([np.ones((6, 6)), np.ones((6, 6))]).tolil()
    blocks[0, 6] = blocks[6, 0] = 1
    lab, clusters, iters, converged = dbsparse.mcl(blocks.tocsr().astype(np.float32))
    assert clusters == 2 and converged and len(set(lab[:6])) == 1 and len(set(lab[6:])) == 1


@gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32] if torch else [])
def test_sparse_linear_equals_dense_layer_on_masked_weights(dtype):
    from dbsparse.nn import SparseLinear, replace_linear
    torch.manual_seed(0)
    lin = torch.nn.Linear(1024, 3072, bias=True).to(device="cuda", dtype=dtype)
    layer = SparseLinear.from_linear(lin, sparsity=0.5, keep=0.5)
    x = torch.randn(1, 1024, device="cuda", dtype=dtype)
    y = layer(x)
    w = lin.weight.float()
    keep_w = torch.zeros_like(w, dtype=torch.bool).scatter_(1, w.abs().topk(512, dim=1).indices, True)
    xs = torch.zeros_like(x.float())
    top = x.float().abs().topk(512, dim=1).indices
    xs[0, top[0]] = x.float()[0, top[0]]
    ref = (w * keep_w) @ xs.T + lin.bias.float()[:, None]
    tol = 2e-2 if dtype != torch.float32 else 1e-3
    assert torch.allclose(y.float().T, ref, rtol=tol, atol=tol * ref.abs().max().item())
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256)).cuda().to(dtype)
    names = replace_linear(model, sparsity=0.5)
    assert names == ["0", "2"] and model(torch.randn(1, 256, device="cuda", dtype=dtype)).shape == (1, 256)
    with pytest.raises(dbsparse.UsageError, match="features"):
        layer(torch.randn(1, 1000, device="cuda", dtype=dtype))


@cupy_gpu
def test_cupy_arrays_in_and_out():
    import cupy
    import cupyx.scipy.sparse as csp
    a = rand(1000, 900, 0.01, 16)
    x = cupy.random.standard_normal(900, dtype=cupy.float32)
    y = dbsparse.plan_spmv(csp.csr_matrix(a))(x)
    assert isinstance(y, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(y), a @ cupy.asnumpy(x), rtol=1e-4, atol=1e-4)
    c = dbsparse.spgemm(csp.csr_matrix(a), csp.csr_matrix(a.T.tocsr()))
    np.testing.assert_allclose(c.toarray().get(), (a @ a.T).toarray(), rtol=1e-4, atol=1e-5)


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmv_with_64bit_offsets_reads_a_torch_csr_in_place(dtype):
    # The path a CUDA CSR past 2^31 entries takes (forced here at a small size): int64 row offsets,
    # the values read where they are.
    a = rand(3000, 2000, 0.01, 5, dtype)
    t = torch.sparse_csr_tensor(torch.as_tensor(a.indptr, dtype=torch.int64), torch.as_tensor(a.indices, dtype=torch.int64),
                                torch.as_tensor(a.data), size=a.shape).cuda()
    plan = dbsparse.plan_spmv(t, offsets64=True)
    assert ".o64" in plan.explain()["text"]
    x = np.random.default_rng(6).standard_normal(2000).astype(dtype)
    np.testing.assert_allclose(plan(cuda(x)).cpu().numpy(), a @ x, rtol=1e-4, atol=1e-4)
    with pytest.raises(dbsparse.UsageError, match="read in place"):
        dbsparse.plan_spmv(t, dtype="f64" if dtype == np.float32 else "f32", offsets64=True)
    with pytest.raises(dbsparse.UsageError, match="without a column order"):
        dbsparse.plan_spmv(t, offsets64=True, reorder="degree")
    with pytest.raises(dbsparse.UsageError, match="64-bit offsets need"):
        dbsparse.plan_spmv(a, offsets64=True)


@gpu
def test_spmm_with_64bit_offsets_reads_a_torch_csr_in_place():
    # The path a CUDA CSR past 2^31 entries takes (forced here at a small size).
    a = rand(3000, 2000, 0.01, 7)
    t = torch.sparse_csr_tensor(torch.as_tensor(a.indptr, dtype=torch.int64), torch.as_tensor(a.indices, dtype=torch.int64),
                                torch.as_tensor(a.data), size=a.shape).cuda()
    for n in (32, 33, 128):
        plan = dbsparse.plan_spmm(t, n, offsets64=True)
        assert "64-bit row offsets" in plan.explain()["text"]
        b = torch.randn(2000, n, device="cuda")
        ref = torch.as_tensor(a.toarray()).cuda() @ b
        assert torch.allclose(plan(b), ref, rtol=1e-4, atol=1e-4 * ref.abs().max().item())
    with pytest.raises(dbsparse.UsageError, match="f32"):
        dbsparse.plan_spmm(t, 32, dtype="f16", offsets64=True)
    deg = dbsparse.plan_spmm(t, 32, reorder="degree", offsets64=True)  # the order made on the GPU
    assert deg.explain()["reorder"] == "degree"
    b = torch.randn(2000, 32, device="cuda")
    ref = torch.as_tensor(a.toarray()).cuda() @ b
    assert torch.allclose(deg(b), ref, rtol=1e-4, atol=1e-4 * ref.abs().max().item())
    with pytest.raises(dbsparse.UsageError, match="made on the GPU"):
        dbsparse.plan_spmm(t, 32, reorder="rcm", offsets64=True)


# A script that keeps every kind of result alive to the end, so the interpreter tears them down
# in its own order at exit: nanobind reports any instance still alive then.
_EXIT_SCRIPT = """
import numpy as np, scipy.sparse as sp, torch, dbsparse, dbsparse.gnn
a = sp.random(800, 800, density=5e-3, format="csr", dtype=np.float32, random_state=1)
ta = torch.sparse_csr_tensor(torch.as_tensor(a.indptr), torch.as_tensor(a.indices), torch.as_tensor(a.data),
                             size=a.shape).cuda()
c = dbsparse.spgemm(ta, ta)
empty = dbsparse.spgemm(torch.sparse_csr_tensor(torch.zeros(801, dtype=torch.int32), torch.zeros(0, dtype=torch.int32),
                                                torch.zeros(0), size=(800, 800)).cuda(), ta)
host = dbsparse.spgemm(a, a)
sq = dbsparse.square(a)
plan = dbsparse.plan_spmv(a)
y = plan(torch.ones(800, device="cuda"))
mm = dbsparse.plan_spmm(a, 8)
z = mm(torch.ones(800, 8, device="cuda"))
g = dbsparse.gnn.Graph(a, device="cuda")  # its plans, seen by a compiled function's guards
f = torch.compile(lambda x: dbsparse.spmm(g, x, reduce="mean").sum(), fullgraph=True, backend="aot_eager")
s = f(torch.ones(800, 4, device="cuda"))
torch.cuda.synchronize()
print("ok", c._nnz(), empty._nnz())
"""


@gpu
def test_no_leak_messages_at_interpreter_exit():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr
    assert "leaked" not in r.stderr, r.stderr

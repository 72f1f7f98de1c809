"""dbsparse.gnn on the GPU: the kernels' SpMM (every reduction, both sides, f32/f16/bf16) and their
gradients for X and the edge values (SDDMM) against the PyTorch path in float64 on the CPU; plans
kept with the Graph; torch.compile; CUDA-graph capture of a forward; the gnn bench on a small
graph. Skipped without a CUDA device and torch."""
import numpy as np
import pytest
import scipy.sparse as sp

from conftest import gpu, torch

if torch is not None:
    import dbsparse
    from dbsparse import bench
    from dbsparse.bench_gnn import power_law_graph
    from dbsparse.gnn import Graph, _op

REDUCTIONS = ("sum", "mean", "max", "min")
DTYPES = {"f32": (1e-4, "float32"), "f16": (1e-2, "float16"), "bf16": (3e-2, "bfloat16")}


def graph_matrix(n=3000, edges=30000, seed=0):
    """A power-law graph with signed random values and some empty rows (float32 SciPy CSR)."""
    a = power_law_graph(n, edges, seed).tocsr()
    rng = np.random.default_rng(seed)
    a.data = rng.uniform(0.5, 1.5, a.nnz).astype(np.float32) * rng.choice([-1, 1], a.nnz)
    a = sp.csr_matrix(a)
    for r in (5, 17, 400):  # empty rows
        a.data[a.indptr[r]:a.indptr[r + 1]] = 0
    a.eliminate_zeros()
    return a


def reference(a, x, reduce, transpose=False, values_grad=True, seed=1):
    """(out, dX, dvalues) of sum(out * G) by the PyTorch path in float64 on the CPU."""
    g = Graph(a.astype(np.float64))
    g.values.requires_grad_(values_grad)
    xc = x.detach().cpu().double().requires_grad_()
    out = dbsparse.gnn.spmm(g, xc, reduce, transpose=transpose)
    G = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    (out * G).sum().backward()
    return out.detach(), xc.grad, g.values.grad, G


def rel(got, want):
    return float((got.detach().cpu().double() - want).abs().max() / want.abs().max().clamp(min=1e-30))


@gpu
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_forward_matches_the_reference_and_runs_the_kernels(reduce, dtype):
    tol, tname = DTYPES[dtype]
    a = graph_matrix()
    g = Graph(a, device="cuda")
    x = torch.randn(a.shape[1], 64, device="cuda").to(getattr(torch, tname))
    assert g.uses_kernels(x)
    got = dbsparse.spmm(g, x, reduce=reduce)
    want = reference(a, x, reduce)[0]
    assert got.dtype == x.dtype and rel(got, want) < tol
    assert (got[[5, 17, 400]] == 0).all()
    if reduce in ("max", "min"):  # the winner's product is the output; -1 exactly on empty rows
        _, arg = _op.gnn_spmm(x, g.values, g.handle, a.shape[0], reduce, False)
        argc = arg.long().cpu()
        empty = torch.from_numpy(np.diff(a.indptr) == 0)
        assert ((argc == -1).all(1) == empty).all() and not (argc[~empty] == -1).any()
        k = argc.clamp(min=0)
        prod = torch.from_numpy(a.data.astype(np.float64))[k] * x.cpu().double().gather(
            0, torch.from_numpy(a.indices.astype(np.int64))[k])
        prod[argc == -1] = 0
        assert rel(got, prod) < tol


@gpu
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("transpose", [False, True])
def test_gradients_of_x_and_values_match_the_float64_reference(reduce, transpose):
    a = graph_matrix(2000, 16000, seed=2)
    g = Graph(a, device="cuda")
    g.values.requires_grad_()
    x = torch.randn(a.shape[0] if transpose else a.shape[1], 32, device="cuda", requires_grad=True)
    out = dbsparse.gnn.spmm(g, x, reduce, transpose=transpose)
    want, dx, dv, G = reference(a, x, reduce, transpose)
    (out * G.cuda().float()).sum().backward()
    assert rel(out, want) < 1e-4
    assert rel(x.grad, dx) < 1e-4
    assert rel(g.values.grad, dv) < 1e-4


@gpu
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_gradients_match(dtype):
    tol, tname = DTYPES[dtype]
    a = graph_matrix(2000, 16000, seed=3)
    g = Graph(a, device="cuda")
    g.values.requires_grad_()
    x = torch.randn(a.shape[1], 64, device="cuda").to(getattr(torch, tname)).requires_grad_()
    out = dbsparse.spmm(g, x, reduce="mean")
    want, dx, dv, G = reference(a, x, "mean")
    (out.float() * G.cuda().float()).sum().backward()
    assert rel(out, want) < tol and rel(x.grad, dx) < tol and rel(g.values.grad, dv) < 2 * tol


@gpu
def test_plans_are_kept_and_remade_after_an_optimizer_step():
    a = graph_matrix(1000, 8000, seed=4)
    g = Graph(a, device="cuda")
    w = g.values.requires_grad_()
    opt = torch.optim.SGD([w], lr=0.1)
    x = torch.randn(a.shape[1], 16, device="cuda", requires_grad=True)
    for _ in range(3):
        dbsparse.spmm(g, x).sum().backward()
    names = sorted(k[0] + (str(k[4]) if k[0] == "spmm" else str(k[1])) for k in g._plans)
    assert names == ["sddmm16", "spmmFalse", "spmmTrue"]  # A's and Aᵀ's SpMM plans, the SDDMM plan
    opt.step()  # the values change in place: the next call plans with them
    got = dbsparse.spmm(g, x)
    b = sp.csr_matrix((w.detach().cpu().numpy(), a.indices, a.indptr), a.shape)
    assert rel(got, torch.from_numpy(b.astype(np.float64) @ x.detach().cpu().double().numpy())) < 1e-4


@gpu
def test_cuda_graph_capture_of_a_forward_replays_new_inputs():
    a = graph_matrix(2000, 16000, seed=5)
    g = Graph(a, device="cuda")
    x = torch.randn(a.shape[1], 64, device="cuda")
    outs = {}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: the plans are made outside the capture
        for r in REDUCTIONS:
            dbsparse.spmm(g, x, reduce=r)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for r in REDUCTIONS:
            outs[r] = dbsparse.spmm(g, x, reduce=r)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    for r in REDUCTIONS:
        assert rel(outs[r], reference(a, x, r, values_grad=False)[0]) < 1e-4, r


@gpu
def test_torch_compile_fullgraph_training_step_equals_eager():
    a = graph_matrix(1000, 8000, seed=6)
    g = Graph(a, device="cuda")
    torch.manual_seed(0)
    lin = torch.nn.Linear(32, 16).cuda()
    x = torch.randn(a.shape[1], 32, device="cuda")

    def f(x):
        return dbsparse.spmm(g, torch.relu(dbsparse.spmm(g, lin(x), reduce="mean")), reduce="max").square().sum()

    f(x).backward()
    want = lin.weight.grad.clone()
    lin.zero_grad()
    torch._dynamo.reset()
    torch.compile(f, fullgraph=True, backend="aot_eager")(x).backward()
    assert rel(lin.weight.grad, want.cpu().double()) < 1e-5


@gpu
def test_a_training_step_captured_in_one_cuda_graph_equals_eager_steps():
    a = graph_matrix(1000, 8000, seed=7)
    g = Graph(a, device="cuda")
    x = torch.randn(a.shape[1], 32, device="cuda")
    y = torch.randint(0, 8, (a.shape[0],), device="cuda")

    def model():
        torch.manual_seed(3)
        return torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8)).cuda()

    def loss(m):
        h = dbsparse.spmm(g, m[1](m[0](x)), reduce="mean")
        return torch.nn.functional.cross_entropy(dbsparse.spmm(g, m[2](h)), y)

    eager, captured = model(), model()
    opt_e = torch.optim.Adam(eager.parameters(), lr=0.01, capturable=True)
    opt_c = torch.optim.Adam(captured.parameters(), lr=0.01, capturable=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # the warm-up step that torch.cuda.graph asks for, taken by both models
        for m, o in ((eager, opt_e), (captured, opt_c)):
            o.zero_grad(set_to_none=True)
            loss(m).backward()
            o.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt_c.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss(captured).backward()
        opt_c.step()
    for _ in range(3):
        graph.replay()
        opt_e.zero_grad(set_to_none=True)
        loss(eager).backward()
        opt_e.step()
    for pe, pc in zip(eager.parameters(), captured.parameters()):
        assert rel(pc, pe.detach().cpu().double()) < 1e-5


@gpu
def test_bench_gnn_runs_and_checks_on_a_small_graph():
    assert bench.main(["gnn", "--graphs", "cora", "--epochs", "2", "--reps", "1", "--warmup", "1"]) == 0
    assert bench.main(["gnn", "--graphs", "cora", "--models", "gcn", "--epochs", "2", "--reps", "1", "--warmup", "1",
                       "--cuda-graph"]) == 0

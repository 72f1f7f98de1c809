"""A hostile sweep of the planned calls on the GPU (issue 62): each call given one bad argument (host
arrays, wrong dtypes and shapes, strided and stride-0 views, outputs that alias inputs, wrong kinds
of scalar, stream and vertex, sparse tensors, a plan whose native state is gone). Every case ends
in a named dbsparse exception, or succeeds with the values a CPU reference gives: never another
exception type, a crash, or a wrong result."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import dbsparse
from conftest import gpu, torch


def rand(n, m, density, seed, dtype=np.float32):
    return sp.random(n, m, density=density, format="csr", dtype=dtype, random_state=np.random.default_rng(seed))


A = rand(300, 200, 0.05, 1)
X = np.random.default_rng(2).standard_normal(200).astype(np.float32)
B = np.random.default_rng(3).standard_normal((200, 16)).astype(np.float32)


def outcome(call, reference=None, tol=1e-4):
    """'refused' for a named dbsparse error; 'ok' when the call returned what `reference` says
    (within tol: the SpMM and SDDMM paths may take TF32 Tensor Cores)."""
    try:
        got = call()
    except dbsparse.Error as e:
        assert str(e), "a refusal must say why"
        return "refused"
    if reference is not None:
        np.testing.assert_allclose(got.cpu().numpy(), reference, rtol=tol, atol=tol)
    return "ok"


def bad_vectors(n):
    """(case, x) for a plan that takes a float32 CUDA vector of n entries."""
    cuda = torch.as_tensor(np.arange(2 * n, dtype=np.float32)).cuda()
    return [
        ("host tensor", torch.zeros(n)),
        ("numpy", np.zeros(n, np.float32)),
        ("list", [0.0] * n),
        ("string", "x"),
        ("None-like int", 7),
        ("int32", torch.zeros(n, dtype=torch.int32, device="cuda")),
        ("float64", torch.zeros(n, dtype=torch.float64, device="cuda")),
        ("float16", torch.zeros(n, dtype=torch.float16, device="cuda")),
        ("complex", torch.zeros(n, dtype=torch.complex64, device="cuda")),
        ("bool", torch.zeros(n, dtype=torch.bool, device="cuda")),
        ("short", torch.zeros(n - 1, device="cuda")),
        ("long", torch.zeros(n + 1, device="cuda")),
        ("2-D", torch.zeros(n, 1, device="cuda")),
        ("0-D", torch.zeros((), device="cuda")),
        ("empty", torch.zeros(0, device="cuda")),
        ("strided view", cuda[::2]),
        ("stride 0", torch.ones(1, device="cuda").expand(n)),
        ("sparse coo", torch.zeros(n, device="cuda").to_sparse()),
        ("meta", torch.zeros(n, device="meta")),
    ]


@gpu
def test_spmv_refuses_every_bad_x_by_name():
    plan = dbsparse.plan_spmv(A)
    for case, x in bad_vectors(A.shape[1]):
        assert outcome(lambda: plan(x)) == "refused", case


@gpu
def test_spmv_refuses_bad_outputs_scalars_and_streams_by_name():
    plan = dbsparse.plan_spmv(A)
    x = torch.as_tensor(X).cuda()
    ref = A @ X
    for case, out in bad_vectors(A.shape[0]):
        assert outcome(lambda: plan(x, out=out)) == "refused", case
    # An output that is x itself, or shares its bytes: refused, never a race.
    sq = rand(200, 200, 0.05, 4)
    sq_plan = dbsparse.plan_spmv(sq)
    assert outcome(lambda: sq_plan(x, out=x)) == "refused"
    both = torch.zeros(300, device="cuda")
    assert outcome(lambda: sq_plan(both[:200], out=both[100:300])) == "refused"
    for name, kw in [("alpha", {"alpha": "2"}), ("beta", {"beta": None}), ("alpha", {"alpha": [1.0]}),
                     ("stream", {"stream": "s"}), ("stream", {"stream": 1.5})]:
        assert outcome(lambda: plan(x, **kw)) == "refused", (name, kw)
    # What is valid but unusual runs and gives the reference: numpy scalars, an int alpha, NaN in x.
    assert outcome(lambda: plan(x, alpha=np.float64(2.0)), 2 * ref) == "ok"
    assert outcome(lambda: plan(x, alpha=2), 2 * ref) == "ok"
    nan_x = x.clone()
    nan_x[0] = float("nan")
    got = plan(nan_x).cpu().numpy()
    touched = np.asarray((A[:, 0] != 0).todense()).ravel()
    assert np.isnan(got[touched]).all() and np.isfinite(got[~touched]).all()


@gpu
def test_spmm_refuses_bad_b_out_and_arg_by_name():
    plan = dbsparse.plan_spmm(A, 16)
    b = torch.as_tensor(B).cuda()
    cases = [("host", torch.zeros(200, 16)), ("f64", torch.zeros(200, 16, dtype=torch.float64, device="cuda")),
             ("transposed", torch.zeros(16, 200, device="cuda").t()), ("wrong n", torch.zeros(200, 8, device="cuda")),
             ("1-D", torch.zeros(200 * 16, device="cuda")), ("column view", torch.zeros(200, 32, device="cuda")[:, :16])]
    for case, bad in cases:
        assert outcome(lambda: plan(bad)) == "refused", case
        assert outcome(lambda: plan(b, out=bad)) == "refused", case
    sq = dbsparse.plan_spmm(rand(200, 200, 0.05, 5), 16)
    assert outcome(lambda: sq(b, out=b)) == "refused"
    assert outcome(lambda: plan(b, arg=torch.zeros(300, 16, dtype=torch.int32, device="cuda"))) == "refused"
    assert outcome(lambda: plan(b, alpha="1")) == "refused"
    assert outcome(lambda: plan(b), A @ B, tol=2e-2) == "ok"


@gpu
def test_spmspv_refuses_bad_x_indices_and_aliases_by_name():
    plan = dbsparse.plan_spmspv(A)
    for case, x in bad_vectors(A.shape[1]):
        assert outcome(lambda: plan(x)) == "refused", case
    idx = torch.tensor([1, 5, 7], dtype=torch.int32, device="cuda")
    val = torch.ones(3, device="cuda")
    assert outcome(lambda: plan(indices=idx.long(), values=val)) == "refused"
    assert outcome(lambda: plan(indices=idx, values=val[:2])) == "refused"
    assert outcome(lambda: plan(indices=idx)) == "refused"
    assert outcome(lambda: plan(torch.zeros(200, device="cuda"), indices=idx, values=val)) == "refused"
    x = torch.zeros(200, device="cuda")
    x[[1, 5, 7]] = 1
    ref = A @ x.cpu().numpy()
    assert outcome(lambda: plan(indices=idx, values=val), ref) == "ok"
    sq = dbsparse.plan_spmspv(rand(200, 200, 0.05, 6))
    assert outcome(lambda: sq(x, out=x)) == "refused"


@gpu
def test_bfs_refuses_bad_sources_and_outputs_by_name():
    g = rand(300, 300, 0.02, 7)
    g = (g + g.T).tocsr()
    plan = dbsparse.plan_bfs(g)
    for case, src in [("negative", -1), ("past n", 300), ("float", 1.5), ("string", "0"), ("None", None),
                      ("float64", np.float64(3)), ("huge", 2**40)]:
        assert outcome(lambda: plan(src)) == "refused", case
    lv = torch.zeros(300, dtype=torch.int32, device="cuda")
    assert outcome(lambda: plan(0, parents=True, out=(lv, lv))) == "refused"
    assert outcome(lambda: plan(0, out=torch.zeros(300, device="cuda"))) == "refused"
    assert outcome(lambda: plan(np.int32(0), out=lv)) == "ok"


@gpu
def test_sddmm_refuses_aliases_and_bad_operands_by_name():
    a = rand(50, 40, 0.2, 8)
    plan = dbsparse.plan_sddmm(a, 8)
    x = torch.randn(50, 8, device="cuda")
    y = torch.randn(40, 8, device="cuda")
    assert outcome(lambda: plan(y, y)) == "refused"
    assert outcome(lambda: plan(x, y.double())) == "refused"
    assert outcome(lambda: plan(x, y, alpha="1")) == "refused"
    flat = torch.zeros(50 * 8 + a.nnz, device="cuda")
    xs = flat[:400].view(50, 8)
    assert outcome(lambda: plan(xs, y, out=flat[390:390 + a.nnz])) == "refused"
    coo = a.tocoo()
    ref = np.einsum("ek,ek->e", x.cpu().numpy()[coo.row], y.cpu().numpy()[coo.col])
    assert outcome(lambda: plan(x, y), ref, tol=2e-2) == "ok"


@gpu
def test_a_plan_released_at_exit_says_so_by_name():
    plan = dbsparse.plan_spmv(A)
    plan._release_native()
    assert outcome(lambda: plan(torch.as_tensor(X).cuda())) == "refused"


_GARBAGE_STREAM = """
import numpy as np, scipy.sparse as sp, torch, dbsparse
a = sp.random(100, 100, density=0.05, format="csr", dtype=np.float32, random_state=1)
plan = dbsparse.plan_spmv(a)
try:
    plan(torch.ones(100, device="cuda"), stream=0xDEAD0000)
    torch.cuda.synchronize()
    print("ran")
except dbsparse.Error as e:
    print("refused:", e)
"""


@gpu
def test_raw_stream_handles_are_taken_only_where_known():
    plan = dbsparse.plan_spmv(A)
    x = torch.as_tensor(X).cuda()
    ref = A @ X
    side = torch.cuda.Stream()
    assert outcome(lambda: plan(x, stream=torch.cuda.current_stream().cuda_stream), ref) == "ok"
    assert outcome(lambda: plan(x, stream=side.cuda_stream)) == "refused"  # never seen as an object
    side.wait_stream(torch.cuda.current_stream())
    y = plan(x, stream=side)
    side.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
    y2 = plan(x, stream=side.cuda_stream)  # the same handle, now known
    side.synchronize()
    np.testing.assert_allclose(y2.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
    assert outcome(lambda: plan(x, stream=True)) == "refused"


@gpu
def test_a_garbage_stream_handle_is_refused_or_contained():
    """A raw int stream is taken as the caller's CUstream handle. A garbage one runs in a child
    process, so that a fault cannot take the suite down; the child must end with a named refusal."""
    r = subprocess.run([sys.executable, "-c", _GARBAGE_STREAM], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("refused"), (r.returncode, r.stdout, r.stderr[-2000:])

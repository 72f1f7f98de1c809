"""A hostile sweep of the Python surface that needs no GPU: matrices handed to the planners (SciPy,
torch) and compact layers built from arrays, each damaged in one way. Every case must end in a
named dbsparse exception (UsageError and its kinds) or succeed with what was given: never another
exception type, a crash, or a value silently changed (an index wrapped, a value turned inf)."""
import numpy as np
import pytest
import scipy.sparse as sp

import dbsparse
from dbsparse import _core
from dbsparse import _matrix as mat
from conftest import FakeCsr


def valid(seed=0, dtype=np.float32):
    return sp.random(7, 5, density=0.5, format="csr", dtype=dtype, random_state=np.random.default_rng(seed))


def damaged(a, how, rng):
    """One damaged copy of CSR a (arrays copied, so each case starts from a)."""
    ip, ix, v = a.indptr.astype(np.int64), a.indices.astype(np.int64), a.data.copy()
    k = int(rng.integers(0, max(len(ix), 1)))
    if how == "index_past_cols":
        ix[k] = a.shape[1] + int(rng.integers(0, 3))
    elif how == "index_negative":
        ix[k] = -1 - int(rng.integers(0, 5))
    elif how == "index_wraps":
        ix[k] = 2**32 + int(ix[k])  # narrowed to int32 it would be the original index again
    elif how == "indptr_decreasing":
        ip[1 + k % (len(ip) - 2)] = ip[-1] + 1
    elif how == "indptr_short":
        ip = ip[:-2]
    elif how == "indptr_past_nnz":
        ip[-1] += 3
    elif how == "value_nan":
        v[k] = np.nan
    elif how == "value_inf":
        v[k] = -np.inf
    elif how == "value_past_f32":
        v = v.astype(np.float64)
        v[k] = 1e300
    return ip, ix, v


HOW = ["index_past_cols", "index_negative", "index_wraps", "indptr_decreasing", "indptr_short", "indptr_past_nnz",
       "value_nan", "value_inf", "value_past_f32"]


@pytest.mark.parametrize("how", HOW)
def test_damaged_matrices_are_refused_by_name(how):
    rng = np.random.default_rng(HOW.index(how))
    for seed in range(20):
        a = valid(seed)
        with pytest.raises(dbsparse.UsageError):
            mat.host_csr(FakeCsr(a.shape, *damaged(a, how, rng)), "f32")


def test_valid_matrices_pass_unchanged():
    for seed in range(20):
        a = valid(seed, np.float64 if seed % 2 else np.float32)
        c = mat.host_csr(a, "f64" if seed % 2 else "f32")
        back = mat.to_scipy(c)
        assert (back != a).nnz == 0 and back.shape == a.shape


@pytest.mark.parametrize("obj", [np.ones((2, 2)), [1, 2], None, "A", sp.csr_matrix(np.ones((2, 2), np.complex64))])
def test_wrong_kinds_of_matrix_are_refused_by_name(obj):
    with pytest.raises(dbsparse.UsageError):
        mat.host_csr(obj, "f32")


def test_shapes_past_32_bits_are_refused():
    with pytest.raises(dbsparse.UsageError, match="2\\^31"):
        mat.host_csr(FakeCsr((5, 2**31 + 5), np.zeros(6, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)), "f32")


def test_compact_layers_from_random_arrays_never_crash():
    rng = np.random.default_rng(5)
    for _ in range(200):
        rows, cols = int(rng.integers(0, 3000)), int(rng.integers(0, 6))
        strips = (rows + 1023) // 1024
        n = cols * strips * 32 + int(rng.integers(-2, 3))
        masks = rng.integers(0, 2**32, max(n, 0), dtype=np.uint64).astype(np.uint32)
        seg = np.sort(rng.integers(0, 50, max(cols * strips + 1 + int(rng.integers(-1, 2)), 0))).astype(np.int32)
        vals = rng.integers(0, 2**16, int(rng.integers(0, 60)), dtype=np.uint32).astype(np.uint16)
        try:
            layer = _core.compact_layer("x", rows, cols, masks, seg, vals, "f16")
        except dbsparse.UsageError:
            continue
        assert layer.nnz == len(vals)  # accepted only when the arrays are consistent


_A = sp.random(10, 10, density=0.3, format="csr", dtype=np.float32, random_state=0)


@pytest.mark.parametrize("call, match", [
    (lambda: dbsparse.plan_spmm(_A, 8, reduce="median"), "reduce"),
    (lambda: dbsparse.plan_spmm(_A, 8, reduce=None), "reduce"),
    (lambda: dbsparse.plan_spmm(_A, 8, reduce="max", path="brp"), "CSR path"),
    (lambda: dbsparse.plan_sddmm(_A, 0), "k: an integer in 1 .. 512"),
    (lambda: dbsparse.plan_sddmm(_A, 513), "k: an integer in 1 .. 512"),
    (lambda: dbsparse.plan_sddmm(_A, 3.5), "k: an integer in 1 .. 512"),
    (lambda: dbsparse.plan_sddmm(_A, True), "k: an integer in 1 .. 512"),
    (lambda: dbsparse.plan_sddmm(_A, 8, dtype="f64"), "dtype"),
    (lambda: dbsparse.plan_sddmm(_A, 8, scale_by_values="yes"), "scale_by_values"),
    (lambda: dbsparse.plan_sddmm([[1.0]], 8), "A: expected"),
])
def test_gnn_plan_options_are_refused_by_name_before_the_device(call, match):
    # Checked before a context is made, so they fail the same way with or without a GPU.
    with pytest.raises(dbsparse.UsageError, match=match):
        call()


def test_call_argument_checks_name_what_they_refuse():
    from dbsparse import _arrays as arr
    x = (0x1000, (8,), "f32", 0, "torch")           # 32 bytes at 0x1000
    y_after = (0x1020, (4,), "f32", 0, "torch")     # starts where x ends: no overlap
    y_inside = (0x1010, (4,), "f32", 0, "torch")
    arr.disjoint("out", y_after, ("x", x), ("none", None))
    with pytest.raises(dbsparse.UsageError, match="out: overlaps x"):
        arr.disjoint("out", y_inside, ("x", x))
    with pytest.raises(dbsparse.UsageError, match="out: overlaps x"):
        arr.disjoint("out", x, ("x", x))
    arr.disjoint("out", (0x1000, (0,), "f32", 0, "torch"), ("x", x))  # an empty output overlaps nothing
    with pytest.raises(dbsparse.UsageError, match="on CUDA device 1, but the plan was made for device 0"):
        arr.check("x", (0x1000, (8,), "f32", 1, "torch"), (8,), "f32", 0)
    arr.check("x", x, (8,), "f32", 0)
    assert arr.real("alpha", 2) == 2.0 and arr.real("alpha", np.float32(0.5)) == 0.5
    for bad in ("2", b"2", None, [1.0], 1j):
        with pytest.raises(dbsparse.UsageError, match="alpha: expected a real number"):
            arr.real("alpha", bad)
    assert arr.vertex("source", np.int64(3)) == 3
    for bad in (1.5, "3", None, np.float64(2.0)):
        with pytest.raises(dbsparse.UsageError, match="source: expected an integer vertex"):
            arr.vertex("source", bad)


def test_raw_stream_ints_other_than_the_defaults_are_refused_without_a_framework_stream():
    from dbsparse import _arrays as arr
    for h in (0, 1, 2):
        assert arr.stream_of(h, "torch", 0) == h
    for bad in (0xDEAD0000, -1, True, "s", 1.5):
        with pytest.raises(dbsparse.UsageError, match="stream:"):
            arr.stream_of(bad, "torch", 0)

    class FakeStream:
        cuda_stream = 0x1234
    assert arr.stream_of(FakeStream(), "torch", 0) == 0x1234
    assert arr.stream_of(0x1234, "torch", 0) == 0x1234  # seen through an object before


@pytest.mark.parametrize("config", ["merge2=8", ["merge2"], {1: 2}, {"merge2": 1.5}, {"merge2": True}, {"merge2": "8"}])
def test_spgemm_refuses_a_config_that_is_not_a_dict_of_integers_before_any_gpu_work(config):
    a = valid()
    with pytest.raises(dbsparse.UsageError, match="config"):
        dbsparse.spgemm(a, a.T.tocsr(), config=config)

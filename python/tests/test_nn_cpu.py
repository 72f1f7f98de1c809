"""The nn package's pruning and column bitmap layout (torch, any device) against the C++ reference
(prune_magnitude / prune_wanda and make_compact_layer). Needs torch, not a GPU."""
import numpy as np
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch")

from dbsparse import _core, _matrix as mat  # noqa: E402
from dbsparse._errors import UsageError  # noqa: E402
from dbsparse.nn import _layout  # noqa: E402


def weights(rows, cols, seed):
    return np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)


def host_mask(csr, rows, cols):
    return mat.to_scipy(csr).toarray() != 0 if csr.rows else np.zeros((rows, cols), dtype=bool)


@pytest.mark.parametrize("rows,cols,sparsity", [(300, 64, 0.5), (77, 33, 0.7), (10, 9, 0.0)])
def test_magnitude_mask_matches_the_cpp_pruning(rows, cols, sparsity):
    w = weights(rows, cols, rows)
    ref = host_mask(_core.prune(w, sparsity, "magnitude", None), rows, cols)
    got = _layout.prune_mask(torch.from_numpy(w), sparsity).numpy()
    assert (got == ref).all()


def test_wanda_mask_matches_the_cpp_pruning():
    w = weights(200, 48, 5)
    norms = np.abs(np.random.default_rng(6).standard_normal(48)).astype(np.float32) + 0.1
    ref = host_mask(_core.prune(w, 0.5, "wanda", norms), 200, 48)
    got = _layout.prune_mask(torch.from_numpy(w), 0.5, "wanda", torch.from_numpy(norms)).numpy()
    assert (got == ref).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rows,cols", [(1100, 40), (2048, 70), (5, 3), (1024, 1)])
def test_column_bitmap_matches_the_cpp_layout(rows, cols, dtype):
    w = torch.from_numpy(weights(rows, cols, cols)).to(dtype)
    mask = _layout.prune_mask(w, 0.5)
    pruned = torch.where(mask, w, torch.zeros((), dtype=dtype))
    got = _layout.column_bitmap(pruned, mask)
    dense = pruned.float().numpy()
    c = sp.csr_matrix(np.where(mask.numpy(), dense, 0))
    c.eliminate_zeros()
    ref = _core.compact_from_csr("w", mat.host_csr(c, "f32"), "f16" if dtype == torch.float16 else "bf16")
    assert (got.rows, got.cols, got.strips, got.nnz) == (ref.rows, ref.cols, ref.strips, ref.nnz)
    assert (np.asarray(got.masks) == np.asarray(ref.masks)).all()
    assert (np.asarray(got.seg_ptr) == np.asarray(ref.seg_ptr)).all()
    assert (np.asarray(got.values) == np.asarray(ref.values)).all()
    back = _layout.dense_from_bitmap(got, torch.device("cpu"), dtype)
    assert torch.equal(back, pruned)


def test_layout_and_pruning_reject_bad_input():
    with pytest.raises(UsageError, match="sparsity"):
        _layout.prune_mask(torch.ones(4, 4), 1.0)
    with pytest.raises(UsageError, match="NaN"):
        _layout.prune_mask(torch.full((2, 2), float("nan")), 0.5)
    with pytest.raises(UsageError, match="norms"):
        _layout.prune_mask(torch.ones(4, 4), 0.5, "wanda")
    with pytest.raises(UsageError, match="expected magnitude"):
        _layout.prune_mask(torch.ones(4, 4), 0.5, "random")
    with pytest.raises(UsageError, match="f16 or bf16"):
        _layout.column_bitmap(torch.ones(4, 4), torch.ones(4, 4, dtype=torch.bool))


class _HostLayer:
    """A stand-in for SparseLinear's plan on the CPU: the custom op's registry takes any object with
    out_features and run_rows."""

    def __init__(self, w):
        self.w, self.out_features = w, w.shape[0]

    def run_rows(self, x):
        return x @ self.w.T


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_the_custom_op_traces_under_torch_compile_fullgraph(backend):
    from dbsparse.nn import _custom_op
    w = torch.randn(6, 4)
    layer = _HostLayer(w)
    h = _custom_op.register(layer)

    def f(x):
        return torch.relu(torch.ops.dbsparse.sparse_linear(x, h, 6)) * 2

    x = torch.randn(3, 4)
    got = torch.compile(f, fullgraph=True, backend=backend)(x)
    assert torch.allclose(got, torch.relu(x @ w.T) * 2)


def test_a_freed_layer_leaves_the_custom_op_registry():
    import gc
    from dbsparse.nn import _custom_op
    h = _custom_op.register(_HostLayer(torch.ones(2, 2)))
    gc.collect()
    with pytest.raises(UsageError, match="gone"):
        torch.ops.dbsparse.sparse_linear(torch.ones(1, 2), h, 2)


def test_one_compiled_function_serves_layers_of_other_handles():
    from dbsparse.nn import _custom_op
    a, b = _HostLayer(torch.randn(6, 4)), _HostLayer(torch.randn(3, 6))
    c, d = _HostLayer(torch.randn(6, 4)), _HostLayer(torch.randn(3, 6))
    ha, hb, hc, hd = (_custom_op.register(layer) for layer in (a, b, c, d))

    def f(x, h1, h2):
        return torch.ops.dbsparse.sparse_linear(torch.ops.dbsparse.sparse_linear(x, h1, 6), h2, 3)

    g = torch.compile(f, fullgraph=True, backend="aot_eager")
    x = torch.randn(2, 4)
    assert torch.allclose(g(x, ha, hb), x @ a.w.T @ b.w.T, atol=1e-5)
    assert torch.allclose(g(x, hc, hd), x @ c.w.T @ d.w.T, atol=1e-5)


def test_input_norms_are_each_features_l2_norm_over_every_token():
    import dbsparse.nn as dnn
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    batches = [torch.randn(5, 4), torch.randn(2, 7, 4)]
    got = dnn.input_norms(model, batches)
    x = torch.cat([batches[0], batches[1].reshape(-1, 4)])
    assert torch.allclose(got["0"], x.norm(dim=0))
    h = torch.relu(model[0](x))
    assert torch.allclose(got["2"], h.norm(dim=0), atol=1e-5)
    with pytest.raises(UsageError, match="no nn.Linear"):
        dnn.input_norms(torch.nn.ReLU(), batches)


def test_compact_layers_from_arrays_are_checked_and_survive_a_file(tmp_path):
    w = torch.from_numpy(weights(1100, 40, 9)).half()
    mask = _layout.prune_mask(w, 0.5)
    layer = _layout.column_bitmap(torch.where(mask, w, torch.zeros((), dtype=w.dtype)), mask, "a.b")
    masks, seg, vals = (np.array(x) for x in (layer.masks, layer.seg_ptr, layer.values))
    with pytest.raises(UsageError, match="masks of 2560 words"):
        _core.compact_layer("x", 1100, 40, masks[:-1], seg, vals, "f16")
    with pytest.raises(UsageError, match="f16 or bf16"):
        _core.compact_layer("x", 1100, 40, masks, seg, vals, "f32")
    bad = masks.copy()
    bad[(0 * 2 + 1) * 32 + 31] |= 1  # column 0, strip 1, last word: row 2016, past row 1099
    with pytest.raises(UsageError, match="past row 1099"):
        _core.compact_layer("x", 1100, 40, bad, seg, vals, "f16")
    path = str(tmp_path / "l.safetensors")
    _core.write_compact_weights(path, [layer], {"a.b.settings": "{}"})
    back = _core.read_compact_weights(path)[0]
    assert back.name == "a.b" and (np.asarray(back.values) == vals).all()


def test_layout_round_trips_on_random_shapes_and_densities():
    """Property: for any shape and kept share, the bitmap holds exactly the kept weights and reads
    back to the masked matrix; the C++ check accepts it (it would raise otherwise)."""
    rng = np.random.default_rng(11)
    for _ in range(30):
        rows, cols = int(rng.integers(1, 2600)), int(rng.integers(1, 70))
        w = torch.from_numpy(rng.standard_normal((rows, cols)).astype(np.float32)).to(torch.bfloat16)
        mask = torch.from_numpy(rng.random((rows, cols)) < rng.random())
        pruned = torch.where(mask, w, torch.zeros((), dtype=w.dtype))
        layer = _layout.column_bitmap(pruned, mask)
        assert layer.nnz == int(mask.sum())
        assert torch.equal(_layout.dense_from_bitmap(layer, torch.device("cpu"), torch.bfloat16), pruned)


def test_the_python_surface_refuses_bad_arguments_by_name():
    import dbsparse.nn as dnn
    with pytest.raises(UsageError, match="2-D"):
        dnn.SparseLinear(torch.ones(3))
    with pytest.raises(UsageError, match="dtype"):
        dnn.SparseLinear(torch.ones(2, 2, dtype=torch.int32))
    with pytest.raises(UsageError, match="CUDA"):
        dnn.SparseLinear(torch.ones(2, 2))
    with pytest.raises(UsageError, match="no SparseLinear"):
        dnn.calibrate(torch.nn.Linear(2, 2), [torch.ones(1, 2)])
    with pytest.raises(UsageError, match="density"):
        dnn.calibrate(torch.nn.Linear(2, 2), [torch.ones(1, 2)], density=0)
    with pytest.raises(UsageError, match="no SparseLinear"):
        dnn.save_pruned(torch.nn.Linear(2, 2), "/tmp/unused-dbsparse-save")
    with pytest.raises(UsageError, match="not found"):
        dnn.load_pruned(torch.nn.Linear(2, 2), "/nonexistent-dbsparse-folder")

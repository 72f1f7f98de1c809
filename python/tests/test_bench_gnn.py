"""`python -m dbsparse.bench gnn`: its options, the generated graphs' sizes and degrees, the GCN
normalisation, and a tiny run on the CPU (the PyTorch path on both sides: the check must pass).
The GPU run is the lead's (tools/device/python_run.sh gnn)."""
import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

torch = pytest.importorskip("torch")

from dbsparse import UsageError, bench, bench_gnn  # noqa: E402


def test_options_are_checked_naming_the_option(tmp_path):
    a = bench_gnn.parse_args([])
    assert a.graphs == ["cora", "pubmed", "arxiv"] and a.models == ["gcn", "sage"] and a.tol == 1e-4
    assert bench_gnn.parse_args(["--dtype", "bf16"]).tol == 3e-2
    for argv, opt in ((["--graphs", "cora,reddit"], "--graphs"), (["--models", "gat"], "--models"),
                      (["--dtype", "f64"], "--dtype"), (["--epochs", "0"], "--epochs"), (["--scale", "2"], "--scale"),
                      (["--device", "tpu"], "--device"), (["--graphs", "none"], "--graphs none"),
                      (["--cuda-graph", "--device", "cpu"], "--cuda-graph"),
                      (["--matrices", str(tmp_path / "missing.mtx")], "--matrices")):
        with pytest.raises(UsageError, match=opt):
            bench_gnn.parse_args(argv)
    assert bench.main(["gnn", "--models", "gat"]) == 2


def test_generated_graph_has_the_size_and_a_power_law_profile():
    a = bench_gnn.power_law_graph(19717, 88648, 0)
    assert a.shape == (19717, 19717)
    assert abs(a.nnz - 88648) / 88648 < 0.02
    assert (a != a.T).nnz == 0 and a.diagonal().sum() == 0
    deg = np.diff(a.indptr)
    assert deg.max() > 20 * deg.mean()      # hubs
    assert np.median(deg) <= deg.mean()     # most nodes below the mean


def test_gcn_normalisation_is_symmetric_with_self_loops():
    a = sp.csr_matrix(np.array([[0, 1, 1], [1, 0, 0], [1, 0, 0]], dtype=np.float32))
    n = bench_gnn.gcn_norm(a).toarray()
    deg = np.array([3.0, 2.0, 2.0])
    want = (a.toarray() + np.eye(3)) / np.sqrt(np.outer(deg, deg))
    np.testing.assert_allclose(n, want, rtol=1e-6)


def test_tiny_cpu_run_checks_and_writes_json(tmp_path, capsys):
    m = tmp_path / "ring.mtx"
    ring = sp.diags([1, 1], [1, -1], shape=(40, 40), format="coo", dtype=np.float32)
    scipy.io.mmwrite(str(m), ring)
    out = tmp_path / "r.json"
    rc = bench.main(["gnn", "--device", "cpu", "--graphs", "cora", "--scale", "0.05", "--features", "16",
                     "--epochs", "2", "--reps", "1", "--warmup", "1", "--matrices", str(m), "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert [(r["graph"], r["model"]) for r in res["rows"]] == [("corax0.05", "gcn"), ("corax0.05", "sage"),
                                                               ("ring.mtx", "gcn"), ("ring.mtx", "sage")]
    for r in res["rows"]:
        assert r["check"]["ok"] and r["dbsparse_ms"] > 0 and r["torch_ms"] > 0
        assert r["check"]["grad_rel_diff"] <= 1e-4
    assert res["rows"][2]["edges"] == 78  # a path of 40 nodes: 39 edges each way
    assert "geomean x torch" in capsys.readouterr().out


def test_without_a_gpu_the_cuda_run_says_why():
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    assert bench.main(["gnn", "--graphs", "cora"]) == 77


def test_a_wrong_aggregation_fails_the_check(monkeypatch, tmp_path):
    real = bench_gnn.aggregators

    def off_by_one_percent(model, a, device, dtype):
        d, t, g = real(model, a, device, dtype)
        return (lambda z: d(z) * 1.01), t, g

    monkeypatch.setattr(bench_gnn, "aggregators", off_by_one_percent)
    out = tmp_path / "r.json"
    rc = bench.main(["gnn", "--device", "cpu", "--graphs", "cora", "--scale", "0.05", "--features", "16",
                     "--models", "gcn", "--epochs", "1", "--reps", "1", "--warmup", "0", "--json", str(out)])
    assert rc == 1
    c = json.loads(out.read_text())["rows"][0]["check"]
    assert not c["ok"] and c["grad_rel_diff"] > 1e-3

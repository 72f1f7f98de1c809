"""What works on a machine with no GPU: import, errors, argument checks, kernel precompilation."""
import os
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

import dbsparse
from dbsparse import _arrays, _core, _matrix
from conftest import HAVE_GPU


def test_imports_and_reports_version():
    assert dbsparse.__version__.count(".") == 2
    ok, why = dbsparse.device_available()
    assert isinstance(ok, bool) and (ok or why)


def test_errors_are_python_classes():
    assert issubclass(dbsparse.UsageError, ValueError)
    assert issubclass(dbsparse.DeviceError, RuntimeError)
    assert issubclass(dbsparse.InputError, dbsparse.UsageError)
    assert issubclass(dbsparse.CompileError, dbsparse.DeviceError)
    assert issubclass(dbsparse.DeviceOutOfMemory, dbsparse.DeviceError)
    assert issubclass(dbsparse.DeviceOutOfMemory, MemoryError)
    assert issubclass(dbsparse.HostMemoryError, MemoryError)


def test_bad_csr_arrays_raise_usage_error_naming_the_argument():
    ip = np.array([0, 1, 2], dtype=np.int32)
    with pytest.raises(dbsparse.UsageError, match="indptr"):
        _core.make_CsrF32(3, 3, ip, np.array([0, 1], dtype=np.int32), np.ones(2, np.float32))
    with pytest.raises(dbsparse.UsageError, match="indices\\[1\\]"):
        _core.make_CsrF32(2, 3, ip, np.array([0, 7], dtype=np.int32), np.ones(2, np.float32))
    with pytest.raises(dbsparse.UsageError, match="decreases"):
        _core.make_CsrF32(2, 3, np.array([0, 2, 1], dtype=np.int32), np.array([0], dtype=np.int32),
                          np.ones(1, np.float32))
    with pytest.raises(dbsparse.UsageError, match="must match"):
        _core.make_CsrF32(2, 3, ip, np.array([0, 1], dtype=np.int32), np.ones(3, np.float32))


def test_scipy_matrix_converts_with_the_same_entries():
    a = sp.random(50, 40, density=0.1, format="csr", dtype=np.float64, random_state=np.random.default_rng(1))
    c = _matrix.host_csr(a, "f64")
    assert (c.rows, c.cols, c.nnz) == (50, 40, a.nnz)
    back = _matrix.to_scipy(c)
    assert (back != a).nnz == 0
    coo = _matrix.host_csr(a.tocoo(), "f32")
    assert coo.nnz == a.nnz


def test_wrong_kinds_of_input_are_refused():
    with pytest.raises(dbsparse.UsageError, match="A: expected"):
        _matrix.host_csr([[1, 2]], "f32")
    with pytest.raises(dbsparse.UsageError, match="x: a host array"):
        _arrays.device_array(np.ones(4, np.float32), "x")
    with pytest.raises(dbsparse.UsageError, match="y: expected a CUDA array"):
        _arrays.device_array(object(), "y")
    with pytest.raises(dbsparse.UsageError, match="direction"):
        dbsparse.plan_spmspv(sp.eye(4, format="csr"), direction="sideways")
    with pytest.raises(dbsparse.UsageError, match="dtype"):
        dbsparse.plan_spmm(sp.eye(4, format="csr"), 8, dtype="f64")
    with pytest.raises(dbsparse.UsageError, match="op"):
        dbsparse.explain(sp.eye(4, format="csr"), op="fft")


def test_pruning_keeps_the_largest_weights():
    w = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    c = _core.prune(w, 0.5, "magnitude", None)
    assert c.nnz == 6 and list(c.indices()[:2]) == [2, 3]
    with pytest.raises(dbsparse.UsageError, match="norms"):
        _core.prune(w, 0.5, "wanda", None)
    with pytest.raises(dbsparse.UsageError, match="method"):
        _core.prune(w, 0.5, "random", None)


@pytest.mark.skipif(HAVE_GPU, reason="checks the no-GPU error")
def test_planning_without_a_gpu_raises_device_error():
    with pytest.raises(dbsparse.DeviceError):
        dbsparse.plan_spmv(sp.eye(8, format="csr", dtype=np.float32))


def test_bad_spmv_reorder_is_refused_before_any_device_work():
    with pytest.raises(dbsparse.UsageError, match="reorder: none, degree or auto"):
        dbsparse.plan_spmv(sp.random(20, 20, density=0.2, format="csr", dtype=np.float32), reorder="rcm")


def test_bad_spmm_epilogue_is_refused_before_any_device_work():
    with pytest.raises(dbsparse.UsageError, match="epilogue: none or relu"):
        dbsparse.plan_spmm(sp.eye(8, format="csr", dtype=np.float32), 8, epilogue="gelu")


def test_precompiles_kernels_without_a_gpu(tmp_path, monkeypatch):
    try:
        dbsparse._tools._program("dbsparse")
    except dbsparse.UsageError:
        pytest.fail("the dbsparse program is neither installed with the package nor on PATH")
    monkeypatch.setenv("DBSPARSE_CACHE_DIR", str(tmp_path))
    log = dbsparse.precompile(arch="sm_90", ops=["spmv"])
    assert "kernels ready" in log
    assert any(os.scandir(tmp_path))


def test_cli_help_and_unknown_command(capsys):
    from dbsparse._tools import main
    assert main(["--help"]) == 0
    assert "tune" in capsys.readouterr().out
    assert main(["frobnicate"]) == 2


def test_random_csr_arguments_give_a_matrix_or_usage_error():
    """The Python argument conversion under random (mostly wrong) CSR arrays: a matrix whose
    invariants hold, or UsageError; never another exception or a crash (issue 36's Python part)."""
    rng = np.random.default_rng(36)
    ok = bad = 0
    for _ in range(3000):
        rows, cols = (int(v) for v in rng.integers(-2, 8, 2))
        n = int(rng.integers(0, 10))
        indptr = rng.integers(-1, 10, int(rng.integers(0, 10))).astype(np.int32)
        if rng.random() < 0.5 and rows >= 0:  # often a plausible indptr, to get past the first checks
            indptr = np.sort(rng.integers(0, n + 1, rows + 1)).astype(np.int32)
            indptr[0] = 0
            if rows >= 0:
                indptr[-1] = n
        indices = rng.integers(-1, max(cols, 1) + 1, n).astype(np.int32)
        data = rng.standard_normal(int(rng.integers(0, 10)) if rng.random() < 0.2 else n).astype(np.float32)
        try:
            c = _core.make_CsrF32(rows, cols, indptr, indices, data)
        except dbsparse.UsageError:
            bad += 1
            continue
        ok += 1
        ip, ix = c.indptr(), c.indices()
        assert ip[0] == 0 and (np.diff(ip) >= 0).all() and ip[-1] == c.nnz
        assert ((ix >= 0) & (ix < c.cols)).all()
    assert ok > 0 and bad > 0


def test_core_stub_names_what_the_module_has():
    """_core.pyi (nanobind's stubgen writes it at build time, python/CMakeLists.txt) went with the
    package: every class, method, property and function it names exists in the compiled module, and
    every public one of the module is in it (names, not signatures)."""
    import ast
    stub = ast.parse(open(os.path.join(os.path.dirname(dbsparse.__file__), "_core.pyi")).read())
    missing, unlisted, top = [], [], set()
    for node in stub.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            listed = {n.name for n in node.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
            listed |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
            have = {a for a in dir(getattr(_core, node.name, None)) if not a.startswith("_")}
            if not hasattr(_core, node.name):
                missing.append(node.name)
                continue
            missing += [f"{node.name}.{n}" for n in sorted(listed - have)]
            unlisted += [f"{node.name}.{n}" for n in sorted(have - listed)]
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
            if not hasattr(_core, node.name):
                missing.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
    unlisted += [a for a in dir(_core) if not a.startswith("_") and a not in top]
    assert not missing, f"in _core.pyi, not in the module: {missing}"
    assert not unlisted, f"in the module, not in _core.pyi: {unlisted}"


# The exit hook's release (dbsparse._lifetime): every registered holder's native references
# dropped, and a released plan's use a UsageError naming it. In a child process: the release
# reaches every live plan of the process it runs in.
_RELEASE_SCRIPT = """
import dbsparse
from dbsparse import _lifetime, _ops
class Native:
    def config_json(self): return '{}'
    def explain(self): return 'native'
class SomePlan(_ops._Plan):
    pass
p = SomePlan("spmv", Native(), object(), 0)
assert p.explain()["text"] == "native"
assert not _lifetime.released()
_lifetime.release_all()
_lifetime.release_all()  # twice: idempotent
assert _lifetime.released()
try:
    p.explain()
except dbsparse.UsageError as e:
    assert "SomePlan" in str(e) and "released at interpreter exit" in str(e), e
    print("ok")
"""


def test_exit_release_drops_native_references_and_names_a_later_use():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _RELEASE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr

"""`python -m dbsparse.bench`: the Python call's added cost over the C++ plan call, and dbsparse
against torch.sparse and CuPy (cuSPARSE underneath both) on generated matrices, same process and
GPU. Times are medians of CUDA-event timings (each a batch of calls); JSON with --json.

`python -m dbsparse.bench llm ...`: a Llama-architecture model, dense against sparse (bench_llm.py).
`python -m dbsparse.bench gnn ...`: GCN and GraphSAGE training, dbsparse against torch (bench_gnn.py)."""
import argparse
import json
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

import dbsparse


def suite(n, seed=0):
    """uniform (16 a row), stencil (2-D 5-point), power-law (Zipf row lengths): f32 SciPy CSR."""
    rng = np.random.default_rng(seed)
    side = int(round(n ** 0.5))
    lap = sp.diags([4, -1, -1, -1, -1], [0, 1, -1, side, -side], shape=(side * side, side * side), format="csr",
                   dtype=np.float32)
    deg = np.minimum(rng.zipf(1.8, n), n // 10).astype(np.int64)
    rows = np.repeat(np.arange(n), deg)
    cols = rng.integers(0, n, rows.size)
    pl = sp.csr_matrix((rng.standard_normal(rows.size).astype(np.float32), (rows, cols)), shape=(n, n))
    pl.sum_duplicates()
    uni = sp.random(n, n, density=16 / n, format="csr", dtype=np.float32, random_state=np.random.default_rng(seed))
    return {"uniform": uni, "stencil": lap, "powerlaw": pl}


def timed(torch, fn, reps=20, batch=10):
    """Median µs of one call, over `reps` batches of `batch` calls between CUDA events."""
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(batch):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1000 / batch)
    return statistics.median(out)


def overhead(torch, calls=20000):
    a = sp.random(1000, 1000, density=5e-3, format="csr", dtype=np.float32, random_state=np.random.default_rng(1))
    plan = dbsparse.plan_spmv(a)
    x, y = torch.randn(1000, device="cuda"), torch.empty(1000, device="cuda")
    core, s = plan._plan, torch.cuda.current_stream().cuda_stream
    xp, yp = x.data_ptr(), y.data_ptr()
    res = {}
    for name, fn in (("python_call_us", lambda: plan(x, out=y)), ("core_call_us", lambda: core.run(xp, yp, s, 1.0, 0.0))):
        fn()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls // 5):
                fn()
            best = min(best, (time.perf_counter() - t0) / (calls // 5) * 1e6)
            torch.cuda.synchronize()
        res[name] = best
    res["gpu_us"] = timed(torch, lambda: core.run(xp, yp, s, 1.0, 0.0))
    res["added_us"] = res["python_call_us"] - res["core_call_us"]
    return res


def maybe(torch, fn, **kw):
    """timed(), or None when the baseline refuses the input (its error printed once)."""
    try:
        return timed(torch, fn, **kw)
    except Exception as e:  # noqa: BLE001 - a baseline's failure is reported, not fatal
        print(f"  baseline failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}", flush=True)
        return None


def side_by_side(torch, n, n_cols):
    try:
        import cupy
        import cupyx.scipy.sparse as csp
    except ImportError:
        cupy = None
    rows = []
    for name, a in suite(n).items():
        ta = torch.sparse_csr_tensor(torch.as_tensor(a.indptr, dtype=torch.int32), torch.as_tensor(a.indices, dtype=torch.int32),
                                     torch.as_tensor(a.data), size=a.shape).cuda()
        x = torch.randn(a.shape[1], device="cuda")
        y = torch.empty(a.shape[0], device="cuda")
        b = torch.randn(a.shape[1], n_cols, device="cuda")
        c = torch.empty(a.shape[0], n_cols, device="cuda")
        pv, pm = dbsparse.plan_spmv(a), dbsparse.plan_spmm(a, n_cols)
        r = {"matrix": name, "rows": a.shape[0], "nnz": int(a.nnz)}
        r["spmv"] = {"dbsparse": timed(torch, lambda: pv(x, out=y)), "torch": maybe(torch, lambda: torch.mv(ta, x))}
        r["spmm"] = {"dbsparse": timed(torch, lambda: pm(b, out=c)), "torch": maybe(torch, lambda: torch.sparse.mm(ta, b))}
        r["spgemm"] = {"dbsparse": timed(torch, lambda: dbsparse.spgemm(ta, ta), reps=5, batch=2),
                       "torch": maybe(torch, lambda: torch.sparse.mm(ta, ta), reps=5, batch=2)}
        if cupy is not None:
            ca = csp.csr_matrix(a)
            cx, cb = cupy.asarray(x.cpu().numpy()), cupy.asarray(b.cpu().numpy())
            r["spmv"]["cupy"] = maybe(torch, lambda: ca @ cx)
            r["spmm"]["cupy"] = maybe(torch, lambda: ca @ cb)
            r["spgemm"]["cupy"] = maybe(torch, lambda: ca @ ca, reps=5, batch=2)
        for op in ("spmv", "spmm", "spgemm"):
            for other in ("torch", "cupy"):
                if r[op].get(other):
                    r[op][f"x_over_{other}"] = r[op][other] / r[op]["dbsparse"]
        rows.append(r)
        print(f"{name:<9} nnz {a.nnz:>9}  " + "  ".join(
            f"{op} {r[op]['dbsparse']:.1f} us (torch " + (f"{r[op]['x_over_torch']:.2f}x" if "x_over_torch" in r[op] else "failed")
            + (f", cupy {r[op]['x_over_cupy']:.2f}x" if "x_over_cupy" in r[op] else "") + ")"
            for op in ("spmv", "spmm", "spgemm")), flush=True)
    return rows


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["llm"]:
        from . import bench_llm
        return bench_llm.main(argv[1:])
    if argv[:1] == ["gnn"]:
        from . import bench_gnn
        return bench_gnn.main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m dbsparse.bench", description=__doc__)
    ap.add_argument("--n", type=int, default=100_000, help="rows of the generated matrices (default 100000)")
    ap.add_argument("--n-cols", type=int, default=32, help="columns of B for SpMM (default 32)")
    ap.add_argument("--json", help="write the results here")
    ap.epilog = ("python -m dbsparse.bench llm --help: the LLM decode and prefill bench; "
                 "python -m dbsparse.bench gnn --help: GCN and GraphSAGE training epochs")
    a = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("python -m dbsparse.bench needs torch (CUDA)", file=sys.stderr)
        return 2
    ok, why = dbsparse.device_available()
    if not ok or not torch.cuda.is_available():
        print(f"no CUDA device ({why}): nothing to time", file=sys.stderr)
        return 77
    res = {"device": torch.cuda.get_device_name(), "dbsparse": dbsparse.__version__, "torch": torch.__version__}
    res["overhead"] = overhead(torch)
    o = res["overhead"]
    print(f"SpMV 1000x1000: python call {o['python_call_us']:.2f} us, core call {o['core_call_us']:.2f} us, "
          f"added {o['added_us']:.2f} us (target <= 5); GPU time {o['gpu_us']:.2f} us", flush=True)
    res["suite"] = side_by_side(torch, a.n, a.n_cols)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

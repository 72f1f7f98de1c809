"""Per-layer timings of SparseLinear on the device: top-k (keep) against a threshold, and the mapping."""
import torch
from dbsparse.nn import SparseLinear


def timed(fn, reps=200):
    g = torch.cuda.CUDAGraph()
    fn(); torch.cuda.synchronize()
    with torch.cuda.graph(g):
        fn()
    g.replay(); torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        g.replay()
    e.record(); e.synchronize()
    return s.elapsed_time(e) * 1e3 / reps


torch.manual_seed(0)
for rows, cols in ((14336, 4096), (4096, 14336)):
    lin = torch.nn.Linear(cols, rows, bias=False, dtype=torch.float16, device="cuda")
    x = torch.randn(1, cols, dtype=torch.float16, device="cuda")
    tau = x.abs().float().median().item()
    print(f"{rows}x{cols}: dense {timed(lambda: lin(x)):.1f} us")
    for kw in (dict(keep=0.5), dict(act_threshold=tau, act_density=0.5), dict(keep=0.5, mapping="ring")):
        m = SparseLinear.from_linear(lin, sparsity=0.5, **kw)
        print(f"  {kw}: {timed(lambda: m(x)):.1f} us mapping {m.explain()['mapping']}")
    print(m.explain()["text"])

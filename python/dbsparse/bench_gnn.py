"""`python -m dbsparse.bench gnn`: GCN (2 layers, sum over the symmetric-normalised adjacency
D^-1/2 (A + I) D^-1/2) and GraphSAGE (2 layers, mean over the neighbours plus a root term)
training epochs (forward, backward, Adam step, full batch) with dbsparse.spmm against the same
model with torch.sparse.mm (sum) and torch's scatter_reduce (mean), same weights, in one process.

Graphs: generated with the node and edge counts and feature/class widths of Planetoid Cora and
PubMed and of ogbn-arxiv, and power-law (Chung-Lu) degrees, undirected; plus any Matrix Market
file given with --matrices (square; its pattern is the graph). Before timing, one step of each
variant from the same weights: the losses and every parameter's gradient must agree within
--tol (exit 1 otherwise)."""
import argparse
import copy
import datetime
import json
import os
import shlex
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from ._errors import UsageError

# name: (nodes, directed edges, features, classes) of the dataset the graph is sized after
PRESETS = {"cora": (2708, 10556, 1433, 7), "pubmed": (19717, 88648, 500, 3), "arxiv": (169343, 1166243, 128, 40)}
MODELS = ("gcn", "sage")
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def parser():
    ap = argparse.ArgumentParser(prog="python -m dbsparse.bench gnn", description=__doc__)
    ap.add_argument("--graphs", default="cora,pubmed,arxiv",
                    help=f"generated graphs sized as {', '.join(PRESETS)} (comma-separated; 'none' for only "
                         "--matrices; default all)")
    ap.add_argument("--matrices", nargs="*", default=[], help="Matrix Market files (square) used as graphs")
    ap.add_argument("--models", default="gcn,sage", help="gcn, sage or both (default gcn,sage)")
    ap.add_argument("--hidden", type=int, default=64, help="hidden width (default 64)")
    ap.add_argument("--features", type=int, default=0, help="input features (default: the dataset's; 128 for files)")
    ap.add_argument("--classes", type=int, default=0, help="classes (default: the dataset's; 16 for files)")
    ap.add_argument("--dtype", default="f32", help="f32, bf16 or f16: the model's and the features' (default f32)")
    ap.add_argument("--epochs", type=int, default=20, help="timed epochs per sample (default 20)")
    ap.add_argument("--reps", type=int, default=5, help="timed samples; the median is reported (default 5)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed epochs first (default 3)")
    ap.add_argument("--scale", type=float, default=1.0, help="scale the generated graphs' nodes and edges (default 1)")
    ap.add_argument("--tol", type=float, default=0.0,
                    help="relative tolerance of the loss and gradient check (default 1e-4 f32, 3e-2 half)")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (the PyTorch path on both sides)")
    ap.add_argument("--seed", type=int, default=0, help="graphs, features, labels and weights (default 0)")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="also capture each variant's whole training step (forward, backward, Adam) in one CUDA graph "
                         "and time its replays: what small graphs, whose epochs are launch-bound, gain; a variant "
                         "that cannot be captured is reported with why")
    ap.add_argument("--json", help="write every figure here")
    return ap


def _names(text, allowed, opt):
    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [n for n in names if n not in allowed]
    if bad:
        raise UsageError(f"--{opt}: unknown {', '.join(bad)}; expected {', '.join(allowed)}")
    return names


def parse_args(argv):
    """The options, checked: UsageError naming the option for a bad value."""
    a = parser().parse_args(argv)
    a.graphs = [] if a.graphs.strip() == "none" else _names(a.graphs, PRESETS, "graphs")
    a.models = _names(a.models, MODELS, "models")
    if not a.models:
        raise UsageError("--models: at least one of gcn, sage")
    if not a.graphs and not a.matrices:
        raise UsageError("--graphs none: give --matrices then")
    if a.dtype not in DTYPES:
        raise UsageError(f"--dtype: f32, bf16 or f16, got {a.dtype!r}")
    for name in ("hidden", "epochs", "reps"):
        if getattr(a, name) < 1:
            raise UsageError(f"--{name}: at least 1, got {getattr(a, name)}")
    for name in ("features", "classes", "warmup"):
        if getattr(a, name) < 0:
            raise UsageError(f"--{name}: at least 0, got {getattr(a, name)}")
    if not 0 < a.scale <= 1:
        raise UsageError(f"--scale: in (0, 1], got {a.scale}")
    if a.device not in ("cuda", "cpu"):
        raise UsageError(f"--device: cuda or cpu, got {a.device!r}")
    if a.cuda_graph and a.device != "cuda":
        raise UsageError("--cuda-graph: needs --device cuda")
    for m in a.matrices:
        if not os.path.isfile(m):
            raise UsageError(f"--matrices: {m}: no such file")
    if a.tol <= 0:
        a.tol = 1e-4 if a.dtype == "f32" else 3e-2
    return a


def power_law_graph(nodes, edges, seed, gamma=2.5):
    """An undirected graph (SciPy CSR pattern, no self loops) of about `edges` directed edges whose
    expected degrees follow a power law of exponent gamma (Chung-Lu: endpoints drawn in proportion
    to node weights (rank + 1)^(-1 / (gamma - 1)))."""
    rng = np.random.default_rng(seed)
    w = (np.arange(nodes) + 1.0) ** (-1.0 / (gamma - 1.0))
    p = w / w.sum()
    perm = rng.permutation(nodes)  # hubs anywhere, not rows 0, 1, 2...
    pairs = np.empty((0, 2), dtype=np.int64)
    for _ in range(8):
        need = edges // 2 - len(pairs)
        if need <= 0:
            break
        u = perm[rng.choice(nodes, size=int(need * 1.2) + 16, p=p)]
        v = perm[rng.choice(nodes, size=u.size, p=p)]
        keep = u != v
        new = np.stack([np.minimum(u, v), np.maximum(u, v)], 1)[keep]
        pairs = np.unique(np.concatenate([pairs, new]), axis=0)
    pairs = pairs[rng.permutation(len(pairs))[:edges // 2]]
    r = np.concatenate([pairs[:, 0], pairs[:, 1]])
    c = np.concatenate([pairs[:, 1], pairs[:, 0]])
    a = sp.csr_matrix((np.ones(r.size, np.float32), (r, c)), shape=(nodes, nodes))
    a.sum_duplicates()
    return a


def read_matrix(path):
    import scipy.io
    a = sp.csr_matrix(scipy.io.mmread(path))
    if a.shape[0] != a.shape[1]:
        raise UsageError(f"--matrices: {path} is {a.shape[0]}x{a.shape[1]}; a graph's adjacency is square")
    a.setdiag(0)
    a.eliminate_zeros()
    a.data[:] = 1.0
    return a.astype(np.float32)


def gcn_norm(a):
    """D^-1/2 (A + I) D^-1/2 (float32 CSR)."""
    a = (a + sp.eye(a.shape[0], dtype=np.float32, format="csr")).tocsr()
    d = np.asarray(a.sum(axis=1)).ravel() ** -0.5
    return (sp.diags(d) @ a @ sp.diags(d)).astype(np.float32).tocsr()


class GCN(torch.nn.Module):
    def __init__(self, f, h, c, agg):
        super().__init__()
        self.l1, self.l2, self.agg = torch.nn.Linear(f, h), torch.nn.Linear(h, c), agg

    def forward(self, x):
        return self.agg(self.l2(torch.relu(self.agg(self.l1(x)))))


class SAGE(torch.nn.Module):
    """GraphSAGE-mean: lin_l(mean of the neighbours) + lin_r(self), transformed before the mean
    (the same product: the mean is linear)."""

    def __init__(self, f, h, c, agg):
        super().__init__()
        self.l1, self.r1 = torch.nn.Linear(f, h), torch.nn.Linear(f, h, bias=False)
        self.l2, self.r2 = torch.nn.Linear(h, c), torch.nn.Linear(h, c, bias=False)
        self.agg = agg

    def forward(self, x):
        h = torch.relu(self.agg(self.l1(x)) + self.r1(x))
        return self.agg(self.l2(h)) + self.r2(h)


def aggregators(model, a, device, dtype):
    """(dbsparse's, torch's) aggregation of `model` over A's pattern (gcn: the normalised A)."""
    import dbsparse
    if model == "gcn":
        an = gcn_norm(a)
        g = dbsparse.Graph(an, device=device)
        t = torch.sparse_csr_tensor(torch.from_numpy(an.indptr.astype(np.int64)),
                                    torch.from_numpy(an.indices.astype(np.int64)),
                                    torch.from_numpy(an.data).to(dtype), size=an.shape).to(device)
        return (lambda z: dbsparse.spmm(g, z, reduce="sum")), (lambda z: torch.sparse.mm(t, z)), g
    g = dbsparse.Graph(a, device=device)
    coo = a.tocoo()
    dst = torch.from_numpy(coo.row.astype(np.int64)).to(device)
    src = torch.from_numpy(coo.col.astype(np.int64)).to(device)
    n = a.shape[0]

    def scatter_mean(z):
        idx = dst.unsqueeze(1).expand(-1, z.shape[1])
        return z.new_zeros(n, z.shape[1]).scatter_reduce(0, idx, z.index_select(0, src), "mean", include_self=False)

    return (lambda z: dbsparse.spmm(g, z, reduce="mean")), scatter_mean, g


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def epoch_ms(step, a):
    """Median ms of one epoch over a.reps samples of a.epochs epochs (CUDA events on a GPU)."""
    out = []
    for _ in range(a.reps):
        if a.device == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(a.epochs):
                step()
            e.record()
            e.synchronize()
            out.append(s.elapsed_time(e) / a.epochs)
        else:
            t0 = time.perf_counter()
            for _ in range(a.epochs):
                step()
            out.append((time.perf_counter() - t0) * 1000 / a.epochs)
    return statistics.median(out)


def _rel(x, y):
    x, y = x.detach().double(), y.detach().double()
    return float((x - y).abs().max() / y.abs().max().clamp(min=1e-30)) if y.numel() else 0.0


def check(models, x, y):
    """One forward and backward of each model from the same weights: the loss difference and the
    worst gradient difference (relative to each gradient's largest magnitude)."""
    losses, grads = [], []
    for m in models:
        m.zero_grad()
        loss = F.cross_entropy(m(x).float(), y)
        loss.backward()
        losses.append(loss.detach())
        grads.append([p.grad.clone() for p in m.parameters()])
    return {"loss_dbsparse": float(losses[0]), "loss_torch": float(losses[1]),
            "loss_rel_diff": _rel(losses[0], losses[1]),
            "grad_rel_diff": max(_rel(gd, gt) for gd, gt in zip(grads[0], grads[1]))}


def run_one(name, adj, model_name, a, feats, classes):
    """The two variants of one model on one graph: check, then time. Returns the result row."""
    dev, dt = a.device, DTYPES[a.dtype]
    gen = torch.Generator().manual_seed(a.seed + 1)
    x = torch.randn(adj.shape[0], feats, generator=gen).to(dev, dt)
    y = torch.randint(0, classes, (adj.shape[0],), generator=gen).to(dev)
    t0 = time.perf_counter()
    agg_d, agg_t, graph = aggregators(model_name, adj, dev, dt)
    graph_s = time.perf_counter() - t0
    cls = GCN if model_name == "gcn" else SAGE
    torch.manual_seed(a.seed + 2)
    md = cls(feats, a.hidden, classes, agg_d).to(dev, dt)
    mt = copy.deepcopy(md)
    mt.agg = agg_t
    row = {"graph": name, "nodes": adj.shape[0], "edges": int(adj.nnz), "model": model_name,
           "reduce": "sum" if model_name == "gcn" else "mean", "features": feats, "classes": classes,
           "graph_s": graph_s, "uses_kernels": graph.uses_kernels(x)}
    _sync(dev)
    t0 = time.perf_counter()
    row["check"] = check((md, mt), x, y)  # dbsparse's first call: its plans are made here
    _sync(dev)
    row["first_step_s"] = time.perf_counter() - t0
    row["check"]["ok"] = row["check"]["loss_rel_diff"] <= a.tol and row["check"]["grad_rel_diff"] <= a.tol
    for label, m in (("dbsparse", md), ("torch", mt)):
        opt = torch.optim.Adam(m.parameters(), lr=0.01)

        def step(m=m, opt=opt):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(m(x).float(), y).backward()
            opt.step()

        try:
            for _ in range(a.warmup):
                step()
            _sync(dev)
            row[f"{label}_ms"] = epoch_ms(step, a)
        except Exception as e:  # noqa: BLE001 - a baseline that fails is reported, not fatal
            if label == "dbsparse":
                raise
            row[f"{label}_ms"], row[f"{label}_error"] = None, _why(e)
        if a.cuda_graph:
            time_graph(row, label, m, x, y, a)
    row["x_torch"] = row["torch_ms"] / row["dbsparse_ms"] if row["torch_ms"] else None
    if a.cuda_graph:
        best_torch = min(v for v in (row["torch_ms"], row.get("torch_graph_ms")) if v) if row["torch_ms"] else None
        ours = row.get("dbsparse_graph_ms")
        row["x_torch_best"] = best_torch / ours if best_torch and ours else None
    return row


def _why(e):
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}"


def time_graph(row, label, m, x, y, a):
    """{label}_graph_ms: the median epoch of the whole step captured once in a CUDA graph and replayed
    (a fresh capturable Adam, warmed up on a side stream as torch.cuda.graph asks), or
    {label}_graph_error saying why it could not be captured."""
    try:
        opt = torch.optim.Adam(m.parameters(), lr=0.01, capturable=True)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(max(a.warmup, 1)):
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(m(x).float(), y).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            F.cross_entropy(m(x).float(), y).backward()
            opt.step()
        graph.replay()
        _sync(a.device)
        row[f"{label}_graph_ms"] = epoch_ms(graph.replay, a)
    except Exception as e:  # noqa: BLE001 - a variant that cannot be captured is reported, not fatal
        row[f"{label}_graph_ms"], row[f"{label}_graph_error"] = None, _why(e)


def graphs(a):
    """[(name, adjacency, features, classes)] of the run."""
    out = []
    for i, name in enumerate(a.graphs):
        n, e, f, c = PRESETS[name]
        n, e = max(int(n * a.scale), 8), max(int(e * a.scale), 16)
        out.append((name if a.scale == 1 else f"{name}x{a.scale:g}", power_law_graph(n, e, a.seed + 10 * i),
                    a.features or f, a.classes or c))
    for m in a.matrices:
        out.append((os.path.basename(m), read_matrix(m), a.features or 128, a.classes or 16))
    return out


def gpu_missing(a):
    if a.device != "cuda":
        return ""
    if not torch.cuda.is_available():
        return "python -m dbsparse.bench gnn needs a CUDA device (or --device cpu): torch.cuda.is_available() is False"
    from . import device_available
    ok, why = device_available()
    return "" if ok else f"python -m dbsparse.bench gnn needs a CUDA device (or --device cpu): dbsparse says {why}"


def table(rows):
    head = (f"{'graph':<16}{'nodes':>9}{'edges':>10} {'model':<6}{'dbsparse ms':>12}{'torch ms':>10}{'x torch':>9}"
            f"{'loss diff':>11}{'grad diff':>11}  check")
    lines = [head]
    for r in rows:
        c = r["check"]
        xt = f"{r['x_torch']:>8.2f}x" if r["x_torch"] else f"{'failed':>9}"
        tm = f"{r['torch_ms']:>10.2f}" if r["torch_ms"] is not None else f"{'-':>10}"
        lines.append(f"{r['graph']:<16}{r['nodes']:>9}{r['edges']:>10} {r['model']:<6}{r['dbsparse_ms']:>12.2f}{tm}{xt}"
                     f"{c['loss_rel_diff']:>11.2e}{c['grad_rel_diff']:>11.2e}  {'ok' if c['ok'] else 'MISMATCH'}")
        if r.get("torch_error"):
            lines.append(f"  torch variant failed: {r['torch_error']}")
        if "dbsparse_graph_ms" in r:
            lines.append("  one CUDA graph a step: " + "; ".join(
                f"{label} " + (f"{r[label + '_graph_ms']:.3f} ms" if r[label + "_graph_ms"] is not None
                               else f"not captured ({r[label + '_graph_error']})") for label in ("dbsparse", "torch"))
                + (f"; {r['x_torch_best']:.2f}x torch's best" if r.get("x_torch_best") else ""))
    ratios = [r["x_torch"] for r in rows if r["x_torch"]]
    if ratios:
        lines.append(f"geomean x torch: {float(np.exp(np.mean(np.log(ratios)))):.2f}x over {len(ratios)} runs "
                     "(torch ms / dbsparse ms per training epoch: above 1 is faster)")
    best = [r["x_torch_best"] for r in rows if r.get("x_torch_best")]
    if best:
        lines.append(f"geomean, dbsparse in one CUDA graph against torch's faster of eager and graph: "
                     f"{float(np.exp(np.mean(np.log(best)))):.2f}x over {len(best)} runs")
    return "\n".join(lines)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        a = parse_args(argv)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    why = gpu_missing(a)
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 77
    from . import __version__
    res = {"command": shlex.join(["python", "-m", "dbsparse.bench", "gnn", *argv]),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu", "torch": torch.__version__,
           "dbsparse": __version__, "dtype": a.dtype, "hidden": a.hidden, "epochs": a.epochs, "reps": a.reps,
           "epoch": "full batch: forward, cross-entropy, backward, Adam step", "rows": []}
    print(f"{res['device']}, torch {torch.__version__}, {a.dtype}, hidden {a.hidden}", flush=True)
    for name, adj, f, c in graphs(a):
        for m in a.models:
            r = run_one(name, adj, m, a, f, c)
            res["rows"].append(r)
            print(f"{name} {m}: dbsparse {r['dbsparse_ms']:.2f} ms/epoch, torch "
                  + (f"{r['torch_ms']:.2f}" if r["torch_ms"] is not None else "failed")
                  + f" (first step {r['first_step_s']:.2f} s, check {'ok' if r['check']['ok'] else 'MISMATCH'})",
                  flush=True)
    print(table(res["rows"]))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(res, fh, indent=2)
        print(f"wrote {a.json}")
    return 0 if all(r["check"]["ok"] for r in res["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())

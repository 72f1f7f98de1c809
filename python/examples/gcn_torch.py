"""A two-layer GCN forward pass (Kipf & Welling) on a generated graph: dbsparse SpMM against
torch.sparse, same weights, same inputs. Run: python gcn_torch.py [--nodes 100000]."""
import argparse

import numpy as np
import scipy.sparse as sp
import torch

import dbsparse


def normalized_adjacency(n, avg_degree, seed):
    """D^-1/2 (A + I) D^-1/2 of a random undirected graph, float32 SciPy CSR."""
    a = sp.random(n, n, density=avg_degree / n, format="csr", dtype=np.float32, random_state=np.random.default_rng(seed))
    a = ((a + a.T) > 0).astype(np.float32) + sp.eye(n, dtype=np.float32, format="csr")
    d = np.asarray(a.sum(axis=1)).ravel() ** -0.5
    return (sp.diags(d) @ a @ sp.diags(d)).astype(np.float32).tocsr()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--classes", type=int, default=16)
    args = ap.parse_args()
    a = normalized_adjacency(args.nodes, 10, 0)
    x = torch.randn(args.nodes, args.features, device="cuda")
    w1 = torch.randn(args.features, args.hidden, device="cuda") / args.features ** 0.5
    w2 = torch.randn(args.hidden, args.classes, device="cuda") / args.hidden ** 0.5
    # dbsparse: one plan per B width, made once and reused every forward pass; the first applies the
    # ReLU in its own stores (epilogue="relu"), so no pass of its own over A Z1.
    p1, p2 = dbsparse.plan_spmm(a, args.hidden, epilogue="relu"), dbsparse.plan_spmm(a, args.classes)
    ta = torch.sparse_csr_tensor(torch.as_tensor(a.indptr), torch.as_tensor(a.indices), torch.as_tensor(a.data),
                                 size=a.shape).cuda()

    def gcn_dbsparse():
        return p2(p1(x @ w1) @ w2)

    def gcn_torch():
        return torch.sparse.mm(ta, torch.relu(torch.sparse.mm(ta, x @ w1)) @ w2)

    out_d, out_t = gcn_dbsparse(), gcn_torch()
    err = (out_d - out_t).abs().max().item() / out_t.abs().max().item()
    print(f"max relative difference {err:.2e}")
    assert err < 1e-4
    for name, fn in (("dbsparse", gcn_dbsparse), ("torch.sparse", gcn_torch)):
        fn()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(20):
            fn()
        e.record()
        e.synchronize()
        print(f"{name:<13} forward {s.elapsed_time(e) / 20 * 1000:.1f} us")
    print("SpMM paths:", p1.explain()["path"], p2.explain()["path"])


if __name__ == "__main__":
    main()

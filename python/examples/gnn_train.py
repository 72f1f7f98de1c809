"""Training a two-layer GraphSAGE (mean aggregation) through dbsparse: one Graph planned once, the
forward and backward SpMMs on dbsparse's kernels (CUDA) or in PyTorch (CPU), checked against the
same model written with torch's scatter_reduce. Run: python gnn_train.py [--nodes 20000] [--cpu]."""
import argparse

import torch

import dbsparse


def random_graph(n, avg_degree, gen):
    """edge_index (2, E), PyTorch Geometric's (sources, then targets), of a random directed graph with
    a power-law-ish out-degree."""
    deg = torch.clamp((torch.rand(n, generator=gen) ** -0.7 * avg_degree / 3).long(), 1, n - 1)
    src = torch.repeat_interleave(torch.arange(n), deg)
    dst = torch.randint(0, n, (src.numel(),), generator=gen)
    return torch.stack([src, dst])  # each node averages the messages of its in-neighbours


class Sage(torch.nn.Module):
    def __init__(self, features, hidden, classes, aggregate):
        super().__init__()
        self.self1, self.neigh1 = torch.nn.Linear(features, hidden), torch.nn.Linear(features, hidden, bias=False)
        self.self2, self.neigh2 = torch.nn.Linear(hidden, classes), torch.nn.Linear(hidden, classes, bias=False)
        self.aggregate = aggregate

    def forward(self, x):
        h = torch.relu(self.self1(x) + self.neigh1(self.aggregate(x)))
        return self.self2(h) + self.neigh2(self.aggregate(h))


def scatter_mean(edge_index, n):
    """The same mean aggregation in plain PyTorch (what a user would otherwise write)."""
    src, dst = edge_index
    deg = torch.zeros(n, device=dst.device).index_add_(0, dst, torch.ones_like(dst, dtype=torch.float32))

    def agg(x):
        out = torch.zeros(n, x.shape[1], dtype=x.dtype, device=x.device).index_add_(0, dst, x[src])
        return out / deg.clamp(min=1).unsqueeze(1).to(x.dtype)
    return agg


def train(model, x, y, epochs):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--degree", type=int, default=10)
    ap.add_argument("--features", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (PyTorch path)")
    args = ap.parse_args()
    dev = "cpu" if args.cpu or not torch.cuda.is_available() else "cuda"
    gen = torch.Generator().manual_seed(0)
    n = args.nodes
    edge_index = random_graph(n, args.degree, gen)
    x = torch.randn(n, args.features, generator=gen).to(dev)
    y = torch.randint(0, 8, (n,), generator=gen).to(dev)
    g = dbsparse.Graph(edge_index, num_nodes=n, device=dev)  # A, Aᵀ and the plans, made once
    print(g)
    results = {}
    for name, aggregate in (("dbsparse", lambda h: dbsparse.spmm(g, h, reduce="mean")),
                            ("torch", scatter_mean(edge_index.to(dev), n))):
        torch.manual_seed(1)  # the same initial weights for both
        model = Sage(args.features, 64, 8, aggregate).to(dev)
        results[name] = train(model, x, y, args.epochs)
        print(f"{name:<9} loss {results[name][0]:.4f} -> {results[name][-1]:.4f}")
    diff = max(abs(a - b) for a, b in zip(results["dbsparse"], results["torch"]))
    print(f"largest loss difference over {args.epochs} epochs: {diff:.2e}")
    assert diff < 1e-3, "dbsparse and the PyTorch reference trained differently"


if __name__ == "__main__":
    main()

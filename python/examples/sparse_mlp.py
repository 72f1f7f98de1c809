"""A Llama-style MLP block (gate, up, SiLU, down) at batch 1 with half the weights pruned and half
the activations kept: dbsparse's SparseLinear against the dense module on the same pruned weights.
Run: python sparse_mlp.py [--hidden 4096 --intermediate 14336]."""
import argparse

import torch

from dbsparse.nn import SparseLinear


class Mlp(torch.nn.Module):
    def __init__(self, gate, up, down):
        super().__init__()
        self.gate, self.up, self.down = gate, up, down

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--intermediate", type=int, default=14336)
    args = ap.parse_args()
    torch.manual_seed(0)
    kw = dict(dtype=torch.float16, device="cuda", bias=False)
    dense = Mlp(torch.nn.Linear(args.hidden, args.intermediate, **kw), torch.nn.Linear(args.hidden, args.intermediate, **kw),
                torch.nn.Linear(args.intermediate, args.hidden, **kw))
    sparse = Mlp(*(SparseLinear.from_linear(m, sparsity=0.5, keep=0.5) for m in (dense.gate, dense.up, dense.down)))
    # The dense reference on the same pruned weights and the same kept activations.
    x = torch.randn(1, args.hidden, dtype=torch.float16, device="cuda")

    def kept(v):
        out = torch.zeros_like(v)
        top = v.abs().topk((v.shape[-1] + 1) // 2, dim=-1).indices
        return out.scatter(-1, top, v.gather(-1, top))

    def pruned(m):
        w = m.weight.float()
        return torch.zeros_like(w).scatter(1, w.abs().topk(w.shape[1] // 2, dim=1).indices,
                                           w.gather(1, w.abs().topk(w.shape[1] // 2, dim=1).indices))

    wg, wu, wd = pruned(dense.gate), pruned(dense.up), pruned(dense.down)
    xk = kept(x).float()
    h = torch.nn.functional.silu(xk @ wg.T) * (xk @ wu.T)
    ref = kept(h.half()).float() @ wd.T
    got = sparse(x).float()
    err = (got - ref).abs().max().item() / ref.abs().max().item()
    print(f"max relative difference against the masked dense MLP: {err:.2e}")
    for name, mod in (("dense fp16", dense), ("dbsparse 50%+50%", sparse)):
        g = torch.cuda.CUDAGraph()
        mod(x)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            mod(x)
        g.replay()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(100):
            g.replay()
        e.record()
        e.synchronize()
        print(f"{name:<17} {s.elapsed_time(e) * 10:.1f} us a token (CUDA graph; weights stay in L2 here, "
              f"so see `dbsparse decode-bench` for the rotated figures)")
    assert err < 3e-2


if __name__ == "__main__":
    main()

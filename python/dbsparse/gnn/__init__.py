"""SpMM for graph neural networks in PyTorch (needs torch): differentiable, with sum, mean, max and
min reductions, as torch custom ops that torch.compile(fullgraph=True) and CUDA graphs take.

Example::

    import torch, dbsparse
    g = dbsparse.Graph(edge_index, num_nodes=n)        # or a torch sparse CSR/COO tensor, or SciPy
    h = dbsparse.spmm(g, x @ w, reduce="mean")          # x, w CUDA tensors; autograd flows to x and w
    h.sum().backward()
    g.values.requires_grad_()                           # edge weights learned too (SDDMM backward)

A Graph keeps A, Aᵀ and the plans made for it, so layers, epochs and backward passes reuse them.
CPU tensors and float64 run the same computation in PyTorch (index_add / scatter_reduce)."""
from ._graph import Graph
from ._api import spmm, sddmm, REDUCTIONS

__all__ = ["Graph", "spmm", "sddmm", "REDUCTIONS"]

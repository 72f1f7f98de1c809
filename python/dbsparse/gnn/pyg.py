"""PyTorch Geometric adapter: the sparse matmul of message-passing layers run by dbsparse.

PyG layers that fuse message and aggregation (GCNConv, SAGEConv, GINConv, GraphConv, ... given a
SparseTensor or a torch sparse `adj_t`) call `torch_geometric.utils.spmm(adj_t, x, reduce)` from
their module. `route(model)` points that name, in the module of each such layer class in `model`,
at `spmm` below: a Graph is made once per adjacency object (kept while the object lives) and the
product runs through dbsparse.spmm, autograd included; anything it does not take (another reduce,
a dense adj) goes to PyG's own function. `undo = route(model)`; `undo()` restores the modules.

Nothing here imports torch_geometric until route() is called, and `import dbsparse` never does."""
import sys

import torch

from ._api import spmm as _dbsparse_spmm
from ._graph import Graph

_REDUCE = {"add": "sum", "sum": "sum", "mean": "mean", "max": "max", "min": "min"}


def _make_graph(adj):
    if isinstance(adj, torch.Tensor):
        if adj.layout not in (torch.sparse_csr, torch.sparse_coo):
            return None
        return Graph(adj)
    if hasattr(adj, "csr") and hasattr(adj, "sparse_sizes"):  # torch_sparse.SparseTensor
        rowptr, col, value = adj.csr()
        return Graph.from_csr(rowptr, col, value, tuple(adj.sparse_sizes()))
    return None


def graph_for(adj):
    """The Graph of an adjacency (a torch sparse tensor or a torch_sparse SparseTensor), made on
    first use and kept on the object (an attribute: sparse tensors take no weak references); None
    for anything else."""
    g = getattr(adj, "_dbsparse_graph", None)
    if g is None:
        g = _make_graph(adj)
        if g is not None:
            try:
                adj._dbsparse_graph = g
            except (AttributeError, RuntimeError):  # an object without attributes: no cache
                pass
    return g


def make_spmm(fallback):
    """A drop-in for torch_geometric.utils.spmm(src, other, reduce='sum'): dbsparse where it takes
    the call, else `fallback`."""
    def spmm(src, other, reduce="sum"):
        r = _REDUCE.get(reduce)
        if r is not None and isinstance(other, torch.Tensor) and other.dim() == 2:
            g = graph_for(src)
            if g is not None and g.device == other.device:
                return _dbsparse_spmm(g, other, reduce=r)
        return fallback(src, other, reduce)
    spmm.dbsparse_fallback = fallback
    return spmm


def fused_layer_modules(model):
    """The modules defining the MessagePassing layer classes in `model` that implement
    message_and_aggregate and call a module-level `spmm`."""
    from torch_geometric.nn import MessagePassing  # imported only when routing is asked for
    mods = {}
    for m in model.modules():
        cls = type(m)
        if not isinstance(m, MessagePassing):
            continue
        if getattr(cls, "message_and_aggregate", None) is getattr(MessagePassing, "message_and_aggregate", None):
            continue
        mod = sys.modules.get(cls.__module__)
        if mod is not None and callable(getattr(mod, "spmm", None)):
            mods[cls.__module__] = mod
    return list(mods.values())


def route(model):
    """Routes the fused sparse matmul of every PyG layer class in `model` to dbsparse (module-wide:
    every instance of those classes). Returns a function that undoes it."""
    patched = []
    for mod in fused_layer_modules(model):
        old = mod.spmm
        if getattr(old, "dbsparse_fallback", None) is None:
            mod.spmm = make_spmm(old)
            patched.append((mod, old))

    def undo():
        for mod, old in patched:
            mod.spmm = old
    undo.modules = [m.__name__ for m, _ in patched]
    return undo

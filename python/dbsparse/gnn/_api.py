"""dbsparse.spmm(A, X, reduce=...) and dbsparse.gnn.sddmm for torch tensors: the checks, then the
custom ops (_op.py)."""
import torch

from .._errors import UsageError
from . import _op, _ref
from ._graph import Graph, is_graph

REDUCTIONS = _ref.REDUCTIONS


def as_graph(a, device=None):
    """`a` if it is a Graph, else a Graph of it (made for this call: keep one for repeated calls)."""
    return a if is_graph(a) else Graph(a, device=device)


def spmm(a, x, reduce="sum", transpose=False):
    """out = reduce_e A[i, e] * X[col(e)] for each row i of A (Aᵀ with transpose=True): sum (A X),
    mean (divided by the row's stored entries), max or min (of the products). Rows without entries
    give 0. A: a Graph (planned once; keep it), or anything Graph() takes (planned each call).
    X: a 2-D (or 1-D) torch tensor with A.shape[1] rows; gradients flow to X and to the Graph's
    values where they require grad. CUDA float32/float16/bfloat16 X runs dbsparse's kernels."""
    if reduce not in REDUCTIONS:
        raise UsageError(f"reduce: expected one of {', '.join(REDUCTIONS)}, got {reduce!r}")
    if not isinstance(x, torch.Tensor) or x.layout != torch.strided:
        raise UsageError(f"X: expected a dense torch tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise UsageError(f"X: expected floating-point values, got {x.dtype}")
    g = as_graph(a, x.device)
    side = g.side(bool(transpose))
    vec = x.dim() == 1
    x2 = x.unsqueeze(1) if vec else x
    if x2.dim() != 2 or x2.shape[0] != side.cols:
        raise UsageError(f"X: expected ({side.cols}, n) for A{'ᵀ' if transpose else ''} of shape "
                         f"{side.rows}x{side.cols}, got {tuple(x.shape)}")
    if x.device != g.device:
        raise UsageError(f"X: on {x.device}, the graph on {g.device} (Graph.to(device) moves it)")
    out, _ = torch.ops.dbsparse.gnn_spmm(x2.contiguous(), g.values, g.handle, side.rows, reduce, bool(transpose))
    return out.squeeze(1) if vec else out


def sddmm(a, x, y, alpha=1.0):
    """out[e] = alpha * dot(x[row(e)], y[col(e)]) for A's entries e in the Graph's entry order
    (1-D, float32 for half inputs), without autograd: the values gradient of an SpMM."""
    g = as_graph(a, x.device)
    if x.dim() != 2 or y.dim() != 2 or x.shape[1] != y.shape[1] or x.shape[0] != g.a.rows or y.shape[0] != g.a.cols:
        raise UsageError(f"x, y: expected ({g.a.rows}, k) and ({g.a.cols}, k), got {tuple(x.shape)} and "
                         f"{tuple(y.shape)}")
    if x.dtype != y.dtype:
        raise UsageError(f"x, y: one dtype, got {x.dtype} and {y.dtype}")
    with torch.no_grad():
        return _op._sddmm(g, x, y) * alpha

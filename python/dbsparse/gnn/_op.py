"""SpMM with a reduction as torch custom ops (torch.library) with autograd.

dbsparse::gnn_spmm is the forward; its backward is two more custom ops, one per input gradient, so
that the graph's own tensors (indices, row lengths, plans) are read only inside ops: a compiled
graph (torch.compile, fullgraph) holds three opaque nodes with fake kernels for their shapes, and
never a graph tensor as a constant. A Graph is not a tensor, so the ops take its handle (see
_graph.graph_of) and the output sizes as ints.

Gradients, for out = reduce_e a_e x[col(e)] over each row of a side S (A, or Aᵀ when transposed):
- sum:  dX = Sᵀ G (the other side's SpMM plan); da_e = dot(G[row(e)], X[col(e)]) (SDDMM on A's
        pattern; for S = Aᵀ the same SDDMM with X and G swapped, so no permutation is needed).
- mean: the same with G / len(row) in place of G; on the kernels, dX is one SpMM of the other
        side planned with its values divided by those lengths (no pass over G).
- max/min: only each output element's winning entry k = arg: dX[col(k)] += G a_k and
        da_k += G X[col(k)], by index_add over the arg array (no host sync)."""
import torch

from . import _ref
from ._graph import _KERNEL_DTYPES, SDDMM_MAX_K, graph_of


def _side_values(side, values):
    return values if side.to_a is None else values.index_select(0, side.to_a)


def forward(g, x, values, reduce, transposed):
    """(out, arg) of the side's SpMM: the kernels where they take x, else the PyTorch path."""
    side = g.side(transposed)
    if g.uses_kernels(x):
        plan = g.spmm_plan(x.shape[1], _KERNEL_DTYPES[x.dtype], reduce, transposed)
        out = torch.empty(side.rows, x.shape[1], dtype=x.dtype, device=x.device)
        if reduce in ("max", "min"):
            arg = torch.empty(side.rows, x.shape[1], dtype=torch.int32, device=x.device)
            plan(x, out=out, arg=arg)
            return out, arg
        plan(x, out=out)
        return out, torch.empty(0, dtype=torch.int32, device=x.device)
    return _ref.spmm(side, _side_values(side, values), x, reduce)


@torch.library.custom_op("dbsparse::gnn_spmm", mutates_args=())
def gnn_spmm(x: torch.Tensor, values: torch.Tensor, handle: int, out_rows: int, reduce: str,
             transposed: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, arg): out (out_rows, x.shape[1]) = reduce over A's (Aᵀ's) rows of values * x rows."""
    return forward(graph_of(handle), x, values, reduce, transposed)


@gnn_spmm.register_fake
def _(x, values, handle, out_rows, reduce, transposed):
    arg_shape = (out_rows, x.shape[1]) if reduce in ("max", "min") else (0,)
    return x.new_empty((out_rows, x.shape[1])), x.new_empty(arg_shape, dtype=torch.int32)


def _scaled(side, grad, reduce):
    """G, or G / len(row) for mean (rows without entries divided by 1; their G reaches nothing)."""
    if reduce != "mean":
        return grad
    cd = _ref.compute_dtype(grad.dtype)
    return (grad.to(cd) / side.deg.to(cd).clamp(min=1).unsqueeze(1)).to(grad.dtype)


def _winners(side, arg):
    """(entry index per output element, clamped to 0, and where it is a real winner)."""
    return arg.long().clamp(min=0), arg >= 0


@torch.library.custom_op("dbsparse::gnn_spmm_grad_x", mutates_args=())
def gnn_spmm_grad_x(grad: torch.Tensor, values: torch.Tensor, arg: torch.Tensor, handle: int, in_rows: int,
                    reduce: str, transposed: bool) -> torch.Tensor:
    """dX (in_rows, grad.shape[1]) of gnn_spmm for the output gradient `grad`."""
    g = graph_of(handle)
    side = g.side(transposed)
    grad = grad.contiguous()
    if reduce == "sum" or (reduce == "mean" and not g.uses_kernels(grad)):
        return forward(g, _scaled(side, grad, reduce), values, "sum", not transposed)[0]
    if reduce == "mean":  # one SpMM of the other side with its values over the row lengths: no pass over G
        out = torch.empty(in_rows, grad.shape[1], dtype=grad.dtype, device=grad.device)
        g.spmm_plan(grad.shape[1], _KERNEL_DTYPES[grad.dtype], "sum", not transposed, scaled=True)(grad, out=out)
        return out
    cd = _ref.compute_dtype(grad.dtype)
    f = grad.shape[1]
    if side.col.numel() == 0:
        return grad.new_zeros((in_rows, f))
    k, won = _winners(side, arg)
    contrib = torch.where(won, grad.to(cd) * _side_values(side, values).to(cd)[k], torch.zeros((), dtype=cd,
                                                                                                 device=grad.device))
    target = side.col[k] * f + torch.arange(f, device=grad.device)
    dx = torch.zeros(in_rows * f, dtype=cd, device=grad.device)
    dx.index_add_(0, target.reshape(-1), contrib.reshape(-1))
    return dx.view(in_rows, f).to(grad.dtype)


@gnn_spmm_grad_x.register_fake
def _(grad, values, arg, handle, in_rows, reduce, transposed):
    return grad.new_empty((in_rows, grad.shape[1]))


def _sddmm(g, x, y):
    """dot(x[row(e)], y[col(e)]) for A's entries e, in A's order (compute dtype)."""
    if g.uses_kernels(x, SDDMM_MAX_K) and x.dtype == y.dtype:
        return g.sddmm_plan(x.shape[1], _KERNEL_DTYPES[x.dtype])(x.contiguous(), y.contiguous())
    return _ref.sddmm(g.a, x, y)


@torch.library.custom_op("dbsparse::gnn_spmm_grad_values", mutates_args=())
def gnn_spmm_grad_values(grad: torch.Tensor, x: torch.Tensor, values: torch.Tensor, arg: torch.Tensor, handle: int,
                         reduce: str, transposed: bool) -> torch.Tensor:
    """The gradient of A's values (A's entry order, values' dtype) of gnn_spmm."""
    g = graph_of(handle)
    side = g.side(transposed)
    grad = grad.contiguous()
    if reduce in ("sum", "mean"):
        gs = _scaled(side, grad, reduce)
        return (_sddmm(g, x, gs) if transposed else _sddmm(g, gs, x)).to(values.dtype)
    cd = _ref.compute_dtype(grad.dtype)
    if side.col.numel() == 0:
        return values.new_zeros(values.shape)
    k, won = _winners(side, arg)
    xk = torch.gather(x.to(cd), 0, side.col[k])
    contrib = torch.where(won, grad.to(cd) * xk, torch.zeros((), dtype=cd, device=grad.device))
    entry = k if side.to_a is None else side.to_a[k]
    dv = torch.zeros(values.shape[0], dtype=cd, device=grad.device)
    dv.index_add_(0, entry.reshape(-1), contrib.reshape(-1))
    return dv.to(values.dtype)


@gnn_spmm_grad_values.register_fake
def _(grad, x, values, arg, handle, reduce, transposed):
    return values.new_empty(values.shape)


def _setup(ctx, inputs, output):
    x, values, handle, out_rows, reduce, transposed = inputs
    # X is needed only for the values' gradient: not kept for a fixed adjacency (a GCN's).
    ctx.save_for_backward(x if values.requires_grad else None, values, output[1])
    ctx.meta = (handle, x.shape[0], reduce, transposed)
    # A Graph made for one call (dbsparse.spmm(scipy_matrix, X)) must outlive its forward: the
    # backward reads it through the handle. (Under torch.compile the handle may be symbolic; the
    # caller's model holds the Graph there.)
    ctx.graph = graph_of(handle) if isinstance(handle, int) else None


def _backward(ctx, grad_out, grad_arg):
    x, values, arg = ctx.saved_tensors
    handle, in_rows, reduce, transposed = ctx.meta
    dx = dv = None
    if ctx.needs_input_grad[0]:
        dx = gnn_spmm_grad_x(grad_out, values, arg, handle, in_rows, reduce, transposed)
    if ctx.needs_input_grad[1]:
        dv = gnn_spmm_grad_values(grad_out, x, values, arg, handle, reduce, transposed)
    return dx, dv, None, None, None, None


gnn_spmm.register_autograd(_backward, setup_context=_setup)

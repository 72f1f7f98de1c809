"""The pure-torch path: SpMM with a reduction and SDDMM on one side of a Graph, with index_add and
scatter_reduce. It is what CPU tensors (and dtypes the kernels do not take) run, and the reference
the kernels are tested against. Arithmetic is in float32 for half inputs (float64 stays float64),
the result in the input's dtype, as the kernels do."""
import torch

REDUCTIONS = ("sum", "mean", "max", "min")


def compute_dtype(dtype):
    return torch.promote_types(dtype, torch.float32)


def spmm(side, values, x, reduce):
    """(out, arg) of out[i] = reduce_e values[e] * x[col(e)] over the entries e of row i of `side`
    (a _Side: the Graph's A or Aᵀ). `values` are in the side's entry order. arg: for max/min the
    winning entry (the lowest entry index among equal products; -1 for an empty row), int32, one per
    output element; for sum and mean an empty int32 tensor. Empty rows give 0."""
    cd = compute_dtype(x.dtype)
    rows, f = side.rows, x.shape[1]
    msg = values.to(cd).unsqueeze(1) * x.to(cd).index_select(0, side.col)
    out = torch.zeros(rows, f, dtype=cd, device=x.device)
    if reduce in ("sum", "mean"):
        out.index_add_(0, side.row, msg)
        if reduce == "mean":
            out = out / side.deg.to(cd).clamp(min=1).unsqueeze(1)
        return out.to(x.dtype), torch.empty(0, dtype=torch.int32, device=x.device)
    amax = "amax" if reduce == "max" else "amin"
    idx = side.row.unsqueeze(1).expand(-1, f)
    out.scatter_reduce_(0, idx, msg, amax, include_self=False)  # rows with no entry keep their 0
    nnz = side.col.numel()
    win = msg == out.index_select(0, side.row)
    ent = torch.arange(nnz, device=x.device).unsqueeze(1).expand(-1, f)
    cand = torch.where(win, ent, torch.full_like(ent, nnz))
    arg = torch.full((rows, f), nnz, dtype=torch.int64, device=x.device)
    arg.scatter_reduce_(0, idx, cand, "amin", include_self=True)
    arg = torch.where(arg == nnz, torch.full_like(arg, -1), arg)
    return out.to(x.dtype), arg.to(torch.int32)


def sddmm(side, x, y, alpha=1.0):
    """out[e] = alpha * dot(x[row(e)], y[col(e)]) for the side's entries e in its order (1-D, in
    the compute dtype of x)."""
    cd = compute_dtype(x.dtype)
    prod = x.to(cd).index_select(0, side.row) * y.to(cd).index_select(0, side.col)
    return prod.sum(1) * alpha

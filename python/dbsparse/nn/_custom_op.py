"""The decode kernels as a torch custom op (torch.library), so torch.compile(fullgraph=True) traces a
SparseLinear as one opaque node with a fake (meta) kernel for its shape, and CUDA-graph capture
records the launches like any other op's.

A plan is not a tensor, so the op takes an int handle into a registry of weak references to the
layers (and the layer's output size, for the fake kernel); a layer leaves the registry when it is
collected."""
import torch

from .._handles import Handles

_layers = Handles("dbsparse::sparse_linear", "layer", "SparseLinear")


def register(layer):
    """A handle for `layer` (anything with out_features and run_rows(x2d) -> y2d)."""
    return _layers.register(layer)


def _layer(handle):
    return _layers.get(handle)


@torch.library.custom_op("dbsparse::sparse_linear", mutates_args=())
def sparse_linear(x: torch.Tensor, handle: int, out_features: int) -> torch.Tensor:
    """y = W_pruned x_kept for the rows of x (x: (rows, in_features), contiguous) by the plan of the
    layer `handle` (out_features rows)."""
    return _layer(handle).run_rows(x)


# The shape comes from an argument, not from the registry: Dynamo may turn the ints into symbols
# (one graph serving every layer, the handle an input), which no registry lookup could take.
@sparse_linear.register_fake
def _(x, handle, out_features):
    return x.new_empty((x.shape[0], out_features))

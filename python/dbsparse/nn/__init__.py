"""Sparse LLM inference in PyTorch (needs torch): pruned linear layers whose decode rows run on
dbsparse's kernels and whose prefill batches run on cuBLAS over the same pruned weights.

Example::

    import torch, dbsparse.nn as dnn
    norms = dnn.input_norms(model, batches)           # optional: Wanda's per-feature input norms
    dnn.replace_linear(model, sparsity=0.5, method="wanda", norms=norms)  # gate|up and q|k|v stacked
    dnn.calibrate(model, batches, density=0.5)        # per-layer activation thresholds (TEAL)
    dnn.save_pruned(model, "pruned/")                 # later: dnn.load_pruned(fresh_model, "pruned/")
    layer = dnn.SparseLinear.from_linear(torch.nn.Linear(4096, 14336, dtype=torch.float16, device="cuda"),
                                         sparsity=0.5, act_threshold=0.05)
"""
from ._linear import SparseLinear
from ._model import SparseMLP, StackedPart, calibrate, input_norms, replace_linear
from ._io import load_pruned, save_pruned

__all__ = ["SparseLinear", "SparseMLP", "StackedPart", "replace_linear", "calibrate", "input_norms", "save_pruned",
           "load_pruned"]

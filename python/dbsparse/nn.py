"""SparseLinear: a pruned nn.Linear for batch-1 decoding (needs torch).

Example::

    import torch, dbsparse
    from dbsparse.nn import SparseLinear, replace_linear
    layer = SparseLinear.from_linear(torch.nn.Linear(4096, 14336, dtype=torch.float16, device="cuda"),
                                     sparsity=0.5, act_threshold=0.05)
    y = layer(x)                               # x: (1, 4096) fp16 CUDA tensor
    replace_linear(model, sparsity=0.5, keep=0.5)   # every nn.Linear of a model, in place
"""
import numpy as np
import torch

from ._errors import UsageError
from . import _core
from ._ops import context

_DT = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}


class SparseLinear(torch.nn.Module):
    """y = W_pruned · x_kept + b, where x_kept keeps |x_i| >= act_threshold (or the `keep` share of
    largest |x_i|, found on the GPU per call), run by dbsparse's decode kernels in the weight's
    dtype (fp16, bf16 or f32). Rows of a batch run one at a time: made for batch-1 decoding.

    `keep` finds its threshold per call in a kernel of its own (microseconds for 4096-14336
    features); a threshold calibrated once (`act_threshold`, see `dbsparse calibrate`) costs nothing
    per call and is the fast path."""

    def __init__(self, weight, bias=None, sparsity=0.5, method="magnitude", norms=None, act_threshold=0.0,
                 keep=0.0, act_density=0.0, mapping="auto"):
        super().__init__()
        if weight.dim() != 2:
            raise UsageError(f"weight: expected a 2-D tensor, got shape {tuple(weight.shape)}")
        if weight.dtype not in _DT:
            raise UsageError(f"weight: dtype {weight.dtype}; SparseLinear takes float16, bfloat16 or float32")
        if not weight.is_cuda:
            raise UsageError("weight: move the layer to a CUDA device first")
        self.out_features, self.in_features = weight.shape
        self.dtype_name = _DT[weight.dtype]
        self._device = weight.device
        w = weight.detach().float().cpu().numpy()
        n = None if norms is None else np.ascontiguousarray(torch.as_tensor(norms).float().cpu().numpy())
        pruned = _core.prune(np.ascontiguousarray(w), float(sparsity), method, n)
        self._ctx = context(weight.device.index or 0)
        self._plan = _core.plan_decode(self._ctx, pruned, self.dtype_name, float(act_threshold), float(keep), mapping,
                                       float(act_density))
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().clone(), requires_grad=False)
        self.sparsity = sparsity

    @classmethod
    def from_linear(cls, linear, **kw):
        """A SparseLinear from an nn.Linear (its weight pruned; see the class for the keywords)."""
        return cls(linear.weight, linear.bias, **kw)

    @property
    def act_threshold(self):
        return self._plan.tau

    @act_threshold.setter
    def act_threshold(self, tau):
        self._plan.set_tau(float(tau))

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise UsageError(f"x: expected {self.in_features} features in the last dimension, got {x.shape[-1]}")
        if _DT.get(x.dtype) != self.dtype_name:
            raise UsageError(f"x: dtype {x.dtype}, the layer's is {self.dtype_name}")
        if x.device != self._device:
            raise UsageError(f"x: on {x.device}, the layer on {self._device}")
        rows = x.reshape(-1, self.in_features).contiguous()
        y = torch.empty(rows.shape[0], self.out_features, dtype=x.dtype, device=x.device)
        s = torch.cuda.current_stream(x.device).cuda_stream
        self._ctx.make_current()
        for i in range(rows.shape[0]):
            self._plan.run(rows[i].data_ptr(), y[i].data_ptr(), s)
        if self.bias is not None:
            y += self.bias
        return y.reshape(*x.shape[:-1], self.out_features)

    def explain(self):
        return {"op": "decode", "mapping": self._plan.mapping, "weight_bytes": self._plan.weight_bytes,
                "text": self._plan.explain()}

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, dtype={self.dtype_name}, "
                f"sparsity={self.sparsity}, mapping={self._plan.mapping}")


def replace_linear(model, filter=None, **kw):
    """Replaces, in place, every nn.Linear of `model` (for which filter(name, module) is true) by a
    SparseLinear with the keywords given. Returns the names replaced."""
    done = []
    for name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if isinstance(child, torch.nn.Linear) and (filter is None or filter(full, child)):
                setattr(parent, child_name, SparseLinear.from_linear(child, **kw))
                done.append(full)
    return done

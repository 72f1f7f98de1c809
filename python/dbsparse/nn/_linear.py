"""SparseLinear: a pruned nn.Linear whose decode rows run on dbsparse's kernels and whose larger
batches (prefill) run on cuBLAS over the same pruned weights."""
import math

import numpy as np
import torch
import torch.nn.functional as F

from .._errors import UsageError
from .. import _core, _lifetime
from .._ops import _Released, context
from . import _custom_op
from . import _layout

_DT = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}


def _check_device(weight):
    if not weight.is_cuda:
        raise UsageError("weight: move the layer to a CUDA device first")


def _assumed_density(tau, keep, act_density):
    """The share of activations a plan is made for: given, else keep's, else 1 without a threshold
    and 0.5 with one (what TEAL-style thresholds are calibrated to), as the C++ options read it."""
    if act_density > 0:
        return act_density
    if keep > 0:
        return keep
    return 1.0 if tau == 0 else 0.5


class SparseLinear(torch.nn.Module):
    """y = W_pruned · x_kept + b. x_kept keeps |x_i| >= act_threshold (or the `keep` share of largest
    |x_i|, found on the GPU per call).

    Calls of up to `max_sparse_rows` rows (decode) run the decode kernels, one row after another;
    larger ones (prefill) run F.linear on a dense copy of the pruned weights, so they take what cuBLAS
    takes (`dense_copy=False` drops that copy and runs every row on the kernels). The default
    max_sparse_rows is the most rows whose decode calls the cost model expects to take less time than
    one dense call. The forward is a torch custom op (dbsparse::sparse_linear): torch.compile
    (fullgraph=True) and CUDA-graph capture work.

    Pruning (magnitude, or Wanda with `norms`, or method='none' for weights pruned already) and the
    layout run on the weight's GPU. Setting act_threshold re-plans when the share of activations it
    implies changes the plan's mapping (see calibrate())."""

    def __init__(self, weight, bias=None, sparsity=0.5, method="magnitude", norms=None, act_threshold=0.0,
                 keep=0.0, act_density=0.0, mapping="auto", max_sparse_rows=None, dense_copy=True, mask=None):
        super().__init__()
        if weight.dim() != 2:
            raise UsageError(f"weight: expected a 2-D tensor, got shape {tuple(weight.shape)}")
        if weight.dtype not in _DT:
            raise UsageError(f"weight: dtype {weight.dtype}; SparseLinear takes float16, bfloat16 or float32")
        _check_device(weight)
        self.out_features, self.in_features = weight.shape
        self.dtype_name = _DT[weight.dtype]
        self._device = weight.device
        self.sparsity = sparsity
        self.stack_sizes = None  # [q, k, v] rows where this layer stacks an attention's projections
        self.mapping_asked = mapping
        self._keep, self._tau, self._density = float(keep), float(act_threshold), float(act_density)
        with torch.no_grad():
            m = mask.to(weight.device, torch.bool) if mask is not None else \
                _layout.prune_mask(weight, sparsity, method, norms)
            pruned = torch.where(m, weight.detach(), torch.zeros((), dtype=weight.dtype, device=weight.device))
        self._ctx = context(weight.device.index or 0)
        _lifetime.hold(self)
        self._compact = None
        self._plan = self._make_plan(pruned, m)
        if not dense_copy and self.dtype_name != "f32":
            self._compact = self._compact_of(pruned, m)
        self.register_buffer("weight", pruned if dense_copy else None)
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().clone(), requires_grad=False)
        # Without a dense copy every row runs on the kernels; a given count stays; else it follows the
        # density the plan is made for.
        self._rows_follow_density = max_sparse_rows is None and dense_copy
        self.max_sparse_rows = int(max_sparse_rows) if max_sparse_rows is not None else \
            (self._default_sparse_rows() if dense_copy else 1 << 30)
        self._handle = _custom_op.register(self)

    @classmethod
    def from_linear(cls, linear, **kw):
        """A SparseLinear from an nn.Linear (its weight pruned; see the class for the keywords)."""
        return cls(linear.weight, linear.bias, **kw)

    @classmethod
    def from_compact(cls, layer, bias=None, device="cuda", dtype=None, **kw):
        """A SparseLinear from a CompactLayer (read by load_pruned): no pruning."""
        dt = {"f16": torch.float16, "bf16": torch.bfloat16}[layer.dtype] if dtype is None else dtype
        w = _layout.dense_from_bitmap(layer, torch.device(device), dt)
        return cls(w, bias, sparsity=1.0 - layer.nnz / max(layer.rows * layer.cols, 1), mask=w != 0, **kw)

    # Planning.
    def _compact_of(self, pruned, mask):
        return _layout.column_bitmap(pruned, mask)

    def _release_native(self):
        self._plan = self._ctx = self._compact = _Released(type(self).__name__)

    def _make_plan(self, pruned, mask):
        density = _assumed_density(self._tau, self._keep, self._density)
        if self.dtype_name == "f32":
            csr = pruned.to_sparse_csr()
            host = _core.make_CsrF32(self.out_features, self.in_features,
                                     csr.crow_indices().to(torch.int32).cpu().numpy(),
                                     csr.col_indices().to(torch.int32).cpu().numpy(),
                                     csr.values().cpu().numpy().astype(np.float32))
            return _core.plan_decode(self._ctx, host, "f32", self._tau, self._keep, self.mapping_asked, density)
        layer = self._compact if self._compact is not None else self._compact_of(pruned, mask)
        return _core.plan_decode_compact(self._ctx, layer, self._tau, self._keep, self.mapping_asked, density)

    def _replan(self):
        if self.weight is not None:
            w = self.weight
            self._plan = self._make_plan(w, w != 0)
        else:
            self._plan = _core.plan_decode_compact(self._ctx, self._compact, self._tau, self._keep, self.mapping_asked,
                                                   _assumed_density(self._tau, self._keep, self._density))

    def _default_sparse_rows(self):
        d = _assumed_density(self._tau, self._keep, self._density)
        wd = 1.0 - self.sparsity
        c = _core.decode_costs(self._ctx, self.out_features, self.in_features, self.dtype_name, wd, d)
        known = [v for v in c.values() if not math.isnan(v)]
        if not known:
            return 1
        best = min(known)
        # cuBLAS reads every weight, zeros included: the dense mapping's estimate at full weights.
        dense = _core.decode_costs(self._ctx, self.out_features, self.in_features, self.dtype_name, 1.0, 1.0)["dense"]
        if math.isnan(dense) or best <= 0:
            return 1
        return max(1, int(dense // best))

    @property
    def act_threshold(self):
        return self._plan.tau

    @act_threshold.setter
    def act_threshold(self, tau):
        self.set_activation_threshold(tau)

    def set_activation_threshold(self, tau, density=None):
        """Keep |x_i| >= tau from now on; `density` is the share of activations that keeps (calibrate()
        measures it; without it 0.5 is assumed for tau > 0, 1 for tau = 0). Re-plans when that share
        changes; the threshold alone is a value the kernels read, changed in place."""
        if not tau >= 0:
            raise UsageError(f"act_threshold: expected >= 0, got {tau}")
        old = _assumed_density(self._tau, self._keep, self._density)
        self._tau = float(tau)
        if density is not None:
            if not 0 < density <= 1:
                raise UsageError(f"density: expected in (0, 1], got {density}")
            self._density = float(density)
        if _assumed_density(self._tau, self._keep, self._density) != old:
            self._replan()
            if self._rows_follow_density:
                self.max_sparse_rows = self._default_sparse_rows()
        else:
            self._plan.set_tau(self._tau)

    # Calls.
    def run_rows(self, x):
        """x: (rows, in_features) contiguous, on the layer's device and dtype: the decode kernels' y."""
        y = torch.empty(x.shape[0], self.out_features, dtype=x.dtype, device=x.device)
        if x.shape[0]:
            self._ctx.make_current()
            esize = x.element_size()
            self._plan.run_rows(x.data_ptr(), y.data_ptr(), x.shape[0], self.in_features * esize,
                                self.out_features * esize, torch.cuda.current_stream(x.device).cuda_stream)
        return y

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise UsageError(f"x: expected {self.in_features} features in the last dimension, got {x.shape[-1]}")
        if _DT.get(x.dtype) != self.dtype_name:
            raise UsageError(f"x: dtype {x.dtype}, the layer's is {self.dtype_name}")
        if x.device != self._device:
            raise UsageError(f"x: on {x.device}, the layer on {self._device}")
        rows = x.reshape(-1, self.in_features)
        if rows.shape[0] > self.max_sparse_rows:
            y = F.linear(rows, self.weight)
        else:
            y = _custom_op.sparse_linear(rows.contiguous(), self._handle, self.out_features)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)

    def explain(self):
        return {"op": "decode", "mapping": self._plan.mapping, "weight_bytes": self._plan.weight_bytes,
                "max_sparse_rows": self.max_sparse_rows, "act_threshold": self._tau,
                "act_density": _assumed_density(self._tau, self._keep, self._density), "text": self._plan.explain()}

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, dtype={self.dtype_name}, "
                f"sparsity={self.sparsity}, mapping={self._plan.mapping}, max_sparse_rows={self.max_sparse_rows}")

"""Whole models: replace_linear (siblings stacked where the structure allows) and calibrate."""
import torch

from .._errors import UsageError
from ._linear import SparseLinear

_MLP_PARTS = ("gate_proj", "up_proj", "down_proj")


def _is_gated_mlp(m):
    """A Llama / Qwen / Mistral style MLP: down(act(gate(x)) * up(x)) from nn.Linear parts."""
    parts = [getattr(m, p, None) for p in _MLP_PARTS]
    return (all(isinstance(p, torch.nn.Linear) for p in parts) and callable(getattr(m, "act_fn", None))
            and parts[0].in_features == parts[1].in_features and parts[0].out_features == parts[1].out_features
            and (parts[0].bias is None) == (parts[1].bias is None))


class SparseMLP(torch.nn.Module):
    """A gated MLP with gate|up stacked into one SparseLinear (one launch, the two layers' weights in
    one plan; both read the same x, so one activation threshold serves both) and down on its own."""

    def __init__(self, gate_up, down, act_fn, intermediate):
        super().__init__()
        self.gate_up, self.down, self.act_fn, self.intermediate = gate_up, down, act_fn, intermediate

    @classmethod
    def from_mlp(cls, mlp, norms=None, down_norms=None, **kw):
        g, u, d = (getattr(mlp, p) for p in _MLP_PARTS)
        w = torch.cat([g.weight.detach(), u.weight.detach()])
        b = None if g.bias is None else torch.cat([g.bias.detach(), u.bias.detach()])
        gate_up = SparseLinear(w, b, norms=norms, **kw)
        down = SparseLinear.from_linear(d, norms=down_norms, **kw)
        return cls(gate_up, down, mlp.act_fn, g.out_features)

    def forward(self, x):
        g, u = self.gate_up(x).split(self.intermediate, dim=-1)
        return self.down(self.act_fn(g) * u)


_QKV = ("q_proj", "k_proj", "v_proj")


def _has_qkv(m):
    """An attention module whose q, k and v projections are nn.Linear layers of one input."""
    parts = [getattr(m, p, None) for p in _QKV]
    return (all(isinstance(p, torch.nn.Linear) for p in parts) and len({p.in_features for p in parts}) == 1
            and len({p.bias is None for p in parts}) == 1)


class StackedPart(torch.nn.Module):
    """One of q, k, v stacked into one SparseLinear, held (as `qkv`) by the q part. The q part runs the
    stacked layer and keeps its output for the k and v parts' call on the same x (the attention
    module calls q, k, v in turn on one tensor); a part called on another x runs the layer itself.
    Under CUDA-graph capture and torch.compile the same Python runs once, so the stacked layer is one
    launch there too."""

    def __init__(self, head, index, lo, hi, qkv=None):
        super().__init__()
        if qkv is not None:
            self.qkv = qkv
            self._x = self._y = None
        object.__setattr__(self, "_head", head if head is not None else self)
        self.index, self.lo, self.hi = index, lo, hi

    def forward(self, x):
        h = self._head
        if self.index == 0 or h._x is not x:
            h._y, h._x = h.qkv(x), x
        y = h._y[..., self.lo:self.hi]
        if self.index == len(_QKV) - 1:
            h._x = h._y = None
        return y


def _stack_qkv(attn, layer):
    """Puts three StackedParts over the stacked SparseLinear `layer` in place of attn's q, k, v."""
    sizes = [getattr(attn, p).out_features for p in _QKV]
    if sum(sizes) != layer.out_features:
        raise UsageError(f"q|k|v: {layer.out_features} stacked rows, the projections have {sizes}")
    layer.stack_sizes = sizes
    head = StackedPart(None, 0, 0, sizes[0], qkv=layer)
    setattr(attn, _QKV[0], head)
    for i in (1, 2):
        lo = sum(sizes[:i])
        setattr(attn, _QKV[i], StackedPart(head, i, lo, lo + sizes[i]))


def _qkv_layer(attn, norms=None, **kw):
    parts = [getattr(attn, p) for p in _QKV]
    w = torch.cat([p.weight.detach() for p in parts])
    b = None if parts[0].bias is None else torch.cat([p.bias.detach() for p in parts])
    return SparseLinear(w, b, norms=norms, **kw)


def _children(module, prefix=""):
    """(name, parent, attribute, child) depth first; a child the caller replaced is not entered."""
    for child_name, child in list(module.named_children()):
        full = f"{prefix}.{child_name}" if prefix else child_name
        yield full, module, child_name, child
        if getattr(module, child_name, None) is child:
            yield from _children(child, full)


def _norms_of(norms, name):
    if norms is None or not isinstance(norms, dict):
        return norms
    return norms.get(name)


def replace_linear(model, filter=None, stack=True, norms=None, **kw):
    """Replaces, in place, every nn.Linear of `model` (for which filter(name, module) is true) by a
    SparseLinear with the keywords given (SparseLinear's); with `stack`, a gated MLP (gate_proj,
    up_proj, down_proj and act_fn, as in Hugging Face Llama, Qwen and Mistral) whose three parts pass
    the filter becomes a SparseMLP, and an attention module's q_proj, k_proj and v_proj one stacked
    layer (StackedPart). `norms`: Wanda's input norms, one tensor, or a dict by layer name. Returns the
    names of the SparseLinear layers made (NAME.gate_up and NAME.down for an MLP, NAME.q_proj.qkv for
    q|k|v), as named_modules() gives them."""
    done = []
    keep = filter or (lambda name, m: True)
    for full, parent, child_name, child in _children(model):
        if isinstance(child, (SparseLinear, SparseMLP, StackedPart)):
            continue
        if stack and _has_qkv(child) and all(keep(f"{full}.{p}", getattr(child, p)) for p in _QKV):
            _stack_qkv(child, _qkv_layer(child, norms=_norms_of(norms, f"{full}.q_proj"), **kw))
            done.append(f"{full}.q_proj.qkv")
        elif stack and _is_gated_mlp(child) and all(keep(f"{full}.{p}", getattr(child, p)) for p in _MLP_PARTS):
            setattr(parent, child_name, SparseMLP.from_mlp(child, norms=_norms_of(norms, f"{full}.gate_proj"),
                                                           down_norms=_norms_of(norms, f"{full}.down_proj"), **kw))
            done += [f"{full}.gate_up", f"{full}.down"]
        elif isinstance(child, torch.nn.Linear) and keep(full, child):
            setattr(parent, child_name, SparseLinear.from_linear(child, norms=_norms_of(norms, full), **kw))
            done.append(full)
    return done


def _sample(x, limit, gen):
    a = x.detach().reshape(-1).abs().float()
    if a.numel() > limit:
        a = a[torch.randint(a.numel(), (limit,), device=a.device, generator=gen)]
    return a


def _run_with_pre_hooks(model, hooks, layers, batches):
    """Runs `batches` (each a tensor, a tuple of positional arguments or a dict of keyword arguments
    for model(...)) without gradients, with hooks[name] as a forward pre-hook on layers[name]."""
    handles = [layers[n].register_forward_pre_hook(h) for n, h in hooks.items()]
    try:
        with torch.no_grad():
            for b in batches:
                model(**b) if isinstance(b, dict) else model(*b) if isinstance(b, tuple) else model(b)
    finally:
        for h in handles:
            h.remove()


def calibrate(model, batches, density=0.5, samples_per_layer=1 << 20, seed=0):
    """TEAL-style thresholds: runs `batches` (each a tensor, a tuple of positional arguments or a dict
    of keyword arguments for model(...)) and sets each SparseLinear's act_threshold to the |x| that
    keeps `density` of its inputs' activations, re-planning layers whose mapping depends on it.
    Returns {layer name: (threshold, share kept in the calibration sample)}."""
    if not 0 < density <= 1:
        raise UsageError(f"density: expected in (0, 1], got {density}")
    layers = {n: m for n, m in model.named_modules() if isinstance(m, SparseLinear)}
    if not layers:
        raise UsageError("calibrate: the model has no SparseLinear (run replace_linear first)")
    seen = {n: [] for n in layers}
    gen = {}

    def hook(name):
        def pre(module, args):
            g = gen.setdefault(args[0].device, torch.Generator(device=args[0].device).manual_seed(seed))
            seen[name].append(_sample(args[0], samples_per_layer, g))
        return pre

    _run_with_pre_hooks(model, {n: hook(n) for n in layers}, layers, batches)
    out = {}
    for name, layer in layers.items():
        if not seen[name]:
            raise UsageError(f"calibrate: layer {name} saw no input in the batches")
        a = torch.cat(seen[name])
        if a.numel() > samples_per_layer:
            a = a[torch.randperm(a.numel(), device=a.device)[:samples_per_layer]]
        tau = float(torch.quantile(a, 1.0 - density)) if density < 1 else 0.0
        kept = float((a >= tau).float().mean())
        layer.set_activation_threshold(tau, density=max(kept, 1e-6))
        out[name] = (tau, kept)
    return out


def input_norms(model, batches, filter=None):
    """Wanda's calibration: the L2 norm of each input feature over every token of `batches`, for
    every nn.Linear (for which filter(name, module) is true) of a dense model. Returns
    {layer name: float32 tensor of in_features}, what replace_linear(method="wanda", norms=...) takes."""
    keep = filter or (lambda name, m: True)
    layers = {n: m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and keep(n, m)}
    if not layers:
        raise UsageError("input_norms: the model has no nn.Linear to calibrate")
    sums = {}

    def hook(name):
        def pre(module, args):
            x = args[0].detach().reshape(-1, args[0].shape[-1]).float()
            sums[name] = sums.get(name, 0) + (x * x).sum(0)
        return pre

    _run_with_pre_hooks(model, {n: hook(n) for n in layers}, layers, batches)
    missing = [n for n in layers if n not in sums]
    if missing:
        raise UsageError(f"input_norms: {len(missing)} layers saw no input, e.g. {missing[:3]}")
    return {n: s.sqrt() for n, s in sums.items()}

"""The LLM bench's calibration fallback and its correctness reference, kept free of any GPU-only
call so that they run on the CPU in tests: activation thresholds from a calibration pass, the
masked weights a pruned layer holds (read back through the layer itself), the check that they are
a masked copy of the dense weights, and a dense reference model on those weights."""
import copy

import torch


def linear_layers(model, cls):
    """(name, module) of every module of `model` that is an instance of cls, in model order."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, cls)]


def hook_thresholds(model, batches, density, cls):
    """Sets each `cls` module's act_threshold to the (1 - density) quantile of |x| over its inputs
    when `batches` run through `model` (with the thresholds it had, usually 0: every activation
    kept), so that about `density` of each layer's activations are kept. Returns {name: threshold}."""
    layers = linear_layers(model, cls)
    seen = {name: [] for name, _ in layers}
    hooks = [m.register_forward_pre_hook(lambda mod, args, name=name: seen[name].append(
        args[0].detach().abs().float().flatten().cpu())) for name, m in layers]
    try:
        with torch.no_grad():
            for b in batches:
                model(b)
    finally:
        for h in hooks:
            h.remove()
    out = {}
    for name, m in layers:
        a = torch.cat(seen[name]).sort().values
        # The k-th smallest with k = share dropped: |x| >= it keeps `density` of the entries.
        k = min(int((1.0 - density) * a.numel()), a.numel() - 1)
        out[name] = float(a[k]) if density < 1.0 else 0.0
        m.act_threshold = out[name]
    return out


# The names replace_linear gives the layers it stacks, and the dense layers each stands for, in row order.
_STACKED = ((".q_proj.qkv", (".q_proj", ".k_proj", ".v_proj")), (".gate_up", (".gate_proj", ".up_proj")),
            (".down", (".down_proj",)))


def dense_parts(name, rows, cols, dense_mods):
    """[(dense layer name, rows)] that the sparse layer `name` of shape (rows, cols) stands for in the
    dense model (modules by name): itself, or the parts replace_linear stacked into it; None when
    nothing in the dense model matches."""
    cands = [[name]] + [[name[:-len(suf)] + p for p in parts] for suf, parts in _STACKED if name.endswith(suf)]
    for names in cands:
        mods = [dense_mods.get(n) for n in names]
        if all(isinstance(m, torch.nn.Linear) and m.in_features == cols for m in mods) and \
                sum(m.out_features for m in mods) == rows:
            return [(n, m.out_features) for n, m in zip(names, mods)]
    return None


def probe_weight(layer, in_features, dtype, device, chunk=4096):
    """The (out, in) weight `layer` applies, read back by running it on the rows of the identity
    (exact for any layer linear in x without bias: one product per output entry)."""
    cols = []
    for start in range(0, in_features, chunk):
        n = min(chunk, in_features - start)
        eye = torch.zeros(n, in_features, dtype=dtype, device=device)
        eye[torch.arange(n, device=device), torch.arange(start, start + n, device=device)] = 1
        with torch.no_grad():
            cols.append(layer(eye))
    return torch.cat(cols).t().contiguous()


def mask_report(dense, masked):
    """How `masked` relates to `dense` (both (out, in)): whether every kept entry equals the dense
    one, the share kept, and whether each row kept its largest magnitudes (per-row magnitude
    pruning; Wanda or other criteria may not)."""
    kept = masked != 0
    equal = bool((masked[kept] == dense[kept]).all())
    mag = dense.abs().float()
    lo = torch.where(kept, mag, torch.full_like(mag, float("inf"))).min(dim=1).values
    hi = torch.where(kept, torch.full_like(mag, -1.0), mag).max(dim=1).values
    return {"kept_equal_dense": equal, "kept_share": float(kept.float().mean()),
            "row_magnitude_order": bool((lo >= hi).all())}


def reference_model(dense, masked_weights):
    """A deep copy of `dense` whose nn.Linear weights are replaced by masked_weights {name: (out, in)}."""
    ref = copy.deepcopy(dense)
    mods = dict(ref.named_modules())
    with torch.no_grad():
        for name, w in masked_weights.items():
            mods[name].weight.copy_(w)
    return ref


def mask_activations(model, thresholds):
    """Forward pre-hooks zeroing each named layer's inputs with |x| < threshold (what a sparse layer
    with that act_threshold skips). Returns the hook handles (remove() them to undo)."""
    mods = dict(model.named_modules())
    return [mods[name].register_forward_pre_hook(
        lambda mod, args, tau=tau: (args[0] * (args[0].abs() >= tau).to(args[0].dtype),))
        for name, tau in thresholds.items() if tau > 0]


def compare(out, ref):
    """max |out - ref| and the relative error ||out - ref|| / ||ref|| (both in float32)."""
    a, b = out.float(), ref.float()
    return {"max_abs_diff": float((a - b).abs().max()), "rel_err": float((a - b).norm() / b.norm().clamp_min(1e-30))}

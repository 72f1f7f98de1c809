"""Saving a pruned model and loading it without pruning again.

A folder, as save_pretrained writes one: `dbsparse_layers.safetensors` holds every SparseLinear in
the column bitmap layout (the format `dbsparse prune` writes and any safetensors reader lists:
include/dbsparse/compact_weights.hpp), each layer's settings in its metadata; `rest.safetensors`
holds the rest of the state dict (embeddings, norms, biases) through the safetensors package."""
import json
import os

import torch

from .._errors import UsageError
from .. import _core
from ._linear import SparseLinear
from ._model import SparseMLP, _has_qkv, _is_gated_mlp, _stack_qkv
from . import _layout

LAYERS = "dbsparse_layers.safetensors"
REST = "rest.safetensors"


def _safetensors():
    try:
        import safetensors.torch as st
    except ImportError as e:
        raise UsageError("save_pruned / load_pruned need the safetensors package (pip install safetensors)") from e
    return st


def _settings(layer):
    return {"act_threshold": layer._tau, "act_density": layer._density, "keep": layer._keep,
            "mapping": layer.mapping_asked, "max_sparse_rows": layer.max_sparse_rows,
            "dense_copy": layer.weight is not None, "has_bias": layer.bias is not None,
            "stack_sizes": layer.stack_sizes}


def save_pruned(model, folder):
    """Writes the model's SparseLinears (compact) and the rest of its state dict into `folder`."""
    st = _safetensors()
    layers, meta, skip = [], {}, set()
    for name, m in model.named_modules():
        if not isinstance(m, SparseLinear):
            continue
        if m.dtype_name == "f32":
            raise UsageError(f"save_pruned: layer {name} is f32; the compact layout holds f16 or bf16 values")
        w, c = m.weight, m._compact
        layers.append(_layout.column_bitmap(w, w != 0, name) if w is not None else
                      _core.compact_layer(name, c.rows, c.cols, c.masks, c.seg_ptr, c.values, c.dtype))
        meta[f"{name}.settings"] = json.dumps(_settings(m))
        skip.add(f"{name}.weight")
    if not layers:
        raise UsageError("save_pruned: the model has no SparseLinear (run replace_linear first)")
    os.makedirs(folder, exist_ok=True)
    _core.write_compact_weights(os.path.join(folder, LAYERS), layers, meta)
    rest, seen = {}, set()
    for k, v in model.state_dict().items():
        if k in skip:
            continue
        v = v.detach().contiguous()
        # Tied weights (an embedding shared with the LM head) share storage, which safetensors
        # refuses: each later name gets its own copy; loading writes both into the one parameter.
        key = (v.device, v.data_ptr()) if v.numel() else None
        rest[k] = v.clone() if key in seen else v
        seen.add(key)
    st.save_file(rest, os.path.join(folder, REST))


def _owner(model, name):
    parent_name, _, attr = name.rpartition(".")
    return (model.get_submodule(parent_name) if parent_name else model), attr


def load_pruned(model, folder, device="cuda"):
    """Puts the SparseLinears saved in `folder` into `model` (the same architecture, dense, e.g. built
    from its config) in place of its layers, then loads the rest of the state dict. No pruning."""
    st = _safetensors()
    path = os.path.join(folder, LAYERS)
    if not os.path.exists(path):
        raise UsageError(f"load_pruned: {path} not found (written by save_pruned)")
    layers = {l.name: l for l in _core.read_compact_weights(path)}
    meta = _read_settings(path)
    rest = st.load_file(os.path.join(folder, REST), device=str(device))

    def made(name):
        s = meta.get(name, {})
        bias = rest.pop(f"{name}.bias", None)
        return SparseLinear.from_compact(layers[name], bias, device=device, act_threshold=s.get("act_threshold", 0.0),
                                         act_density=s.get("act_density", 0.0), keep=s.get("keep", 0.0),
                                         mapping=s.get("mapping", "auto"), max_sparse_rows=s.get("max_sparse_rows"),
                                         dense_copy=s.get("dense_copy", True))

    for name in sorted(layers):
        parent, attr = _owner(model, name)
        if attr == "gate_up":
            mlp_parent, mlp_attr = _owner(model, name[:-len(".gate_up")])
            mlp = getattr(mlp_parent, mlp_attr)
            if not isinstance(mlp, SparseMLP):
                if not _is_gated_mlp(mlp):
                    raise UsageError(f"load_pruned: {name} is a stacked gate|up layer; the model's module there is not "
                                     "a gated MLP")
                down = name[:-len("gate_up")] + "down"
                setattr(mlp_parent, mlp_attr, SparseMLP(made(name), made(down), mlp.act_fn, layers[name].rows // 2))
        elif name.endswith(".down") and f"{name[:-len('.down')]}.gate_up" in layers:
            continue  # made with its gate_up
        elif name.endswith(".q_proj.qkv"):
            attn = model.get_submodule(name[:-len(".q_proj.qkv")])
            if not _has_qkv(attn):
                raise UsageError(f"load_pruned: {name} stacks q, k and v; the model's module there has no "
                                 "q_proj, k_proj and v_proj layers")
            _stack_qkv(attn, made(name))
        else:
            setattr(parent, attr, made(name))
    missing, unexpected = model.load_state_dict(rest, strict=False)
    if unexpected:
        raise UsageError(f"load_pruned: the saved state holds {len(unexpected)} entries the model lacks, "
                         f"e.g. {unexpected[:3]}")
    return model


def _read_settings(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    out = {}
    for k, v in header.get("__metadata__", {}).items():
        if k.endswith(".settings"):
            out[k[:-len(".settings")]] = json.loads(v)
    return out

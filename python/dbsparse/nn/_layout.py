"""Pruning and the column bitmap layout computed by torch on the weight's own device (a GPU in
practice: milliseconds a layer where the host took seconds), handed to C++ as a CompactLayer.

The layout (include/dbsparse/column_bitmap.hpp): by columns, each column cut into strips of 1024
rows; segment (j, t) = column j, strip t holds 32 mask words (bit b of word w: row 1024 t + 32 w + b
kept) and its kept values in row order; seg_ptr[s] is the first value of segment s = j * strips + t.
"""
import math

import numpy as np
import torch

from .._errors import UsageError
from .. import _core

STRIP = 1024
_DT = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}
_COLS_A_PASS = 1024  # columns laid out at once: bounds the int64 temporaries to 8 bytes x rows x 1024


def keep_count(cols, sparsity):
    """Weights kept a row: round((1 - sparsity) * cols), halves away from zero (C++'s prune_rows)."""
    if not 0.0 <= sparsity < 1.0:
        raise UsageError(f"sparsity {sparsity} outside [0, 1)")
    return min(max(int(math.floor((1.0 - sparsity) * cols + 0.5)), 0), cols)


def prune_mask(w, sparsity, method="magnitude", norms=None):
    """The kept weights of each row as a bool tensor on w's device: the keep_count largest |w|
    (method 'magnitude') or |w| * norms[column] (Wanda, 'wanda'); 'none' keeps the nonzeros (a layer
    pruned already). Ties go to either weight (C++'s prune_magnitude sends them to the lower column)."""
    if method == "none":
        return w != 0
    if method not in ("magnitude", "wanda"):
        raise UsageError(f"prune method '{method}': expected magnitude, wanda or none")
    rows, cols = w.shape
    if torch.isnan(w).any():
        raise UsageError("weight: holds a NaN, which has no magnitude to rank")
    if torch.isinf(w).any():
        raise UsageError("weight: holds an infinite value (a diverged or damaged checkpoint)")
    score = w.detach().abs().float()
    if method == "wanda":
        if norms is None:
            raise UsageError("prune method wanda needs the input norms (one per column)")
        n = torch.as_tensor(norms, dtype=torch.float32, device=w.device).reshape(-1)
        if n.numel() != cols:
            raise UsageError(f"norms has {n.numel()} entries, the weight {cols} columns")
        if not (torch.isfinite(n).all() and (n >= 0).all()):
            raise UsageError("norms: must be finite and non-negative (an input norm per column)")
        score = score * n[None, :]
    keep = keep_count(cols, sparsity)
    mask = torch.zeros(rows, cols, dtype=torch.bool, device=w.device)
    if keep:
        mask.scatter_(1, torch.topk(score, keep, dim=1, sorted=False).indices, True)
    return mask


def _words(bits):
    """(..., 32) bool -> (...) int64 words, bit b from bits[..., b]."""
    shifts = torch.arange(32, device=bits.device, dtype=torch.int64)
    return (bits.to(torch.int64) << shifts).sum(-1)


def column_bitmap(w, mask, name="w"):
    """The CompactLayer of w's kept weights (mask true), values in w's dtype (f16 or bf16)."""
    if w.dtype not in (torch.float16, torch.bfloat16):
        raise UsageError(f"{name}: the column bitmap holds f16 or bf16 values, not {w.dtype}")
    rows, cols = w.shape
    strips = max((rows + STRIP - 1) // STRIP, 0)
    words, counts = [], []
    for j0 in range(0, cols, _COLS_A_PASS):
        mt = mask[:, j0:j0 + _COLS_A_PASS].t()
        if strips * STRIP != rows:
            mt = torch.cat([mt, mt.new_zeros(mt.shape[0], strips * STRIP - rows)], dim=1)
        bits = mt.reshape(mt.shape[0], strips, 32, 32)
        words.append(_words(bits).reshape(-1))
        counts.append(bits.sum((2, 3), dtype=torch.int64).reshape(-1))
    masks = torch.cat(words) if words else torch.zeros(0, dtype=torch.int64)
    cnt = torch.cat(counts) if counts else torch.zeros(0, dtype=torch.int64)
    seg_ptr = torch.cat([cnt.new_zeros(1), torch.cumsum(cnt, 0)])
    if int(seg_ptr[-1]) > 2**31 - 1:
        raise UsageError(f"{name}: {int(seg_ptr[-1])} kept weights pass int32 offsets")
    values = w.detach().t()[mask.t()]  # column by column, rows ascending: the segments' order
    return _core.compact_layer(name, rows, cols, masks.cpu().numpy().astype(np.uint32),
                               seg_ptr.to(torch.int32).cpu().numpy(), values.view(torch.int16).cpu().numpy().view(np.uint16),
                               _DT[w.dtype])


def dense_from_bitmap(layer, device, dtype):
    """The layer as a dense (rows, cols) tensor on `device` (zeros where pruned): what a loaded layer's
    batched calls read."""
    rows, cols, strips = layer.rows, layer.cols, layer.strips
    m = torch.from_numpy(np.array(layer.masks).view(np.int32)).to(device)
    shifts = torch.arange(32, device=device, dtype=torch.int32)
    bits = ((m[:, None] >> shifts) & 1).bool().reshape(cols, strips * STRIP)[:, :rows]
    wt = torch.zeros(cols, rows, dtype=dtype, device=device)
    vals = torch.from_numpy(np.array(layer.values).view(np.int16)).to(device).view(dtype)
    wt[bits] = vals
    return wt.t().contiguous()

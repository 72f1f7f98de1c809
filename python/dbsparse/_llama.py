"""A Llama-architecture decoder stack in plain PyTorch, for `python -m dbsparse.bench llm`: RMSNorm,
rotary embeddings, grouped-query attention through F.scaled_dot_product_attention over a
preallocated KV cache, SwiGLU MLP, a final RMSNorm. No embedding and no LM head: it maps hidden
states (batch, tokens, hidden) to hidden states. Linear layers are nn.Linear without bias, named
as in Hugging Face's Llama (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj), so
`dbsparse.nn.replace_linear` finds them.

`decode` has static shapes (the position is a device tensor, the attended length a Python int),
so one decode step can be captured in a CUDA graph and replayed."""
import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from ._errors import UsageError


@dataclass(frozen=True)
class Config:
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    layers: int
    rope_theta: float = 500000.0
    eps: float = 1e-5
    qk_norm: bool = False  # Qwen3: RMSNorm over each head's q and k before the rotation


# The published shapes; `layers` is the full model's depth (the bench runs fewer with --layers).
PRESETS = {
    "llama-3.1-8b": Config(4096, 14336, 32, 8, 128, 32),
    "llama-3.2-1b": Config(2048, 8192, 32, 8, 64, 16),
    "qwen3-0.6b": Config(1024, 3072, 16, 8, 128, 28, rope_theta=1e6, eps=1e-6, qk_norm=True),
}


def preset(name, layers=None):
    """The named preset's Config, with `layers` layers if given."""
    if name not in PRESETS:
        raise UsageError(f"--model: unknown model {name!r}; one of {', '.join(PRESETS)}")
    cfg = PRESETS[name]
    return cfg if layers is None else replace(cfg, layers=layers)


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim, device=device, dtype=dtype))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def _rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Attention(torch.nn.Module):
    def __init__(self, cfg, device=None, dtype=None):
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.heads, self.kv_heads, self.head_dim = cfg.heads, cfg.kv_heads, cfg.head_dim
        self.q_proj = torch.nn.Linear(cfg.hidden, cfg.heads * cfg.head_dim, **kw)
        self.k_proj = torch.nn.Linear(cfg.hidden, cfg.kv_heads * cfg.head_dim, **kw)
        self.v_proj = torch.nn.Linear(cfg.hidden, cfg.kv_heads * cfg.head_dim, **kw)
        self.o_proj = torch.nn.Linear(cfg.heads * cfg.head_dim, cfg.hidden, **kw)
        norm = (lambda: RMSNorm(cfg.head_dim, cfg.eps, device, dtype)) if cfg.qk_norm else torch.nn.Identity
        self.q_norm, self.k_norm = norm(), norm()
        self.k_cache = self.v_cache = None

    def _project(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, self.heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, t, self.kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin, v

    def _attend(self, q, k, v, mask, causal):
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        b, _, t, _ = o.shape
        return self.o_proj(o.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))

    def forward(self, x, cos, sin, write_cache):
        """Causal attention over x's own tokens at positions 0..T-1; writes their k, v into the
        cache's first T slots when write_cache."""
        q, k, v = self._project(x, cos, sin)
        if write_cache:
            self.k_cache[:, :, :k.shape[2]] = k
            self.v_cache[:, :, :v.shape[2]] = v
        return self._attend(q, k, v, None, True)

    def decode(self, x, cos, sin, pos, mask, kv_len):
        """x's tokens at positions `pos` (a device tensor): their k, v go into those cache slots, and
        they attend to the first kv_len slots where `mask` allows."""
        q, k, v = self._project(x, cos, sin)
        self.k_cache.index_copy_(2, pos, k)
        self.v_cache.index_copy_(2, pos, v)
        return self._attend(q, self.k_cache[:, :, :kv_len], self.v_cache[:, :, :kv_len], mask, False)


class MLP(torch.nn.Module):
    def __init__(self, cfg, device=None, dtype=None):
        super().__init__()
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate_proj = torch.nn.Linear(cfg.hidden, cfg.intermediate, **kw)
        self.up_proj = torch.nn.Linear(cfg.hidden, cfg.intermediate, **kw)
        self.down_proj = torch.nn.Linear(cfg.intermediate, cfg.hidden, **kw)
        self.act_fn = torch.nn.SiLU()  # named as in Hugging Face: replace_linear stacks gate|up by it

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Layer(torch.nn.Module):
    def __init__(self, cfg, device=None, dtype=None):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden, cfg.eps, device, dtype)
        self.self_attn = Attention(cfg, device, dtype)
        self.post_attention_layernorm = RMSNorm(cfg.hidden, cfg.eps, device, dtype)
        self.mlp = MLP(cfg, device, dtype)

    def forward(self, x, attend):
        h = x + attend(self.self_attn, self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


class Decoder(torch.nn.Module):
    """The decoder layers and the final norm. Weights random (seeded): each linear layer's entries
    normal with standard deviation 1/sqrt(in_features), norms ones."""

    def __init__(self, cfg, device=None, dtype=torch.float16, seed=0):
        super().__init__()
        self.cfg = cfg
        self.layers = torch.nn.ModuleList(Layer(cfg, device, dtype) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.hidden, cfg.eps, device, dtype)
        g = torch.Generator(device=device or "cpu").manual_seed(seed)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, torch.nn.Linear):
                    m.weight.normal_(0.0, 1.0 / math.sqrt(m.in_features), generator=g)
        self.requires_grad_(False)  # inference only
        self.max_seq = 0

    def _device(self):
        return self.norm.weight.device

    def allocate_cache(self, max_seq, batch=1, fill_seed=None):
        """A KV cache of max_seq slots for `batch` sequences in every layer (zeros, or normal values
        from fill_seed: the same values for every model given the same seed)."""
        cfg, dev, dt = self.cfg, self._device(), self.norm.weight.dtype
        g = None if fill_seed is None else torch.Generator(device=dev).manual_seed(fill_seed)
        for layer in self.layers:
            for name in ("k_cache", "v_cache"):
                t = torch.zeros(batch, cfg.kv_heads, max_seq, cfg.head_dim, device=dev, dtype=dt)
                if g is not None:
                    t.normal_(generator=g)
                setattr(layer.self_attn, name, t)
        half = cfg.head_dim // 2
        inv = 1.0 / cfg.rope_theta ** (torch.arange(half, device=dev, dtype=torch.float32) / half)
        ang = torch.outer(torch.arange(max_seq, device=dev, dtype=torch.float32), inv)
        ang = torch.cat((ang, ang), dim=-1)
        self.cos, self.sin = ang.cos(), ang.sin()
        self.slots = torch.arange(max_seq, device=dev)
        self.max_seq = max_seq

    def _check_len(self, n, what):
        if n > self.max_seq:
            raise UsageError(f"{what}: {n} positions, the cache holds {self.max_seq} (allocate_cache)")

    def forward(self, x, write_cache=False):
        """Hidden states (batch, T, hidden) at positions 0..T-1, causal: the prefill. Writes the
        cache's first T slots when write_cache."""
        t = x.shape[1]
        self._check_len(t, "x")
        cos, sin = self.cos[:t], self.sin[:t]
        for layer in self.layers:
            x = layer(x, lambda attn, h: attn(h, cos, sin, write_cache))
        return self.norm(x)

    def decode(self, x, pos, kv_len):
        """x (batch, T, hidden) at positions `pos` (a device tensor of T ints, each < kv_len): writes
        their k, v into the cache and attends to slots 0..kv_len-1 at or before each position. No
        host synchronisation, static shapes: capturable in a CUDA graph."""
        self._check_len(kv_len, "kv_len")
        cos, sin = self.cos[pos], self.sin[pos]
        mask = (self.slots[:kv_len].unsqueeze(0) <= pos.unsqueeze(1)).view(1, 1, pos.shape[0], kv_len)
        for layer in self.layers:
            x = layer(x, lambda attn, h: attn.decode(h, cos, sin, pos, mask, kv_len))
        return self.norm(x)

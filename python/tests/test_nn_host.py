"""dbsparse.nn's Python layer on the CPU: replace_linear's stacking, the batch-size dispatch,
torch.compile over stacked layers, calibrate, save/load and a Hugging Face Llama, with the decode
plan replaced by a host stand-in (the masked product in fp32). The kernels themselves are checked
against the same reference on the GPU (test_gpu_nn.py). Needs torch, not a GPU."""
import pytest

torch = pytest.importorskip("torch")

import dbsparse.nn as dnn  # noqa: E402
from dbsparse.nn import _linear  # noqa: E402

DT = torch.bfloat16


class HostPlan:
    def __init__(self, tau):
        self.tau, self.mapping, self.weight_bytes = tau, "host", 0

    def set_tau(self, tau):
        self.tau = tau

    def explain(self):
        return "host stand-in"


def masked_ref(layer, x, tau=None, bias=True):
    tau = layer.act_threshold if tau is None else tau
    xf = x.float()
    xf = torch.where(xf.abs() >= tau, xf, torch.zeros_like(xf))
    y = xf @ layer.weight.float().T
    return y + layer.bias.float() if bias and layer.bias is not None else y


@pytest.fixture
def host_nn(monkeypatch):
    calls = []

    def run_rows(self, x):
        calls.append(x.shape[0])
        return masked_ref(self, x, bias=False).to(x.dtype)  # the plan's product: forward adds the bias

    monkeypatch.setattr(_linear, "_check_device", lambda w: None)
    monkeypatch.setattr(_linear, "context", lambda device: None)
    monkeypatch.setattr(_linear.SparseLinear, "_make_plan", lambda self, pruned, mask: HostPlan(self._tau))
    monkeypatch.setattr(_linear.SparseLinear, "_default_sparse_rows", lambda self: 2)
    monkeypatch.setattr(_linear.SparseLinear, "run_rows", run_rows)
    return calls


class GatedMLP(torch.nn.Module):
    def __init__(self, h, i):
        super().__init__()
        self.gate_proj = torch.nn.Linear(h, i, bias=False)
        self.up_proj = torch.nn.Linear(h, i, bias=False)
        self.down_proj = torch.nn.Linear(i, h, bias=False)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Qkv(torch.nn.Module):
    def __init__(self, h, kv):
        super().__init__()
        self.q_proj = torch.nn.Linear(h, h)
        self.k_proj = torch.nn.Linear(h, kv)
        self.v_proj = torch.nn.Linear(h, kv)

    def forward(self, x):
        return torch.cat([self.q_proj(x), self.k_proj(x), self.v_proj(x)], dim=-1)


def tiny():
    torch.manual_seed(0)
    return torch.nn.Sequential(GatedMLP(64, 96), torch.nn.Linear(64, 64), Qkv(64, 16)).to(DT)


def reference(model, x):
    """The replaced model's product from its layers' kept weights, in fp32 between layers' roundings."""
    mlp, lin, attn = model
    g, u = masked_ref(mlp.gate_up, x).split(96, dim=-1)
    h = masked_ref(mlp.down, (torch.nn.functional.silu(g) * u).to(DT)).to(DT)
    h = masked_ref(lin, h).to(DT)
    return masked_ref(attn.q_proj.qkv, h).to(DT)


def test_replace_linear_stacks_and_dispatches_by_rows(host_nn):
    model = tiny()
    names = dnn.replace_linear(model, sparsity=0.5)
    assert names == ["0.gate_up", "0.down", "1", "2.q_proj.qkv"]
    assert (model[1].weight != 0).sum(1).eq(32).all()
    for rows, sparse_calls in ((1, [1, 1, 1, 1]), (2, [2, 2, 2, 2]), (8, [])):
        host_nn.clear()
        x = torch.randn(rows, 64).to(DT)
        assert torch.allclose(model(x).float(), reference(model, x).float(), rtol=2e-2, atol=2e-2)
        assert host_nn == sparse_calls, rows  # q|k|v ran once; 8 rows took F.linear everywhere


def test_torch_compile_fullgraph_over_stacked_layers_gives_the_eager_result(host_nn):
    model = tiny()
    dnn.replace_linear(model, sparsity=0.5)
    x = torch.randn(1, 64).to(DT)
    eager = model(x)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x), eager)
    xb = torch.randn(8, 64).to(DT)
    assert torch.allclose(compiled(xb).float(), model(xb).float(), rtol=1e-2, atol=1e-2)


def test_calibrate_keeps_the_asked_share_and_replans(host_nn):
    model = tiny()
    dnn.replace_linear(model, sparsity=0.5)
    got = dnn.calibrate(model, [torch.randn(64, 64).to(DT) for _ in range(3)], density=0.3)
    assert set(got) == {"0.gate_up", "0.down", "1", "2.q_proj.qkv"}
    for name, (tau, kept) in got.items():
        layer = model.get_submodule(name)
        assert tau > 0 and abs(kept - 0.3) < 0.03 and layer.act_threshold == tau, name
        assert layer.explain()["act_density"] == kept
    x = torch.randn(1, 64).to(DT)
    assert torch.allclose(model(x).float(), reference(model, x).float(), rtol=2e-2, atol=2e-2)


def test_save_and_load_give_the_same_model_without_pruning(host_nn, tmp_path):
    pytest.importorskip("safetensors")
    model = tiny()
    dnn.replace_linear(model, sparsity=0.5)
    dnn.calibrate(model, [torch.randn(32, 64).to(DT)], density=0.5)
    dnn.save_pruned(model, tmp_path)
    fresh = tiny()
    torch.nn.init.normal_(fresh[1].weight)
    dnn.load_pruned(fresh, tmp_path, device="cpu")
    for name in ("0.gate_up", "0.down", "1", "2.q_proj.qkv"):
        a, b = model.get_submodule(name), fresh.get_submodule(name)
        assert torch.equal(a.weight, b.weight) and a.act_threshold == b.act_threshold, name
        assert (a.bias is None) == (b.bias is None) and (a.bias is None or torch.equal(a.bias, b.bias)), name
    assert fresh[2].q_proj.qkv.stack_sizes == [64, 16, 16]
    x = torch.randn(1, 64).to(DT)
    assert torch.equal(fresh(x), model(x))


def test_hugging_face_llama_generates_and_matches_its_masked_dense_self(host_nn):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(1)
    model = transformers.LlamaForCausalLM(cfg).to(torch.float32).eval()
    dense = transformers.LlamaForCausalLM(cfg).eval()
    dense.load_state_dict(model.state_dict())
    names = dnn.replace_linear(model, filter=lambda n, m: "lm_head" not in n, sparsity=0.5)
    assert "model.layers.1.mlp.gate_up" in names and "model.layers.0.self_attn.q_proj.qkv" in names
    # The dense twin on the kept weights: each projection's rows from the stacked layers.
    for i, layer in enumerate(model.model.layers):
        d = dense.model.layers[i]
        w = layer.mlp.gate_up.weight
        d.mlp.gate_proj.weight.data, d.mlp.up_proj.weight.data = w[:96].clone(), w[96:].clone()
        d.mlp.down_proj.weight.data = layer.mlp.down.weight.clone()
        q = layer.self_attn.q_proj.qkv.weight
        for p, (lo, hi) in zip(("q_proj", "k_proj", "v_proj"), ((0, 64), (64, 96), (96, 128))):
            getattr(d.self_attn, p).weight.data = q[lo:hi].clone()
        d.self_attn.o_proj.weight.data = layer.self_attn.o_proj.weight.clone()
    ids = torch.randint(0, 128, (1, 10))
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, dense(ids).logits, atol=1e-4)
        out = model.generate(ids, max_new_tokens=5, do_sample=False)
        ref = dense.generate(ids, max_new_tokens=5, do_sample=False)
    assert torch.equal(out, ref)
    assert host_nn  # the decode steps ran on the (stand-in) decode path

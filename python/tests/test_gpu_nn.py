"""dbsparse.nn on the GPU against the dense model on the masked weights (and activations): every
batch size, thresholds and re-planning, torch.compile, CUDA graphs, stacking, calibration, saving
and Hugging Face Llama. Skipped without a CUDA device and torch."""
import pytest

from conftest import gpu, torch

if torch is not None:
    import dbsparse.nn as dnn


def masked_ref(layer, x, tau=0.0):
    """The dense product on the layer's kept weights and the activations |x| >= tau, in fp32."""
    xf = x.float()
    xf = torch.where(xf.abs() >= tau, xf, torch.zeros_like(xf))
    y = xf @ layer.weight.float().T
    return y + layer.bias.float() if layer.bias is not None else y


def close(a, b, tol=2e-2):
    return torch.allclose(a.float(), b.float(), rtol=tol, atol=tol * max(b.abs().max().item(), 1e-3))


@gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16] if torch else [])
def test_every_batch_size_matches_the_masked_dense_layer(dtype):
    torch.manual_seed(0)
    lin = torch.nn.Linear(1024, 2048, bias=True).to(device="cuda", dtype=dtype)
    layer = dnn.SparseLinear.from_linear(lin, sparsity=0.5, max_sparse_rows=4)
    assert (layer.weight != 0).sum(1).eq(512).all()  # half of each row kept
    for rows in (1, 3, 4, 5, 64):
        x = torch.randn(rows, 1024, device="cuda", dtype=dtype)
        assert close(layer(x), masked_ref(layer, x)), rows
    x3 = torch.randn(2, 3, 1024, device="cuda", dtype=dtype)
    assert layer(x3).shape == (2, 3, 2048)


@gpu
def test_threshold_change_replans_for_its_density_and_stays_exact():
    torch.manual_seed(1)
    lin = torch.nn.Linear(4096, 4096, bias=False).to(device="cuda", dtype=torch.float16)
    layer = dnn.SparseLinear.from_linear(lin, sparsity=0.5)
    assert layer.explain()["act_density"] == 1.0
    x = torch.randn(1, 4096, device="cuda", dtype=torch.float16)
    tau = float(x.float().abs().median())
    layer.act_threshold = tau
    assert layer.explain()["act_density"] == 0.5 and layer.act_threshold == pytest.approx(tau, rel=1e-6)
    assert close(layer(x), masked_ref(layer, x, tau))
    layer.set_activation_threshold(tau * 1.5, density=0.3)
    assert layer.explain()["act_density"] == 0.3
    assert close(layer(x), masked_ref(layer, x, tau * 1.5))


@gpu
def test_cuda_graph_and_torch_compile_give_the_eager_result():
    torch.manual_seed(2)
    lin = torch.nn.Linear(1024, 1024, bias=False).to(device="cuda", dtype=torch.float16)
    layer = dnn.SparseLinear.from_linear(lin, sparsity=0.5)
    x = torch.randn(1, 1024, device="cuda", dtype=torch.float16)
    eager = layer(x)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        layer(x)
        with torch.cuda.graph(g, stream=s):
            out = layer(x)
    torch.cuda.current_stream().wait_stream(s)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager)
    model = torch.nn.Sequential(layer, torch.nn.SiLU())
    for backend in ("eager", "inductor"):
        compiled = torch.compile(model, fullgraph=True, backend=backend)
        assert torch.equal(compiled(x), model(x)), backend
        xb = torch.randn(32, 1024, device="cuda", dtype=torch.float16)  # the dense branch, traced as well
        assert close(compiled(xb), model(xb)), backend


class GatedMLP(torch.nn.Module if torch else object):
    def __init__(self, h, i):
        super().__init__()
        self.gate_proj = torch.nn.Linear(h, i, bias=False)
        self.up_proj = torch.nn.Linear(h, i, bias=False)
        self.down_proj = torch.nn.Linear(i, h, bias=False)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Qkv(torch.nn.Module if torch else object):
    """q, k, v of one x (GQA sizes), as an attention module calls them."""

    def __init__(self, h, kv):
        super().__init__()
        self.q_proj = torch.nn.Linear(h, h, bias=True)
        self.k_proj = torch.nn.Linear(h, kv, bias=True)
        self.v_proj = torch.nn.Linear(h, kv, bias=True)

    def forward(self, x):
        return torch.cat([self.q_proj(x), self.k_proj(x), self.v_proj(x)], dim=-1)


def tiny_model():
    torch.manual_seed(3)
    return torch.nn.Sequential(GatedMLP(512, 1536), torch.nn.Linear(512, 512)).to(device="cuda", dtype=torch.float16)


@gpu
def test_q_k_v_run_as_one_stacked_layer_and_match_the_masked_model():
    torch.manual_seed(5)
    attn = torch.nn.Sequential(Qkv(512, 128)).to(device="cuda", dtype=torch.float16)
    names = dnn.replace_linear(attn, sparsity=0.5)
    assert names == ["0.q_proj.qkv"]
    layer = attn[0].q_proj.qkv
    assert layer.out_features == 768 and layer.stack_sizes == [512, 128, 128]
    for rows in (1, 16):
        x = torch.randn(rows, 512, device="cuda", dtype=torch.float16)
        assert close(attn(x), masked_ref(layer, x)), rows
        assert close(attn[0].k_proj(x), masked_ref(layer, x)[:, 512:640]), rows  # k alone: its own run


@gpu
def test_replace_linear_stacks_gated_mlps_and_matches_the_masked_model():
    model = tiny_model()
    names = dnn.replace_linear(model, sparsity=0.5)
    assert names == ["0.gate_up", "0.down", "1"]
    mlp = model[0]
    assert isinstance(mlp, dnn.SparseMLP) and mlp.gate_up.out_features == 3072
    x = torch.randn(1, 512, device="cuda", dtype=torch.float16)
    g, u = masked_ref(mlp.gate_up, x).split(1536, dim=-1)
    h = (torch.nn.functional.silu(g) * u).half()
    ref = masked_ref(model[1], masked_ref(mlp.down, h).half())
    assert close(model(x), ref)


@gpu
def test_calibrate_sets_thresholds_that_keep_the_asked_share():
    model = tiny_model()
    dnn.replace_linear(model, sparsity=0.5)
    batches = [torch.randn(64, 512, device="cuda", dtype=torch.float16) for _ in range(4)]
    got = dnn.calibrate(model, batches, density=0.5)
    assert set(got) == {"0.gate_up", "0.down", "1"}
    for name, (tau, kept) in got.items():
        assert tau > 0 and abs(kept - 0.5) < 0.02, name
        layer = model.get_submodule(name)
        assert layer.act_threshold == pytest.approx(tau, rel=1e-6) and layer.explain()["act_density"] == kept
    x = torch.randn(1, 512, device="cuda", dtype=torch.float16)
    layer = model[1]
    assert close(layer(x), masked_ref(layer, x, layer.act_threshold))


def saved_model():
    torch.manual_seed(3)
    return torch.nn.Sequential(GatedMLP(512, 1536), torch.nn.Linear(512, 512), Qkv(512, 128)).to(
        device="cuda", dtype=torch.float16)


@gpu
def test_save_and_load_without_pruning_again(tmp_path):
    pytest.importorskip("safetensors")
    model = saved_model()
    dnn.replace_linear(model, sparsity=0.5)
    dnn.calibrate(model, [torch.randn(32, 512, device="cuda", dtype=torch.float16)], density=0.5)
    dnn.save_pruned(model, tmp_path)
    fresh = saved_model()
    torch.nn.init.normal_(fresh[1].weight)  # different weights: all must come from the files
    dnn.load_pruned(fresh, tmp_path)
    assert isinstance(fresh[0], dnn.SparseMLP) and isinstance(fresh[1], dnn.SparseLinear)
    assert fresh[2].q_proj.qkv.stack_sizes == [512, 128, 128]
    assert torch.equal(fresh[1].weight, model[1].weight) and torch.equal(fresh[1].bias, model[1].bias)
    assert fresh[1].act_threshold == model[1].act_threshold
    x = torch.randn(1, 512, device="cuda", dtype=torch.float16)
    assert torch.equal(fresh(x), model(x))


@gpu
def test_hugging_face_llama_generates_after_replace_linear():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(4)
    model = transformers.LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.float16).eval()
    names = dnn.replace_linear(model, filter=lambda name, m: "lm_head" not in name, sparsity=0.5)
    assert "model.layers.0.mlp.gate_up" in names and "model.layers.1.self_attn.q_proj.qkv" in names
    ids = torch.randint(0, 256, (1, 12), device="cuda")
    out = model.generate(ids, max_new_tokens=6, do_sample=False)
    assert out.shape == (1, 18)

"""`python -m dbsparse.bench llm`: its Llama decoder (against Hugging Face's where transformers is
installed, and its KV-cache decode against its own full causal forward), the calibration and
correctness helpers, the options; float32 on the CPU. The whole bench on a GPU (skipped without)."""
import json
import math

import pytest

from conftest import gpu

torch = pytest.importorskip("torch")

from dbsparse import UsageError, bench, bench_llm  # noqa: E402
from dbsparse._llama import PRESETS, Config, Decoder, preset  # noqa: E402
from dbsparse import _llm_check  # noqa: E402

TINY = Config(hidden=64, intermediate=96, heads=4, kv_heads=2, head_dim=16, layers=2, rope_theta=10000.0, eps=1e-6)


def tiny(qk_norm=False, seed=0, max_seq=32):
    cfg = Config(**{**vars(TINY), "qk_norm": qk_norm})
    m = Decoder(cfg, dtype=torch.float32, seed=seed).eval()
    with torch.no_grad():  # norms away from ones, so that a norm weight read wrongly shows
        for p in m.parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)
    m.allocate_cache(max_seq)
    return m


@pytest.mark.parametrize("qk_norm", [False, True])
def test_decoder_equals_hugging_face_on_the_same_weights(qk_norm):
    tf = pytest.importorskip("transformers")
    if qk_norm and not hasattr(tf, "Qwen3Model"):
        pytest.skip("this transformers has no Qwen3")
    m = tiny(qk_norm)
    conf, model = (tf.Qwen3Config, tf.Qwen3Model) if qk_norm else (tf.LlamaConfig, tf.LlamaModel)
    hf = model(conf(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                    num_hidden_layers=2, rms_norm_eps=1e-6, rope_theta=10000.0, vocab_size=8)).float().eval()
    missing, unexpected = hf.load_state_dict(m.state_dict(), strict=False)
    assert missing == ["embed_tokens.weight"] and unexpected == []
    x = torch.randn(1, 12, 64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours, theirs = m(x), hf(inputs_embeds=x).last_hidden_state
    assert theirs.abs().max() > 0.1
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("qk_norm", [False, True])
def test_decode_with_the_cache_equals_the_full_forward(qk_norm):
    m = tiny(qk_norm)
    x = torch.randn(1, 11, 64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = m(x)
        m(x[:, :8], write_cache=True)
        one = m.decode(x[:, 8:9], torch.tensor([8]), 9)          # kv_len = the tokens so far
        two = m.decode(x[:, 9:11], torch.tensor([9, 10]), 32)   # the whole cache, the mask hides slots 11..31
    torch.testing.assert_close(one[:, 0], full[:, 8], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(two, full[:, 9:11], rtol=1e-5, atol=1e-5)


def test_decode_ignores_slots_past_its_position():
    m = tiny()
    x = torch.randn(1, 6, 64, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        m(x[:, :5], write_cache=True)
        a = m.decode(x[:, 5:], torch.tensor([5]), 32)
        for layer in m.layers:
            layer.self_attn.k_cache[:, :, 6:] = 1e3
            layer.self_attn.v_cache[:, :, 6:] = -1e3
        b = m.decode(x[:, 5:], torch.tensor([5]), 32)
    torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_forward_is_causal():
    m = tiny()
    x = torch.randn(1, 10, 64, generator=torch.Generator().manual_seed(4))
    y = x.clone()
    y[:, 7:] += 1.0
    with torch.no_grad():
        a, b = m(x), m(y)
    torch.testing.assert_close(a[:, :7], b[:, :7], rtol=0, atol=0)
    assert (a[:, 7:] - b[:, 7:]).abs().max() > 1e-3


def test_weights_seeded_and_scaled_by_fan_in():
    a, b, c = (Decoder(Config(256, 512, 4, 2, 64, 1), dtype=torch.float32, seed=s) for s in (5, 5, 6))
    wa, wb, wc = (m.layers[0].mlp.down_proj.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    assert abs(float(wa.std()) - 1 / math.sqrt(512)) < 0.03 / math.sqrt(512)
    q = a.layers[0].self_attn.q_proj
    assert isinstance(q, torch.nn.Linear) and q.bias is None and abs(float(q.weight.std()) * 16 - 1) < 0.03


def test_presets_carry_the_published_shapes():
    c = preset("llama-3.1-8b", layers=3)
    assert (c.hidden, c.intermediate, c.heads, c.kv_heads, c.head_dim, c.layers) == (4096, 14336, 32, 8, 128, 3)
    assert vars(PRESETS["llama-3.2-1b"])["hidden"] == 2048 and PRESETS["llama-3.2-1b"].head_dim == 64
    q = PRESETS["qwen3-0.6b"]
    assert (q.hidden, q.intermediate, q.heads, q.kv_heads, q.head_dim, q.qk_norm) == (1024, 3072, 16, 8, 128, True)
    with pytest.raises(UsageError, match="unknown model 'gpt-2'"):
        preset("gpt-2")


def test_a_longer_input_than_the_cache_is_refused():
    m = tiny(max_seq=8)
    with pytest.raises(UsageError, match="the cache holds 8"):
        m(torch.zeros(1, 9, 64))


class Thresholded(torch.nn.Linear):
    """An nn.Linear that skips inputs below act_threshold, as a sparse layer does."""
    act_threshold = 0.0

    def forward(self, x):
        return super().forward(x * (x.abs() >= self.act_threshold).to(x.dtype))


def test_hook_thresholds_keep_the_density_asked():
    layer = Thresholded(200, 30, bias=False)
    x = torch.randn(1, 50, 200, generator=torch.Generator().manual_seed(7))
    for d in (0.5, 0.3, 1.0):
        layer.act_threshold = 0.0
        taus = _llm_check.hook_thresholds(layer, [x[:, :20], x[:, 20:]], d, Thresholded)
        assert list(taus) == [""] and layer.act_threshold == taus[""]
        assert float((x.abs() >= taus[""]).float().mean()) == pytest.approx(d, abs=1e-4)


def test_hook_thresholds_name_every_layer_of_the_decoder():
    m = tiny()
    for name, mod in list(m.named_modules()):
        for cn, child in list(mod.named_children()):
            if isinstance(child, torch.nn.Linear):
                t = Thresholded(child.in_features, child.out_features, bias=False)
                t.weight = child.weight
                setattr(mod, cn, t)
    taus = _llm_check.hook_thresholds(m, [torch.randn(1, 16, 64)], 0.5, Thresholded)
    assert len(taus) == 14 and "layers.1.mlp.down_proj" in taus and all(t > 0 for t in taus.values())


def test_dense_parts_name_the_layers_a_stacked_layer_stands_for():
    mods = dict(tiny().named_modules())
    parts = lambda name, rows, cols: _llm_check.dense_parts(name, rows, cols, mods)  # noqa: E731
    assert parts("layers.0.self_attn.q_proj.qkv", 128, 64) == [
        ("layers.0.self_attn.q_proj", 64), ("layers.0.self_attn.k_proj", 32), ("layers.0.self_attn.v_proj", 32)]
    assert parts("layers.1.mlp.gate_up", 192, 64) == [("layers.1.mlp.gate_proj", 96), ("layers.1.mlp.up_proj", 96)]
    assert parts("layers.1.mlp.down", 64, 96) == [("layers.1.mlp.down_proj", 64)]
    assert parts("layers.0.self_attn.o_proj", 64, 64) == [("layers.0.self_attn.o_proj", 64)]
    assert parts("layers.0.mlp.gate_up", 96, 64) is None and parts("layers.0.mlp.other", 64, 64) is None


def test_the_mlp_names_its_activation_as_hugging_face_does():
    mlp = tiny().layers[0].mlp
    x = torch.randn(3, 64)
    with torch.no_grad():
        want = mlp.down_proj(torch.nn.functional.silu(mlp.gate_proj(x)) * mlp.up_proj(x))
        torch.testing.assert_close(mlp(x), want)
    assert isinstance(mlp.act_fn, torch.nn.SiLU)


def test_probe_reads_back_a_layers_weight():
    lin = torch.nn.Linear(37, 5, bias=False)
    w = _llm_check.probe_weight(lin, 37, torch.float32, "cpu", chunk=8)
    assert torch.equal(w, lin.weight.detach())


def test_mask_report_on_hand_made_masks():
    dense = torch.tensor([[1.0, -4.0, 2.0, 3.0], [0.5, 0.25, -2.0, 1.0]])
    good = torch.tensor([[0.0, -4.0, 0.0, 3.0], [0.0, 0.0, -2.0, 1.0]])
    assert _llm_check.mask_report(dense, good) == {"kept_equal_dense": True, "kept_share": 0.5,
                                                   "row_magnitude_order": True}
    small_kept = torch.tensor([[1.0, -4.0, 0.0, 0.0], [0.0, 0.0, -2.0, 1.0]])
    assert _llm_check.mask_report(dense, small_kept)["row_magnitude_order"] is False
    changed = good.clone()
    changed[1, 3] = 1.5
    assert _llm_check.mask_report(dense, changed)["kept_equal_dense"] is False


def test_reference_model_and_activation_masks():
    m = tiny()
    w = torch.zeros(96, 64)
    w[:, :3] = 1.0
    ref = _llm_check.reference_model(m, {"layers.0.mlp.gate_proj": w})
    assert torch.equal(ref.layers[0].mlp.gate_proj.weight, w) and not torch.equal(m.layers[0].mlp.gate_proj.weight, w)
    lin = torch.nn.Linear(4, 1, bias=False).requires_grad_(False)
    with torch.no_grad():
        lin.weight.fill_(1.0)
    hooks = _llm_check.mask_activations(torch.nn.Sequential(lin), {"0": 0.5})
    assert float(lin(torch.tensor([0.4, -0.6, 0.5, 0.1]))) == pytest.approx(-0.1)
    hooks[0].remove()
    assert float(lin(torch.tensor([0.4, -0.6, 0.5, 0.1]))) == pytest.approx(0.4)


def test_compare_gives_max_and_relative_error():
    c = _llm_check.compare(torch.tensor([3.0, 4.0]), torch.tensor([3.0, 0.0]))
    assert c == {"max_abs_diff": 4.0, "rel_err": pytest.approx(4 / 3)}


@pytest.mark.parametrize("args, match", [
    (["--model", "llama-9"], "--model: unknown model"),
    (["--dtype", "f32"], "--dtype: f16 or bf16"),
    (["--densities", "1,0"], "--densities"),
    (["--densities", "1.5"], "--densities"),
    (["--densities", "a"], "--densities"),
    (["--sparsity", "1"], "--sparsity"),
    (["--layers", "0"], "--layers: at least 1"),
    (["--context", "0"], "--context: at least 1"),
    (["--prefill", "256,-1"], "--prefill"),
    (["--reps", "0"], "--reps"),
])
def test_bad_options_are_usage_errors(args, match):
    with pytest.raises(UsageError, match=match):
        bench_llm.parse_args(args)


def test_options_parse():
    a = bench_llm.parse_args(["--densities", "1, 0.5", "--prefill", "none", "--model", "qwen3-0.6b"])
    assert a.densities == [1.0, 0.5] and a.prefill == [] and a.context == 512 and a.layers == 4
    assert bench_llm.parse_args([]).prefill == [256, 2048]


def test_bench_dispatches_llm_and_reports_errors(capsys):
    assert bench.main(["llm", "--model", "nope"]) == 2
    assert "--model: unknown model 'nope'" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error")
def test_no_gpu_is_a_clear_error(capsys):
    assert bench.main(["llm", "--layers", "1"]) == 77
    assert "needs a CUDA device" in capsys.readouterr().err
    with pytest.raises(UsageError, match="needs a CUDA device"):
        bench_llm.run(bench_llm.parse_args([]), [])


def test_table_shows_ratios_to_dense():
    r = {"decode_us": 100.0, "tokens_per_s": 1e4, "prefill_ms": {256: 10.0}}
    v = {"density": 0.5, "decode_us": 50.0, "tokens_per_s": 2e4, "prefill_ms": {256: 20.0}, "replace_linear_s": 8.0,
         "calibration": "hooks", "calibration_s": 0.5, "vs_dense": {"rel_err": 0.2},
         "vs_masked_reference": {"max_abs_diff": 1e-3, "rel_err": 2e-4}}
    res = {"dense": r, "variants": [v], "sparsity": 0.5, "full_model_layers": 32, "config": {"layers": 4},
           "mask": {"kept_share": 0.5, "kept_equal_dense": True, "row_magnitude_order": True},
           "decode": "CUDA graph", "prefill": "eager", "note": bench_llm.NOTE}
    text = bench_llm.table(res)
    row = next(line for line in text.splitlines() if line.startswith("50% weights, act 0.5"))
    assert "2.00x" in row and "0.500x" in row
    assert "2.00 s a decoder layer, ~64 s for all 32 layers" in text and "no LM head" in text


def test_table_shows_compiled_steps_and_their_failures():
    base = {"prefill_ms": {}, "tokens_per_s": 1e4, "compiled_vs_eager": {"rel_err": 1e-4}, "compiled_wall_s": 12.0}
    d = dict(base, decode_us=100.0, compiled_decode_us=80.0)
    ok = dict(base, density=1.0, decode_us=50.0, compiled_decode_us=40.0, replace_linear_s=1.0, calibration="none",
              calibration_s=0.0, vs_dense={"rel_err": 0.2})
    bad = {k: v for k, v in ok.items() if not k.startswith("compiled")}
    bad.update(density=0.5, compiled_error="Unsupported: graph break")
    res = {"dense": d, "variants": [ok, bad], "sparsity": 0.5, "full_model_layers": 32, "config": {"layers": 4},
           "decode": "CUDA graph", "prefill": "eager", "note": bench_llm.NOTE}
    text = bench_llm.table(res)
    assert "torch.compile(fullgraph=True) dense: 80.0 us/step (1.25x its eager step" in text
    assert "torch.compile(fullgraph=True) act 1: 40.0 us/step (1.25x its eager step, 2.00x compiled dense" in text
    assert "torch.compile(fullgraph=True) act 0.5: FAILED: Unsupported: graph break" in text
    assert "torch.compile" not in bench_llm.table(dict(res, dense={k: v for k, v in d.items() if "compiled" not in k}))


def test_compile_flag_parses():
    assert bench_llm.parse_args(["--compile"]).compile and not bench_llm.parse_args([]).compile


@gpu
def test_bench_compiles_the_sparse_model_with_fullgraph(tmp_path):
    out = tmp_path / "llm.json"
    rc = bench_llm.main(["--model", "qwen3-0.6b", "--layers", "1", "--context", "32", "--prefill", "none",
                         "--reps", "2", "--calib-tokens", "16", "--densities", "0.5", "--compile", "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    for r in (res["dense"], res["variants"][0]):
        assert "compiled_error" not in r, r.get("compiled_error")
        assert r["compiled_decode_us"] > 0 and r["compiled_graph"]
        assert r["compiled_vs_eager"]["rel_err"] < 1e-2


@gpu
def test_bench_runs_end_to_end_on_a_small_model(tmp_path):
    out = tmp_path / "llm.json"
    rc = bench_llm.main(["--model", "qwen3-0.6b", "--layers", "1", "--context", "32", "--prefill", "16",
                         "--reps", "2", "--prefill-reps", "1", "--calib-tokens", "16", "--densities", "1,0.5",
                         "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["device"] and res["command"].startswith("python -m dbsparse.bench llm") and res["dense"]["decode_us"] > 0
    assert res["mask"]["kept_equal_dense"] and res["mask"]["kept_share"] == pytest.approx(0.5, abs=0.01)
    d1, d05 = res["variants"]
    # q|k|v and gate|up stacked: qkv, o_proj, gate_up, down.
    assert d1["layers_replaced"] == 4 and d1["vs_masked_reference"]["rel_err"] < 1e-2
    assert d05["thresholds"]["thresholds_set"] == 4 and d05["vs_masked_reference"]["rel_err"] < 0.1
    assert d05["calibration"] == "dbsparse.nn.calibrate"

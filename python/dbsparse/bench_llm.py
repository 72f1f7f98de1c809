"""`python -m dbsparse.bench llm`: a Llama-architecture decoder (attention included; random weights,
no embedding and no LM head: the decoder layers on hidden states), dense against the same weights
after dbsparse.nn.replace_linear, in one process on one GPU: a decode step (batch 1, one token over
a KV cache of --context tokens) replayed from a CUDA graph, and eager prefill; at each activation
density, with the output checked against the dense model on the masked weights (and activations)."""
import argparse
import copy
import datetime
import inspect
import json
import shlex
import statistics
import sys
import time

import torch

from ._errors import UsageError
from . import _llama, _llm_check

DTYPES = ("f16", "bf16")
NOTE = "decoder layers and final norm only (no embedding, no LM head), random weights"


def _list(text, conv, name, ok, what):
    try:
        vals = [conv(v) for v in text.split(",") if v.strip()]
    except ValueError:
        vals = []
    if not vals or not all(ok(v) for v in vals):
        raise UsageError(f"--{name}: expected a comma-separated list of {what}, got {text!r}")
    return vals


def parser():
    ap = argparse.ArgumentParser(prog="python -m dbsparse.bench llm", description=__doc__)
    ap.add_argument("--model", default="llama-3.1-8b",
                    help=f"one of {', '.join(_llama.PRESETS)} (default llama-3.1-8b)")
    ap.add_argument("--layers", type=int, default=4, help="decoder layers (default 4)")
    ap.add_argument("--sparsity", type=float, default=0.5, help="share of each weight matrix pruned (default 0.5)")
    ap.add_argument("--densities", default="1,0.5,0.3", help="activation densities kept, in (0, 1] (default 1,0.5,0.3)")
    ap.add_argument("--context", type=int, default=512, help="KV-cache tokens a decode step attends to (default 512)")
    ap.add_argument("--prefill", default="256,2048", help="prefill lengths in tokens (default 256,2048)")
    ap.add_argument("--dtype", default="f16", help="f16 or bf16 (default f16)")
    ap.add_argument("--reps", type=int, default=50, help="timed samples of a decode step, each 10 replays (default 50)")
    ap.add_argument("--prefill-reps", type=int, default=5, help="timed prefill calls per length (default 5)")
    ap.add_argument("--calib-tokens", type=int, default=128,
                    help="tokens of hidden states for calibration (default 128)")
    ap.add_argument("--seed", type=int, default=0, help="weights, inputs and cache contents (default 0)")
    ap.add_argument("--no-graph", action="store_true", help="time the decode step eagerly, without a CUDA graph")
    ap.add_argument("--compile", action="store_true",
                    help="also time the decode step through torch.compile(fullgraph=True) (inductor), dense and "
                         "sparse alike, in the same CUDA graph replay (adds the compile time, ~10-60 s a model)")
    ap.add_argument("--no-stack", action="store_true",
                    help="replace_linear(stack=False): q, k, v and gate, up as separate sparse layers")
    ap.add_argument("--json", help="write every figure here")
    return ap


def parse_args(argv):
    """The options, checked: UsageError (naming the option) for a bad value."""
    a = parser().parse_args(argv)
    _llama.preset(a.model)
    if a.dtype not in DTYPES:
        raise UsageError(f"--dtype: f16 or bf16, got {a.dtype!r}")
    for name in ("layers", "context", "reps", "prefill_reps", "calib_tokens"):
        if getattr(a, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')}: at least 1, got {getattr(a, name)}")
    if not 0.0 <= a.sparsity < 1.0:
        raise UsageError(f"--sparsity: in [0, 1), got {a.sparsity}")
    a.densities = _list(a.densities, float, "densities", lambda d: 0.0 < d <= 1.0, "numbers in (0, 1]")
    a.prefill = [] if a.prefill.strip() in ("", "0", "none") else _list(
        a.prefill, int, "prefill", lambda n: n >= 1, "token counts >= 1 (or none)")
    return a


def _event_ms(fn, reps, batch):
    """Median ms of one fn() over `reps` samples of `batch` calls between CUDA events."""
    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(batch):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) / batch)
    return statistics.median(out)


def time_decode(model, a, x, pos, compiled=False):
    """(us per step, graph used, the step's output): warm-up calls on a side stream, capture, warm
    replays, then the median. Each replay rewrites the same cache slot with the same values.
    compiled: the step through torch.compile(fullgraph=True), so a graph break is an error."""
    step = lambda: model.decode(x, pos, a.context + 1)  # noqa: E731
    if compiled:
        step = torch.compile(step, fullgraph=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            out = step()
    torch.cuda.current_stream().wait_stream(side)
    fn, graph, why = step, None, ""
    if not a.no_graph:
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = step()
            fn = graph.replay
        except Exception as e:  # noqa: BLE001 - reported, then timed eagerly
            graph, why = None, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            print(f"  CUDA graph capture failed ({why}); timed eagerly", flush=True)
            torch.cuda.synchronize()
    for _ in range(20):
        fn()
    us = _event_ms(fn, a.reps, 10) * 1000
    if graph is None:
        out = step()
    torch.cuda.synchronize()
    return us, graph is not None, why, out.float().clone()


def time_prefill(model, a, xs):
    """{tokens: median ms} of eager prefill (causal, cache written) of each input."""
    res = {}
    for t, x in xs.items():
        model(x, write_cache=True)
        res[t] = _event_ms(lambda: model(x, write_cache=True), a.prefill_reps, 1)
    return res


def measure(model, a, inputs):
    """Decode and prefill figures of one model; the decode output kept for the checks."""
    model.allocate_cache(inputs["max_seq"], fill_seed=a.seed + 1)
    us, graph, why, out = time_decode(model, a, inputs["x"], inputs["pos"])
    r = {"decode_us": us, "tokens_per_s": 1e6 / us, "decode_graph": graph}
    if why:
        r["graph_error"] = why
    r["prefill_ms"] = time_prefill(model, a, inputs["prefill"])
    if a.compile:
        # The prefills above wrote the cache: the eager step's cache again, so both steps read the same.
        model.allocate_cache(inputs["max_seq"], fill_seed=a.seed + 1)
        r.update(time_compiled(model, a, inputs, out))
    return r, out


def time_compiled(model, a, inputs, eager_out):
    """The decode step through torch.compile(fullgraph=True): its time, the compile's wall time and
    its output against the eager step's; a failure is reported, not raised (the other figures stand)."""
    torch._dynamo.reset()  # each model compiles afresh: no recompile limit carried over
    t0 = time.perf_counter()
    try:
        us, graph, why, out = time_decode(model, a, inputs["x"], inputs["pos"], compiled=True)
    except Exception as e:  # noqa: BLE001 - the bench reports what failed
        msg = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        print(f"  torch.compile(fullgraph=True) failed: {msg}", flush=True)
        return {"compiled_error": msg}
    return {"compiled_decode_us": us, "compiled_graph": graph, "compiled_wall_s": time.perf_counter() - t0,
            "compiled_vs_eager": _llm_check.compare(out, eager_out)}


def _replace_kwargs(nn, a, density):
    kw = {"sparsity": a.sparsity}
    if "act_density" in inspect.signature(nn.SparseLinear.__init__).parameters:
        kw["act_density"] = density  # the plan's mapping chosen for the density it will see
    if a.no_stack:
        if "stack" not in inspect.signature(nn.replace_linear).parameters:
            raise UsageError("--no-stack: this dbsparse.nn.replace_linear does not stack layers")
        kw["stack"] = False
    return kw


def sparse_variant(nn, dense, a, density):
    """A deep copy of `dense` through replace_linear (timed; the plans told the density where
    SparseLinear takes act_density), not yet calibrated."""
    model = copy.deepcopy(dense)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    names = nn.replace_linear(model, **_replace_kwargs(nn, a, density))
    torch.cuda.synchronize()
    info = {"density": density, "replace_linear_s": time.perf_counter() - t0,
            "replace_kwargs": _replace_kwargs(nn, a, density),
            "layers_replaced": len(_llm_check.linear_layers(model, nn.SparseLinear)),
            "replaced": list(names) if isinstance(names, (list, tuple)) else None}
    return model, info


def calibrate(nn, model, batches, density):
    """Sets the activation thresholds for `density`: dbsparse.nn.calibrate where the package has it,
    else thresholds from a hooked calibration pass. Returns (how, seconds)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    if density >= 1.0:
        how = "none (every activation kept)"
    elif hasattr(nn, "calibrate"):
        nn.calibrate(model, batches, density=density)
        how = "dbsparse.nn.calibrate"
    else:
        _llm_check.hook_thresholds(model, batches, density, nn.SparseLinear)
        how = "forward pre-hooks: act_threshold = (1 - density) quantile of |x| (no dbsparse.nn.calibrate)"
    torch.cuda.synchronize()
    return how, time.perf_counter() - t0


def gpu_missing():
    """Why the bench cannot run here ('' when it can)."""
    if not torch.cuda.is_available():
        return "python -m dbsparse.bench llm needs a CUDA device: torch.cuda.is_available() is False"
    from . import device_available
    ok, why = device_available()
    return "" if ok else f"python -m dbsparse.bench llm needs a CUDA device: dbsparse says {why}"


def make_inputs(cfg, a, dtype):
    """Seeded hidden states: the decode token, each prefill, the calibration batch; the decode position."""
    g = torch.Generator(device="cuda").manual_seed(a.seed + 2)
    rnd = lambda t: torch.randn(1, t, cfg.hidden, device="cuda", dtype=dtype, generator=g)  # noqa: E731
    return {"x": rnd(1), "pos": torch.tensor([a.context], device="cuda"), "prefill": {t: rnd(t) for t in a.prefill},
            "calib": [rnd(a.calib_tokens)], "max_seq": max([a.context + 1, a.calib_tokens, *a.prefill])}


def _sparse_to_dense(nn, model, dense):
    """[(sparse layer, [(dense name, rows)])] for every SparseLinear of `model`, or (None, why)."""
    dense_mods = dict(dense.named_modules())
    out = []
    for name, m in _llm_check.linear_layers(model, nn.SparseLinear):
        parts = _llm_check.dense_parts(name, m.out_features, m.in_features, dense_mods)
        if parts is None:
            return None, f"{name}: no dense layer (or stacked parts) of its shape: correctness check skipped"
        out.append((m, parts))
    return out, ""


def masked_reference(nn, dense, model, dtype):
    """(the dense model on the pruned weights `model`'s sparse layers hold, the mask's report), or
    (None, why). The pruned weights: the layer's dense copy (`weight`) where it keeps one, else read
    back through the layer."""
    pairs, why = _sparse_to_dense(nn, model, dense)
    if pairs is None:
        return None, why
    dense_mods = dict(dense.named_modules())
    masked, reports = {}, []
    for m, parts in pairs:
        w = getattr(m, "weight", None)
        w = _llm_check.probe_weight(m, m.in_features, dtype, "cuda") if w is None else w.detach()
        for (n, _), pw in zip(parts, w.split([r for _, r in parts])):
            masked[n] = pw
            reports.append(_llm_check.mask_report(dense_mods[n].weight, pw))
    rep = {"kept_equal_dense": all(r["kept_equal_dense"] for r in reports),
           "row_magnitude_order": all(r["row_magnitude_order"] for r in reports),
           "kept_share": statistics.mean(r["kept_share"] for r in reports) if reports else 0.0}
    return _llm_check.reference_model(dense, masked), rep


def check_variant(nn, ref, model, a, inputs):
    """The variant's decode output against the masked reference with the variant's thresholds (a
    stacked layer's on each of its parts)."""
    pairs, _ = _sparse_to_dense(nn, model, ref)
    taus = [float(getattr(m, "act_threshold", 0.0) or 0.0) for m, _ in pairs]
    thresholds = {n: t for (m, parts), t in zip(pairs, taus) for n, _ in parts}
    hooks = _llm_check.mask_activations(ref, thresholds)
    try:
        ref.allocate_cache(inputs["max_seq"], fill_seed=a.seed + 1)
        out = ref.decode(inputs["x"], inputs["pos"], a.context + 1).float()
    finally:
        for h in hooks:
            h.remove()
    set_ = [t for t in taus if t > 0]
    return out, {"thresholds_set": len(set_), "mean_threshold": statistics.mean(set_) if set_ else 0.0}


def run(a, argv):
    """Every measurement; returns the results dict (printed as it goes)."""
    why = gpu_missing()
    if why:
        raise UsageError(why)
    from . import nn, __version__
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
    cfg = _llama.preset(a.model, a.layers)
    res = {"command": shlex.join(["python", "-m", "dbsparse.bench", "llm", *argv]), "argv": sys.argv,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "device": torch.cuda.get_device_name(), "torch": torch.__version__, "dbsparse": __version__,
           "model": a.model, "config": vars(cfg), "full_model_layers": _llama.PRESETS[a.model].layers,
           "dtype": a.dtype, "sparsity": a.sparsity, "context": a.context, "note": NOTE,
           "decode": "batch 1, one token, " + ("eager" if a.no_graph else "CUDA graph replay"),
           "prefill": "eager, causal, KV cache written", "variants": []}
    print(f"{a.model}: {a.layers} layers, {a.dtype}, {NOTE}; {res['device']}, torch {torch.__version__}", flush=True)
    with torch.no_grad():
        dense = _llama.Decoder(cfg, device="cuda", dtype=dtype, seed=a.seed).eval()
        inputs = make_inputs(cfg, a, dtype)
        res["dense"], dense_out = measure(dense, a, inputs)
        print(f"dense: {res['dense']['decode_us']:.1f} us/step", flush=True)
        ref = None
        for d in a.densities:
            model, info = sparse_variant(nn, dense, a, d)
            if ref is None:
                ref, rep = masked_reference(nn, dense, model, dtype)
                res["mask"] = rep if ref is not None else {"skipped": rep}
            info["calibration"], info["calibration_s"] = calibrate(nn, model, inputs["calib"], d)
            r, out = measure(model, a, inputs)
            info.update(r)
            info["vs_dense"] = _llm_check.compare(out, dense_out)
            if ref is not None:
                ref_out, info["thresholds"] = check_variant(nn, ref, model, a, inputs)
                info["vs_masked_reference"] = _llm_check.compare(out, ref_out)
            res["variants"].append(info)
            print(f"density {d:g}: {info['decode_us']:.1f} us/step, replace_linear {info['replace_linear_s']:.2f} s",
                  flush=True)
            del model
            torch.cuda.empty_cache()
    return res



def _ratio(base, t):
    return base / t if t else float("nan")


def table(res):
    """The readable table: one row per variant, times and x dense (dense time / this time: above 1
    is faster), then the planning, calibration and correctness lines."""
    d = res["dense"]
    lens = list(d["prefill_ms"])
    head = f"{'variant':<22}{'decode us/step':>15}{'tokens/s':>10}{'x dense':>9}"
    head += "".join(f"{f'prefill {t} ms':>18}{'x dense':>9}" for t in lens)
    lines = [head]

    def row(label, r):
        s = f"{label:<22}{r['decode_us']:>15.1f}{r['tokens_per_s']:>10.0f}"
        s += f"{_ratio(d['decode_us'], r['decode_us']):>8.2f}x"
        for t in lens:
            s += f"{r['prefill_ms'][t]:>18.2f}{_ratio(d['prefill_ms'][t], r['prefill_ms'][t]):>8.3f}x"
        return s

    lines.append(row("dense", d))
    for v in res["variants"]:
        lines.append(row(f"{res['sparsity']:.0%} weights, act {v['density']:g}", v))
    full = res["full_model_layers"]
    for v in res["variants"]:
        per = v["replace_linear_s"] / res["config"]["layers"]
        lines.append(f"act {v['density']:g}: replace_linear {v['replace_linear_s']:.2f} s "
                     f"({v.get('layers_replaced', '?')} sparse layers; {per:.2f} s a decoder layer, "
                     f"~{per * full:.0f} s for all {full} layers); calibration {v['calibration_s']:.2f} s: "
                     f"{v['calibration']}")
    m = res.get("mask", {})
    if "skipped" in m:
        lines.append(f"correctness: {m['skipped']}")
    elif m:
        lines.append(f"masked weights: kept share {m['kept_share']:.4f}, kept entries equal the dense weights: "
                     f"{'yes' if m['kept_equal_dense'] else 'NO'}, each row kept its largest magnitudes: "
                     f"{'yes' if m['row_magnitude_order'] else 'no'}")
    for v in res["variants"]:
        c, o = v.get("vs_masked_reference"), v["vs_dense"]
        s = f"act {v['density']:g}: decode output "
        if c:
            s += (f"vs dense on the masked weights{' and activations' if v['density'] < 1 else ''}: "
                  f"max abs diff {c['max_abs_diff']:.3g}, rel err {c['rel_err']:.3g}; ")
        lines.append(s + f"vs the unpruned dense model: rel err {o['rel_err']:.3g}")
    lines += _compiled_lines(res)
    graphs = [r.get("graph_error") for r in (d, *res["variants"]) if r.get("graph_error")]
    lines.append(f"decode: {res['decode']}" + (f" (capture failed, timed eagerly: {graphs[0]})" if graphs else "")
                 + f"; prefill: {res['prefill']}; {res['note']}")
    return "\n".join(lines)


def _compiled_lines(res):
    """--compile: each model's compiled step against its own eager step and the compiled dense one."""
    d = res["dense"]
    if "compiled_decode_us" not in d and "compiled_error" not in d:
        return []
    lines = []
    for label, r in [("dense", d)] + [(f"act {v['density']:g}", v) for v in res["variants"]]:
        if "compiled_error" in r:
            lines.append(f"torch.compile(fullgraph=True) {label}: FAILED: {r['compiled_error']}")
            continue
        s = (f"torch.compile(fullgraph=True) {label}: {r['compiled_decode_us']:.1f} us/step "
             f"({_ratio(r['decode_us'], r['compiled_decode_us']):.2f}x its eager step")
        if "compiled_decode_us" in d:
            s += f", {_ratio(d['compiled_decode_us'], r['compiled_decode_us']):.2f}x compiled dense"
        s += (f"; compile {r['compiled_wall_s']:.0f} s; output vs eager rel err "
              f"{r['compiled_vs_eager']['rel_err']:.3g})")
        lines.append(s)
    return lines


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        a = parse_args(argv)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    why = gpu_missing()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 77
    res = run(a, argv)
    print(table(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compares two `dbsparse bench --json` files of one op (old vs new, same run, same card).

  scripts/bench_ab.py OLD.json NEW.json [--tol 0.05]

Rows are matched by (matrix, precision, impl, key, density, n); prints new/old time per row, the
geomean and the worst ratio, and exits 1 when a matched dbsparse row's key differs (a behaviour
change) or when no row matches.
"""
import argparse
import json
import math
import sys


def flatten(d):
    """(identity, time, key) per timed thing: SpMV/SpMSpV rows carry time_us; SpMM rows a list of
    impls with us; BFS rows a list of impls with gteps_geomean (time ~ 1/GTEPS); SpGEMM rows
    dbsparse_steady_ms and cusparse_ms."""
    for r in d.get("results", []):
        base = tuple(str(r.get(k, "")) for k in ("matrix", "graph", "precision", "density", "n_cols", "n", "x_density"))
        key = r.get("key") or r.get("kernel") or r.get("auto_path")
        if "time_us" in r:
            yield base + (str(r.get("impl", "")),), r["time_us"], key
        for i in r.get("impls", []) if isinstance(r.get("impls"), list) else []:
            if isinstance(i, dict) and i.get("us"):
                yield base + (str(i.get("impl", "")),), i["us"], key
        for i in r.get("results", []) if isinstance(r.get("results"), list) else []:
            if isinstance(i, dict) and i.get("gteps_geomean"):
                yield base + (str(i.get("impl", "")),), 1.0 / i["gteps_geomean"], key
        for f in ("dbsparse_steady_ms", "cusparse_ms"):
            if r.get(f):
                yield base + (f,), r[f], key


def rows(path):
    with open(path) as f:
        d = json.load(f)
    return d, {ident: (t, key) for ident, t, key in flatten(d)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--tol", type=float, default=0.05, help="ratio band reported as noise (default 0.05)")
    a = ap.parse_args()
    dold, old = rows(a.old)
    dnew, new = rows(a.new)
    ratios, key_changes = [], []
    for ident, (tn, kn) in new.items():
        if ident not in old:
            continue
        to, ko = old[ident]
        if ko != kn:
            key_changes.append((ident, ko, kn))
        ratios.append((tn / to, ident))
    if not ratios:
        print(f"{a.new}: no row matches {a.old}")
        return 1
    dev = dnew.get("device", {})
    name = dev.get("name") if isinstance(dev, dict) else dev
    gm = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
    worst = max(ratios)
    best = min(ratios)
    outside = sum(1 for r, _ in ratios if abs(r - 1) > a.tol)
    print(f"{dnew.get('op', '?')} on {name}: {len(ratios)} rows, new/old time geomean {gm:.3f}, "
          f"worst {worst[0]:.3f} ({' '.join(x for x in worst[1] if x)}), best {best[0]:.3f}, "
          f"{outside} outside +-{a.tol:.0%}")
    # Baselines (cuSPARSE, cuBLAS) did not change between the two binaries: their spread is the noise.
    for label, pick in (("dbsparse rows", lambda i: "cusparse" not in " ".join(i)),
                        ("baseline rows (noise)", lambda i: "cusparse" in " ".join(i))):
        sub = [r for r, i in ratios if pick(i)]
        if sub:
            g = math.exp(sum(math.log(r) for r in sub) / len(sub))
            print(f"  {label}: {len(sub)}, geomean {g:.3f}, min {min(sub):.3f}, max {max(sub):.3f}")
    for ident, ko, kn in key_changes:
        print(f"  key changed: {' '.join(x for x in ident if x)}: {ko} -> {kn}")
    return 1 if key_changes else 0


if __name__ == "__main__":
    sys.exit(main())

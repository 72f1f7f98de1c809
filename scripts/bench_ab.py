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


def rows(path):
    with open(path) as f:
        d = json.load(f)
    out = {}
    for r in d.get("results", []):
        ident = tuple(str(r.get(k, "")) for k in ("matrix", "precision", "impl", "density", "n_cols", "n", "x_density"))
        out[ident] = r
    return d, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--tol", type=float, default=0.05, help="ratio band reported as noise (default 0.05)")
    a = ap.parse_args()
    dold, old = rows(a.old)
    dnew, new = rows(a.new)
    ratios, key_changes = [], []
    for ident, rn in new.items():
        ro = old.get(ident)
        if not ro or not ro.get("time_us") or not rn.get("time_us"):
            continue
        if ro.get("key") != rn.get("key"):
            key_changes.append((ident, ro.get("key"), rn.get("key")))
        ratios.append((rn["time_us"] / ro["time_us"], ident))
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
    for ident, ko, kn in key_changes:
        print(f"  key changed: {' '.join(x for x in ident if x)}: {ko} -> {kn}")
    return 1 if key_changes else 0


if __name__ == "__main__":
    sys.exit(main())

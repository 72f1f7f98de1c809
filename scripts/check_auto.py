#!/usr/bin/env python3
"""One table of auto against the best forced path across several `dbsparse bench OP --check-auto
--json F` files (several ops, or one op on several suites).

  scripts/check_auto.py A.json B.json ... [--worst 20] [--within 0.95]

Per (device, op) and over all: pairs, share with ratio >= --within, worst pair, geomean of the
ratios (ratio = best forced us / auto us, as the bench writes it). Then the --worst lowest pairs
over every file. Exits 1 when a file has no "check_auto" section (a run without --check-auto).
"""
import argparse
import json
import math
import sys


def load(paths):
    pairs = []
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        if "check_auto" not in d:
            sys.exit(f"{path}: no \"check_auto\" section: run dbsparse bench with --check-auto --json")
        device = d.get("device", {}).get("name", "?")
        for p in d["check_auto"]["pairs"]:
            pairs.append(dict(p, device=device, file=path))
    return pairs


def line(label, ps, within):
    if not ps:
        return f"{label:<40} {0:>6}"
    ratios = [p["ratio"] for p in ps]
    ok = sum(r >= within for r in ratios)
    worst = min(ps, key=lambda p: p["ratio"])
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return (f"{label:<40} {len(ps):>6} {ok:>6} {100.0 * ok / len(ps):>6.1f}% {worst['ratio']:>7.3f} {geo:>7.3f}  "
            f"{worst['op']} {worst['matrix']} {worst['setting']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--worst", type=int, default=20, help="lowest pairs listed (default 20)")
    ap.add_argument("--within", type=float, default=0.95, help="the share's threshold (default 0.95)")
    a = ap.parse_args()
    pairs = load(a.files)
    print(f"{'device / op':<40} {'pairs':>6} {'ok':>6} {'share':>7} {'worst':>7} {'geomean':>7}  worst pair")
    groups = sorted({(p["device"], p["op"]) for p in pairs})
    for dev, op in groups:
        print(line(f"{dev[:30]} / {op}", [p for p in pairs if p["device"] == dev and p["op"] == op], a.within))
    print(line("all", pairs, a.within))
    print(f"\n{a.worst} lowest ratios (best forced us / auto us):")
    print(f"{'ratio':>7} {'op':<7} {'matrix':<36} {'setting':<14} {'auto us':>9} {'auto took':<16} "
          f"{'best forced':<24} {'best us':>9}")
    for p in sorted(pairs, key=lambda p: p["ratio"])[: a.worst]:
        print(f"{p['ratio']:>7.3f} {p['op']:<7} {p['matrix'][:36]:<36} {p['setting']:<14} {p['auto_us']:>9.1f} "
              f"{p['auto_choice'][:16]:<16} {p['best_forced'][:24]:<24} {p['best_forced_us']:>9.1f}")


if __name__ == "__main__":
    main()

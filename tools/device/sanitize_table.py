#!/usr/bin/env python3
"""The sanitizer sweep so far, a row a tool ("tool x test count x errors").

    tools/device/sanitize_table.py SUMMARY... [--left PLAN]

SUMMARY: cases-summary.txt files of tools/device/hardening_run.sh, oldest first. PLAN: the output
of `SAN_DRY=1 ... hardening_run.sh sanitize` with the same summaries as SAN_DONE (what is left).
A case counts as clean for a tool once the case, or every piece k/n of one count n, passed with
rc 0; a piece that reported errors (rc 9) and passed clean in a later summary counts as fixed.
"""
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^(\w+) (\S+) rc=(\d+) ")
PIECE = re.compile(r"^(.*)@(\d+)/(\d+)$")


def base(piece):
    m = PIECE.match(piece)
    return m.group(1) if m else piece


def main(argv):
    if "--left" in argv:
        i = argv.index("--left")
        plan, files = argv[i + 1], argv[:i] + argv[i + 2:]
    else:
        plan, files = None, argv
    if not files:
        sys.exit(__doc__)
    clean = defaultdict(set)    # tool -> pieces (name as run) passed with rc 0
    errors = defaultdict(dict)  # tool -> piece -> the summary line that reported errors
    cut = defaultdict(set)      # tool -> pieces cut by a timeout (rc 124)
    for f in files:
        with open(f) as fh:
            for line in fh:
                m = LINE.match(line)
                if not m or m.group(1) == "plain":
                    continue
                tool, piece, rc = m.group(1), m.group(2), int(m.group(3))
                if rc == 0 and " 1 passed" in line:
                    clean[tool].add(piece)
                elif rc == 9:
                    errors[tool][piece] = line.strip()
                elif rc == 124:
                    cut[tool].add(piece)
    left = defaultdict(set)
    if plan:
        with open(plan) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 3 and parts[0].isdigit():
                    left[parts[1]].add(parts[2])
    tools = sorted(set(clean) | set(errors) | set(left))
    clean_cases = {}
    print("| tool | cases clean | pieces passed clean | reported errors (fixed since) | pieces left |")
    print("|---|---|---|---|---|")
    for t in tools:
        done_cases = defaultdict(lambda: defaultdict(set))
        whole = set()
        for p in clean[t]:
            m = PIECE.match(p)
            if m:
                done_cases[m.group(1)][int(m.group(3))].add(int(m.group(2)))
            else:
                whole.add(p)
        left_cases = {base(p) for p in left[t]}
        cases = set(whole)
        for name, by_n in done_cases.items():
            if any(len(ks) == n for n, ks in by_n.items()):
                cases.add(name)
        cases -= left_cases
        fixed = sum(1 for p in errors[t] if base(p) in cases)
        print(f"| {t} | {len(cases)} | {len(clean[t])} | {len(errors[t])} ({fixed}) | {len(left[t])} "
              f"({len(left_cases)} cases) |")
        clean_cases[t] = cases
    for t in tools:
        for p, line in sorted(errors[t].items()):
            state = "clean since" if base(p) in clean_cases[t] else "NOT CLEAN YET"
            print(f"- {t} {p}: {state}; reported: {line[line.find('rc='):][:110]}")


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
"""Upper bound on what per-density-bucket th3 would buy over one th3 per matrix, from a dbtune DB.

Every spmspv trial stores its time per x density (0.1, 0.01, 0.001) in `detail`. For each matrix
and each format (th0, th1, th2) tried, the per-bucket optimum takes the fastest th3 at each density
separately; the single-config optimum is the best geomean of one config. Both are minima over the
search's noisy trials, so the ratio overstates the gain.
  python3 tools/analysis/per_bucket_gain.py DB   (e.g. gunzip -c docs/bench/2026-11-29-dbtune-full.db.gz > /tmp/f.db)
"""
import sqlite3, json, math, re, collections, sys
db=sqlite3.connect(sys.argv[1])
names={fp:n for fp,n in db.execute("select fingerprint,name from matrices")}
gm=lambda xs: math.exp(sum(map(math.log,xs))/len(xs))
allr=[];gen=[]
for fp,n in names.items():
    groups=collections.defaultdict(lambda: collections.defaultdict(list))
    single=[]
    for p,d in db.execute("select params_json,detail from trials where matrix_fp=? and op='spmspv' and status='ok' and bucket=''",(fp,)):
        c=json.loads(p); t=dict((float(a),float(b)) for a,b in re.findall(r"(0\.\d+): ([\d.]+) us",d))
        if len(t)!=3: continue
        g=(c['th0'],c['th1'],c['th2'])
        for k,v in t.items(): groups[g][k].append(v)
        single.append((gm(list(t.values())),g,c['th3']))
    if not single: continue
    best_single=min(single)[0]
    best_bucket=min(gm([min(v) for v in gd.values()]) for gd in groups.values() if len(gd)==3)
    r=best_single/best_bucket; allr.append(r)
    if ':' in n: gen.append(r)
    print(f"{n[:34]:34} single {best_single:7.1f} per-bucket th3 {best_bucket:7.1f} gain {r:.3f}")
print("geomean gain", gm(allr), "generated", gm(gen))

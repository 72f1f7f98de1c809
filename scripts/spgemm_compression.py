#!/usr/bin/env python3
"""How much A^2 accumulates, per matrix: products (IP), C's entries, their ratio (the compression
rate: 1 means no product merges with another), the share of rows and of products in rows that
barely merge (ratio < --low), and in hub rows (more than --hub products). Pattern only (every
value 1). The structure behind issue 61's accumulator choice (docs/decisions/spgemm-low-accumulation.md).
--merge K adds where the merge path's rows are (SpgemmConfig::merge2 = K: at most K A entries, IP
in group 2, [512, 8192); "dense" where B is no wider than group 2's table, whose rows narrow_dense
keeps in a dense table); --global adds what group 3's rows (IP >= 8192) cost in global tables
under the default config (f32 bytes; a table at least as wide as B is dense).

    python3 scripts/spgemm_compression.py [FILES...] [--merge 8] [--global]
    (default files: the public matrices and ../shared/matrices)
Needs numpy and scipy."""
import argparse
import glob
import gzip
import os
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--low", type=float, default=1.3, help="a row barely merges below this ratio (default 1.3)")
    ap.add_argument("--hub", type=float, default=10000, help="a hub row has more products (default 10000)")
    ap.add_argument("--max-nnz", type=float, default=3e6, help="skip larger matrices (default 3e6)")
    ap.add_argument("--merge", type=int, default=0, metavar="K",
                    help="also the share of products in rows of at most K A entries with IP in [512, 8192)")
    ap.add_argument("--global", dest="glob", action="store_true",
                    help="also group 3's rows (IP >= 8192): count, IP and nnz(C) shares, global table MB (f32), "
                         "dense share, IP / nnz(C)")
    a = ap.parse_args(argv)
    try:
        import numpy as np
        import scipy.io
    except ImportError as e:
        print(f"error: {e.name} is needed (pip install numpy scipy)", file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    files = a.files or (sorted(glob.glob(os.path.expanduser("~/.cache/dbsparse/public-matrices/*.mtx.gz")))
                        + sorted(glob.glob(os.path.join(here, "..", "..", "shared", "matrices", "*.mtx"))))
    head = (f"{'matrix':<24}{'rows':>9}{'nnz':>10}{'IP':>12}{'nnz(C)':>12}{'ratio':>7}{'low rows':>9}"
            f"{'low IP':>8}{'hubs':>6}{'hub IP':>8}{'max IP':>8}")
    if a.merge:
        head += f"{'merge IP':>9}"
    if a.glob:
        head += f"{'g3 rows':>8}{'g3 IP':>7}{'g3 C':>6}{'g3 MB':>8}{'dense':>6}{'g3 ratio':>9}"
    print(head)
    for p in files:
        try:
            with (gzip.open(p) if p.endswith(".gz") else open(p, "rb")) as fh:
                m = scipy.io.mmread(fh)
        except (OSError, ValueError) as e:
            print(f"{os.path.basename(p)}: not read ({e})", file=sys.stderr)
            continue
        m = scipy.sparse.csr_matrix(m)
        if m.shape[0] != m.shape[1] or m.nnz > a.max_nnz:
            continue
        m.data = np.ones_like(m.data, dtype=np.float64)
        lens = np.diff(m.indptr).astype(np.float64)
        ip = m @ lens  # a row's products: the lengths of the B rows its entries name
        nc = np.diff((m @ m).indptr)
        ratio = np.where(nc > 0, ip / np.maximum(nc, 1), 1.0)
        low, hub = ratio < a.low, ip > a.hub
        tot = max(ip.sum(), 1.0)
        line = (f"{os.path.basename(p)[:23]:<24}{m.shape[0]:>9}{m.nnz:>10}{ip.sum():>12.0f}{nc.sum():>12}"
                f"{ip.sum() / max(nc.sum(), 1):>7.2f}{low.mean():>9.2f}{ip[low].sum() / tot:>8.2f}{int(hub.sum()):>6}"
                f"{ip[hub].sum() / tot:>8.2f}{ip.max():>8.0f}")
        if a.merge:
            k = np.diff(m.indptr)
            merged = (k <= a.merge) & (ip >= 512) & (ip < 8192)
            # Where B is no wider than group 2's table (16384), narrow_dense keeps those rows dense: no merge.
            line += f"{ip[merged].sum() / tot:>9.2f}" if m.shape[1] > 16384 else f"{'dense':>9}"
        if a.glob:
            g3 = ip >= 8192
            width = m.shape[1]
            slots = np.array([1 << int(np.ceil(np.log2(max(2 * min(x, width), 1)))) for x in ip[g3]], dtype=np.float64)
            dense = float((slots >= width).mean()) if g3.any() else 0.0
            line += (f"{int(g3.sum()):>8}{ip[g3].sum() / tot:>7.2f}{nc[g3].sum() / max(nc.sum(), 1):>6.2f}"
                     f"{slots.sum() * 8 / 1e6:>8.1f}{dense:>6.2f}{ip[g3].sum() / max(nc[g3].sum(), 1):>9.2f}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

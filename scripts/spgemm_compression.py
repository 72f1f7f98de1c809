#!/usr/bin/env python3
"""How much A^2 accumulates, per matrix: products (IP), C's entries, their ratio (the compression
rate: 1 means no product merges with another), the share of rows and of products in rows that
barely merge (ratio < --low), and in hub rows (more than --hub products). Pattern only (every
value 1). The structure behind issue 61's accumulator choice (docs/decisions/spgemm-low-accumulation.md).

    python3 scripts/spgemm_compression.py [FILES...]   (default: the public matrices and ../shared/matrices)
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
    print(f"{'matrix':<24}{'rows':>9}{'nnz':>10}{'IP':>12}{'nnz(C)':>12}{'ratio':>7}{'low rows':>9}"
          f"{'low IP':>8}{'hubs':>6}{'hub IP':>8}{'max IP':>8}")
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
        print(f"{os.path.basename(p)[:23]:<24}{m.shape[0]:>9}{m.nnz:>10}{ip.sum():>12.0f}{nc.sum():>12}"
              f"{ip.sum() / max(nc.sum(), 1):>7.2f}{low.mean():>9.2f}{ip[low].sum() / tot:>8.2f}{int(hub.sum()):>6}"
              f"{ip[hub].sum() / tot:>8.2f}{ip.max():>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

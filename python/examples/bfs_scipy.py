"""BFS on a SciPy graph with dbsparse, checked against scipy.sparse.csgraph. Run: python bfs_scipy.py."""
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csg

import dbsparse


def main(n=200_000, degree=8):
    g = sp.random(n, n, density=degree / n, format="csr", dtype=np.float32, random_state=np.random.default_rng(3))
    g = ((g + g.T) > 0).astype(np.float32).tocsr()
    plan = dbsparse.plan_bfs(g)              # converted once; reuse for every source
    levels = plan(0).cpu().numpy()           # a torch tensor when torch is installed
    t0 = time.perf_counter()
    dist = csg.shortest_path(g, unweighted=True, indices=0)
    t_scipy = time.perf_counter() - t0
    ref = np.where(np.isinf(dist), -1, dist).astype(np.int32)
    assert (levels == ref).all()
    import torch
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for s in range(10):
        plan(s)
    torch.cuda.synchronize()
    t_gpu = (time.perf_counter() - t0) / 10
    print(f"{n} vertices, {g.nnz} edges, {levels.max() + 1} levels: dbsparse {t_gpu * 1e3:.2f} ms a search, "
          f"SciPy {t_scipy * 1e3:.1f} ms; levels equal")


if __name__ == "__main__":
    main()

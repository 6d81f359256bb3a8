"""Where the time of a distributed factorization goes, per lab: kernels (LAPACK panel
factorizations, BLAS GEMM/TRSM), communication waits, row swaps and Python overhead.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/profile_linalg.py \
        [--n 4096] [--nb 64 128] [--grid 1 2] [--ops solve cholesky qr matmul]

On every lab the kernels the factorization modules call (``gemm``, LAPACK ``getrf``/
``potrf``/``geqrf``, the panel gather, the row moves, the broadcast waits) are wrapped
with timers for one run; the rest of the wall time is Python overhead and copies. The
wrapped names are module attributes of ``factor.py``/``householder.py``, so the
profile sees exactly the calls the factorizations make. Printed: seconds per
category per lab and the fraction of the wall time.
"""
from __future__ import annotations

import os
import sys

if any(v in os.environ for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import argparse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import spmdlab
from spmdlab import spmd_run


def _lab_profile(op: str, n: int, nb: int, grid):
    """On a lab: run ``op`` once warm, then once with timers; seconds per category."""
    import importlib
    import time
    from collections import defaultdict

    import numpy as np

    from spmdlab import codistributed, codistributor2dbc, labBarrier
    from spmdlab.arrays import blas

    agrid = importlib.import_module("spmdlab.arrays.grid")

    from spmdlab.arrays.linalg import factor, householder
    try:
        panel = importlib.import_module("spmdlab.arrays.linalg.panel")
    except ImportError:
        panel = factor

    acc: dict = defaultdict(float)

    def timed(name, f):
        def g(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                acc[name] += time.perf_counter() - t
        return g

    c = codistributor2dbc(grid, nb).complete((n, n), spmdlab.numlabs())
    rows, cols = (c.globalIndices(d, spmdlab.labindex(), spmdlab.numlabs()) for d in (1, 2))
    i, j = rows[:, None], cols[None, :]
    if op == "cholesky":
        local = np.cos(0.37 * (i + j)) + np.where(i == j, float(n), 0.0)
    else:
        local = np.sin(0.61 * i + 1.37 * j + 1e-3 * i * j) + np.where(i == j, 2.0, 0.0)
    A = codistributed.build(np.ascontiguousarray(local), c)
    fn = {"solve": lambda: np.linalg.solve(A, np.ones(n)),
          "cholesky": lambda: np.linalg.cholesky(A),
          "qr": lambda: np.linalg.qr(A, mode="r"),
          "matmul": lambda: A @ A}[op]
    fn()
    patches = [(factor, "gemm"), (householder, "gemm"), (factor, "move_rows"),
               (factor, "_panel_gather"), (panel, "lu_panel"), (panel, "chol_panel"),
               (householder, "geqrf"), (householder, "larft"), (factor, "trsm")]
    saved = [(m, nm, getattr(m, nm)) for m, nm in patches if hasattr(m, nm)]
    for m, nm, f in saved:
        setattr(m, nm, timed(f"{m.__name__.rsplit('.', 1)[-1]}.{nm}", f))
    fin, bc = agrid.ProcessGrid.finish, agrid.ProcessGrid._bcast
    agrid.ProcessGrid.finish = timed("wait panel (finish)", fin)
    agrid.ProcessGrid._bcast = timed("bcast (blocking)", bc)
    allr = agrid.ProcessGrid.allreduce
    agrid.ProcessGrid.allreduce = timed("allreduce", allr)
    try:
        labBarrier()
        t = time.perf_counter()
        fn()
        labBarrier()
        wall = time.perf_counter() - t
    finally:
        for m, nm, f in saved:
            setattr(m, nm, f)
        agrid.ProcessGrid.finish, agrid.ProcessGrid._bcast, agrid.ProcessGrid.allreduce = fin, bc, allr
    del blas
    return wall, dict(acc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--nb", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--grid", type=int, nargs=2, default=[1, 2])
    ap.add_argument("--labs", type=int, default=2)
    ap.add_argument("--ops", nargs="+", default=["solve", "cholesky", "qr"])
    args = ap.parse_args()
    with spmdlab.Pool(args.labs) as pool:
        for op in args.ops:
            for nb in args.nb:
                res = list(spmd_run(_lab_profile, op, args.n, nb, list(args.grid), pool=pool))
                print(f"\n{op} N={args.n} nb={nb} grid {args.grid}; load {os.getloadavg()[0]:.1f}")
                for lab, (wall, acc) in enumerate(res, 1):
                    parts = ", ".join(f"{k} {v:.3f} s ({v / wall:.0%})" for k, v in sorted(acc.items()))
                    # nested wrappers (trsm calls gemm) make the sum an upper bound
                    print(f"  lab {lab}: wall {wall:.3f} s: {parts}", flush=True)


if __name__ == "__main__":
    main()

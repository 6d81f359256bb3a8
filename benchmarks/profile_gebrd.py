"""Issue 27: where the time of the one-stage bidiagonal reduction (``bidiag.gebrd``,
PDGEBRD) goes on each lab, and the panel width it is fastest with.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/profile_gebrd.py \
        [--labs 2] [--n 2048] [--nb 64] [--panels 8 16 32 64] [--rounds 4] [--keep]

On the labs (one spmd block, the matrix made there in the 2dbc layout of block ``nb``
on the default grid), ``gebrd`` runs in turns with each panel width (``bidiag.PANEL``
set before the call) for ``rounds`` rounds; each run is timed on lab 1's clock between
barriers, with the time every lab spends inside the sums over the labs (the
all-gathers of ``bidiag._sum``: latency plus waiting for the slower lab). Printed per
width: the fastest and the median run and the largest lab's sum time of the fastest
round. Minimums are shown because the machine is shared: a run another process slowed
is longer, never shorter. ``--keep`` keeps the reflectors (the full SVD's path).
"""
from __future__ import annotations

import os
import sys

if __name__ == "__main__" and any(v in os.environ for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import argparse
import statistics

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import spmdlab
from spmdlab import spmd_run


def _lab_runs(n: int, nb: int, panels: list, rounds: int, keep: bool):
    """On a lab: ``{panel: [(seconds, seconds in the sums), ...]}``."""
    import time

    import numpy as np

    from spmdlab import codistributed, codistributor2dbc, getCodistributor, getLocalPart, labBarrier
    from spmdlab.arrays.linalg import bidiag
    from spmdlab.arrays.linalg.grid import ProcessGrid

    D = codistributed(np.random.default_rng(1).standard_normal((n, n)), codistributor2dbc(None, nb))
    g = ProcessGrid(getCodistributor(D)).connect("profile_gebrd")
    plain_sum, default = bidiag._sum, bidiag.PANEL
    inside = [0.0]

    def timed_sum(*args, **kwargs):
        t = time.perf_counter()
        try:
            return plain_sum(*args, **kwargs)
        finally:
            inside[0] += time.perf_counter() - t

    out: dict = {p: [] for p in panels}
    bidiag._sum = timed_sum
    try:
        for _ in range(rounds):
            for p in panels:
                bidiag.PANEL, inside[0] = p, 0.0
                a = np.array(getLocalPart(D), copy=True)
                labBarrier()
                t = time.perf_counter()
                bidiag.gebrd(a, g, "profile_gebrd", keep=keep)
                labBarrier()
                out[p].append((time.perf_counter() - t, inside[0]))
    finally:
        bidiag._sum, bidiag.PANEL = plain_sum, default
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labs", type=int, default=2)
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--nb", type=int, default=64)
    ap.add_argument("--panels", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--keep", action="store_true", help="keep the reflectors (the full SVD's path)")
    args = ap.parse_args()
    with spmdlab.Pool(args.labs) as pool:
        print(f"\n### gebrd, N={args.n}, nb={args.nb}, {args.labs} labs, keep={args.keep}; load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        res = list(spmd_run(_lab_runs, args.n, args.nb, args.panels, args.rounds, args.keep, pool=pool))
        print("| panel | fastest | median | in the sums (fastest round, slowest lab) |")
        print("|---|---|---|---|")
        for p in args.panels:
            times = [t for t, _ in res[0][p]]
            best = times.index(min(times))
            sums = max(r[p][best][1] for r in res)
            print(f"| {p} | {min(times):.2f} s | {statistics.median(times):.2f} s | {sums:.2f} s |")
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

"""Process grids on some labs (issue 24, pbdBASE's contexts) timed beside their baselines
in the same run, in turns.

    python benchmarks/bench_grids.py [--labs 4] [--n 2000] [--repeat 5]

Rows (medians; each timed from a barrier of the whole block until every lab is done):
- ``redistribute`` of an n x n float64 matrix from a 2x1 grid on labs 1, 2 to a 1x2 grid
  on labs 3, 4 (blocks 64 -> (32, 128)), against ``redistribute`` of the same matrix
  between two layouts of the whole pool (2dbc 2x2 -> 1d by columns), and against the
  floor of any grid-to-grid move: labs 1 and 2 each send their whole part, as one
  contiguous message, to labs 3 and 4 (raw mpi4py ``Isend``/``Irecv``, no packing),
  and against the path before issue 24's last step (the pool's ``redistribute`` of the
  grid's pool-wide view, which went through the general ``reshard``: element lists
  packed and unpacked by fancy indexing, 3.1-4x the pool's redistribute);
- an operation on an array of a 2x1 sub-grid (2 labs; the other labs idle) against the
  same operation on the full 2x2 grid: ``D * 2 + 1``, ``D @ D`` (SUMMA), ``lu(D)``;
- the same operations on a "sub-grid" of every lab in another order (so every operation
  goes through ``SubgridArray`` and the grid's communicator) against the full grid: the
  cost of the wrapper itself.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import spmdlab

from timing import barrier_median


def on_labs(n: int, repeat: int) -> list:
    """Runs on every lab: rows of ``(name, ours, baseline)`` medians in seconds."""

    import numpy as np

    from spmdlab import codistributed, codistributor1d, codistributor2dbc, numlabs, redistribute
    from spmdlab.arrays.subgrid import _to_pool
    from spmdlab.lab import comm as _comm
    from spmdlab.layouts.grids import pool_blocks

    c = _comm.block()
    P = numlabs()

    def timed(f) -> float:
        return barrier_median(c.Barrier, f, repeat, warmup=1)

    A = np.random.default_rng(0).random((n, n)) + n * np.eye(n)
    full = spmdlab.grid(2, P // 2)
    sub1 = spmdlab.grid(2, 1, labs=[1, 2])
    sub2 = spmdlab.grid(1, 2, labs=[3, 4])
    perm = spmdlab.grid(2, P // 2, labs=list(range(P, 0, -1)))
    Dfull = codistributed(A, codistributor2dbc(full, 64))
    Dsub = codistributed(A, codistributor2dbc(sub1, 64))
    Dperm = codistributed(A, codistributor2dbc(perm, 64))
    rows = []
    ours = timed(lambda: redistribute(Dsub, codistributor2dbc(sub2, (32, 128))))
    base = timed(lambda: redistribute(Dfull, codistributor1d(2)))
    rows.append((f"redistribute {n}x{n}: 2x1 grid (labs 1,2) -> 1x2 grid (labs 3,4) vs 2x2 -> 1d", ours, base))
    target = pool_blocks(codistributor2dbc(sub2, (32, 128)).complete((n, n), P), P)
    before = timed(lambda: redistribute(_to_pool(Dsub, "bench"), target))  # the path before: reshard
    rows.append((f"redistribute {n}x{n}: 2x1 grid -> 1x2 grid vs before (the grid's view through reshard)",
                 ours, before))
    me = c.Get_rank()
    part = np.ascontiguousarray(Dsub.local) if me < 2 else None
    sizes = [Dsub.local.nbytes] if me < 2 else [0]
    sizes = c.allgather(sizes[0])
    inbox = np.empty(sizes[me - 2], dtype=np.uint8) if me in (2, 3) else None

    def raw() -> None:
        if me < 2:
            c.Isend([part, _comm.MPI.BYTE], me + 2, 7).Wait()
        elif me in (2, 3):
            c.Irecv([inbox, _comm.MPI.BYTE], me - 2, 7).Wait()

    rows.append((f"redistribute {n}x{n}: 2x1 grid -> 1x2 grid vs the raw floor (whole parts sent)", ours, timed(raw)))
    ops = [("D * 2 + 1", lambda D: D * 2 + 1), ("D @ D", lambda D: D @ D), ("lu(D)", lambda D: spmdlab.lu(D))]
    for name, op in ops:
        base = timed(lambda: op(Dfull))
        ours = timed(lambda: op(Dsub) if Dsub.holds else None)
        wrapped = timed(lambda: op(Dperm))
        rows.append((f"{name}: 2x1 sub-grid (2 labs) vs full {full.nprow}x{full.npcol}", ours, base))
        rows.append((f"{name}: all labs as a sub-grid (wrapper) vs full", wrapped, base))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labs", type=int, default=4)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with spmdlab.Pool(args.labs) as pool:
        rows = spmdlab.spmd_run(on_labs, args.n, args.repeat, pool=pool, timeout=1800)[1]
    print(f"{args.labs} labs, n={args.n}, medians of {args.repeat}")
    print(f"{'row':<78} {'ours ms':>9} {'base ms':>9} {'ratio':>6}")
    for name, ours, base in rows:
        print(f"{name:<78} {ours * 1e3:9.1f} {base * 1e3:9.1f} {ours / base:6.2f}")


if __name__ == "__main__":
    main()

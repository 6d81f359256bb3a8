"""The layouts of issue 15 timed against hand-written mpi4py doing the same exchange, in
the same run, in turns (round after round, so both see the same machine).

    python benchmarks/bench_layouts.py [--labs 2 4] [--repeat 200]

Rows (medians; each round timed from a barrier until the last lab is done):
- ``updateHalos(U)`` of a 1d layout with a halo, rows of a 2000 x 2000 float64 array
  (one halo row each side: 16 KB messages) and of a vector of 1e6 (one value each
  side: the heat equation's case), against the hand-written exchange it replaces: two
  ``Sendrecv`` calls per lab on contiguous buffers of the same bytes;
- the same with a halo of 2 columns (the halo is strided: packed and unpacked) against
  ``Sendrecv`` of contiguous buffers of the same bytes (no packing: a stricter floor),
  and against the hand-written exchange that packs and unpacks the columns too;
- mode conversion: every lab holds partial sums of the whole 1e6-vector (CuPy's
  ``'sum'`` mode); ``redistribute`` to the default 1d layout combines them, each lab
  receiving its own piece, which is what a raw ``Reduce_scatter`` does; also
  ``changeMode(D, 'replica')`` (every lab the whole sum) against ``Allreduce``.

Targets (issue 15): halo refresh >= 0.7x the hand-written Sendrecv; mode conversion
>= 0.5x the raw Reduce_scatter.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import spmdlab

from timing import in_turns


def on_labs(case: str, repeat: int) -> tuple:
    """Runs on every lab: ``(ours, raw)`` medians in seconds for one row."""

    from spmdlab import (
        changeMode,
        codistributed,
        codistributor1d,
        codistributorChunks,
        getLocalPart,
        labindex,
        numlabs,
        redistribute,
        updateHalos,
    )
    from spmdlab.lab import comm as _comm

    c = _comm.block()
    me, n = labindex(), numlabs()
    left, right = (me - 2 if me > 1 else -1), (me if me < n else -1)
    PROC_NULL = _comm.MPI.PROC_NULL
    left = PROC_NULL if left < 0 else left
    right = PROC_NULL if right < 0 else right


    if case.startswith("halo"):
        if case == "halo rows":
            shape, dim, w = (2000, 2000), 1, 1
        elif case == "halo vector":
            shape, dim, w = (1_000_000,), 1, 1
        else:
            shape, dim, w = (2000, 2000), 2, 2
        U = codistributed.rand(shape, codist=codistributor1d(dim, None, shape, halo=w), seed=1)
        width = int(np.prod(shape)) // shape[dim - 1] * w
        send_l, send_r = np.ones(width), np.ones(width)
        recv_l, recv_r = np.empty(width), np.empty(width)

        def ours():
            updateHalos(U)

        def raw():
            c.Sendrecv(send_r, right, 1, recv_l, left, 1)
            c.Sendrecv(send_l, left, 2, recv_r, right, 2)

        if case == "halo cols packed":  # what the hand-written exchange of columns must do
            L = getLocalPart(U)

            def raw():
                np.copyto(send_r.reshape(-1, w), L[:, -2 * w:-w])
                np.copyto(send_l.reshape(-1, w), L[:, w:2 * w])
                c.Sendrecv(send_r, right, 1, recv_l, left, 1)
                c.Sendrecv(send_l, left, 2, recv_r, right, 2)
                if left != PROC_NULL:
                    np.copyto(L[:, :w], recv_l.reshape(-1, w))
                if right != PROC_NULL:
                    np.copyto(L[:, -w:], recv_r.reshape(-1, w))
    else:
        size = 1_000_000
        whole = codistributorChunks({k: [(slice(None),)] for k in range(1, n + 1)}, (size,))
        partial = np.random.default_rng(me).random(size)
        D = codistributed.build([partial], whole, mode="sum")
        target = codistributor1d(1, None, (size,))
        counts = codistributor1d.defaultPartition(size, n)
        out = np.empty(counts[me - 1])
        full = np.empty(size)
        if case == "reduce_scatter":
            def ours():
                redistribute(D, target)

            def raw():
                c.Reduce_scatter(partial, out, counts)
        else:
            def ours():
                changeMode(D, "replica")

            def raw():
                c.Allreduce(partial, full)
    return in_turns(ours, raw, repeat, c.Barrier, warmup=3)


ROWS = [("halo rows", "updateHalos, 1 row of 2000 x 2000", "2x Sendrecv"),
        ("halo vector", "updateHalos, 1 cell of a 1e6 vector", "2x Sendrecv"),
        ("halo cols", "updateHalos, 2 columns of 2000 x 2000", "2x Sendrecv (contiguous)"),
        ("halo cols packed", "updateHalos, 2 columns of 2000 x 2000", "pack, 2x Sendrecv, unpack"),
        ("reduce_scatter", "sum mode -> 1d (redistribute), 1e6", "Reduce_scatter"),
        ("allreduce", "changeMode(D, 'replica'), 1e6", "Allreduce")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labs", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    for labs in args.labs:
        with spmdlab.Pool(labs) as pool:
            print(f"\n{labs} labs: ours / raw (ratio = raw time / our time; 1.0 = as fast as raw)")
            print(f"{'operation':42s} {'ours':>10s} {'raw':>10s}  {'baseline':26s} {'ratio':>6s}")
            for case, label, baseline in ROWS:
                r = spmdlab.spmd_run(on_labs, case, args.repeat, pool=pool, timeout=600)
                ours, raw = max(r[k][0] for k in range(1, labs + 1)), max(r[k][1] for k in range(1, labs + 1))
                print(f"{label:42s} {ours * 1e6:8.1f}us {raw * 1e6:8.1f}us  {baseline:26s} {raw / ours:6.2f}x")


if __name__ == "__main__":
    main()

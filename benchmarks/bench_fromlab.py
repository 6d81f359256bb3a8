"""``codistributed(X, lab, codist)`` (an array only lab 1 holds) timed against raw mpi4py
``Scatterv`` of the same bytes from lab 1, in the same run, in turns (round after round).

    python benchmarks/bench_fromlab.py [--labs 2 4] [--repeat 20]

Rows (medians; each round timed from a barrier until the last lab is done):
- by rows (``codistributor1d(1)``) of a C array: every lab's part is a contiguous range
  of X, sent straight from it; baseline ``Scatterv`` of X's buffer into a new array (a
  distribution makes a new array: its pages are faulted in on arrival), and into a
  buffer reused from the previous round (a floor no distribution reaches);
- by columns (``codistributor1d(2)``, MATLAB's default for a matrix): the parts are
  strided, so lab 1 packs them first; baselines ``Scatterv`` of a buffer already packed
  (a stricter floor) and hand-written packing plus ``Scatterv``;
- 2dbc with 64 x 64 blocks: packed, as the columns.
X is 4000 x 4000 float64 (128 MB) and a 1e6 vector (8 MB). Ratio = raw time / ours
(1.0 = as fast as raw mpi4py).
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

    from spmdlab import codistributed, codistributor1d, codistributor2dbc, labindex, numlabs
    from spmdlab.lab import comm as _comm
    from spmdlab.layouts.regions import take

    c = _comm.block()
    me, n = labindex(), numlabs()
    shape = (1_000_000,) if case == "vector" else (4000, 4000)
    X = np.random.default_rng(0).random(shape) if me == 1 else None
    layout = {"rows": codistributor1d(1), "rows reused": codistributor1d(1), "vector": codistributor1d(1),
              "cols": codistributor1d(2),
              "cols packed": codistributor1d(2), "2dbc": codistributor2dbc(codistributor2dbc.defaultLabGrid(n), 64)
              }[case]
    full = layout.complete(shape, n)
    sizes = [int(np.prod(full.localShape(k, n))) for k in range(1, n + 1)]
    counts = np.array(sizes, dtype=np.int64)
    displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    recv = np.empty(sizes[me - 1])
    packed = np.concatenate([take(X, full.localSelection(k, n)).ravel() for k in range(1, n + 1)]) if me == 1 else None

    def ours():
        codistributed(X, 1, layout)

    def raw():
        if case == "cols packed" and me == 1:  # what hand-written code must do for strided parts
            send = np.concatenate([take(X, full.localSelection(k, n)).ravel() for k in range(1, n + 1)])
        else:
            send = X if case in ("rows", "rows reused", "vector") else packed
        into = recv if case == "rows reused" else np.empty(sizes[me - 1])
        c.Scatterv([send, (counts, displs), _comm.MPI.DOUBLE] if me == 1 else None, into, 0)


    return in_turns(ours, raw, repeat, c.Barrier, warmup=2)


ROWS = [("rows", "4000x4000 by rows", "Scatterv of X"),
        ("rows reused", "4000x4000 by rows", "Scatterv of X, reused recv"),
        ("vector", "1e6 vector", "Scatterv of X"),
        ("cols", "4000x4000 by columns", "Scatterv of packed parts"),
        ("cols packed", "4000x4000 by columns", "pack + Scatterv"),
        ("2dbc", "4000x4000 2dbc 64x64", "Scatterv of packed parts")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labs", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")
    for labs in args.labs:
        with spmdlab.Pool(labs) as pool:
            print(f"\n{labs} labs: codistributed(X, 1, codist) / raw (ratio = raw time / our time)")
            print(f"{'array':26s} {'ours':>10s} {'raw':>10s}  {'baseline':26s} {'ratio':>6s}")
            for case, label, baseline in ROWS:
                r = spmdlab.spmd_run(on_labs, case, args.repeat, pool=pool, timeout=900)
                ours, raw = max(r[k][0] for k in range(1, labs + 1)), max(r[k][1] for k in range(1, labs + 1))
                print(f"{label:26s} {ours * 1e3:8.2f}ms {raw * 1e3:8.2f}ms  {baseline:26s} {raw / ours:6.2f}x")


if __name__ == "__main__":
    main()

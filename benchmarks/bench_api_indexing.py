"""Indexing by arrays against numpy in one process, in the same run (issue 21).

    python benchmarks/bench_api_indexing.py [--labs 2] [--n 100000000] [--m 10000000] [--repeat 5]

A float64 array of n elements (800 MB at the default 1e8), built on the labs
(codistributor1d, default partition), and m random integer indices (1e7), the same on
the labs and at the client (one seed). Rows (medians of --repeat runs; ours and numpy in
turns, round after round, so both see the same machine):

- ``D[idx]``, idx a numpy array on every lab (its CRC-32 compared across labs, the
  indices checked, then the inspector-executor exchange), against numpy's ``X[idx]``;
- ``D[cidx]``, the same indices codistributed (each lab holds its share), against the same;
- ``D[idx] = 1.0`` against numpy's ``X[idx] = 1.0``.

Ours is timed on the labs from a barrier until the last lab is done (a barrier after);
numpy at the client, one process, one thread. Ratio: numpy's time / ours (> 1: faster
than numpy). "extra MB/lab": the growth of a lab's peak RSS over its array and indices
during the first call (numpy: of the client's). Target (issue 21): ``D[idx]`` >= 0.8x.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import spmdlab
from spmdlab import spmd

from timing import median


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def lab_rows(pool, n: int, m: int, repeat: int, seed: int) -> dict:
    """Medians (seconds, lab 1's clock between barriers) and peak growth on the labs."""
    with spmd(pool=pool, timeout=3600):
        import resource as _res
        import time as _time

        import numpy as _np

        from spmdlab import (
            codistributed,
            codistributor1d,
            getCodistributor,
            getLocalPart,
            labBarrier,
            labindex,
            numlabs,
        )

        def _peak():
            return _res.getrusage(_res.RUSAGE_SELF).ru_maxrss / 1024

        part = codistributor1d.defaultPartition(n, numlabs())
        lo = int(sum(part[:labindex() - 1]))
        hi = lo + part[labindex() - 1]
        D = codistributed.build(_np.arange(lo, hi, dtype=_np.float64) * 0.5, codistributor1d(1, part, (n,)))
        idx = _np.random.default_rng(seed).integers(0, n, size=m)
        cidx = codistributed(idx)
        forms = {"get": lambda: D[idx], "get codist": lambda: D[cidx], "set": lambda: D.__setitem__(idx, 1.0)}
        result = {}
        for name, fn in forms.items():
            before = _peak()
            first = fn()
            grew = _peak() - before
            if name == "get":  # check the values once: element k of the result is idx[k] / 2
                mine = getLocalPart(first)
                start = int(sum(getCodistributor(first).Partition[:labindex() - 1]))
                ok = bool(_np.array_equal(mine, idx[start:start + mine.size] * 0.5))
            del first
            times = []
            for _ in range(repeat):
                labBarrier()
                t = _time.perf_counter()
                fn()
                labBarrier()
                times.append(_time.perf_counter() - t)
            result[name] = (float(_np.median(times)), grew)
    out = result[1]
    out["correct"] = all(ok[k] for k in range(1, len(ok) + 1))
    out["grew_max"] = {k: max(result[j][k][1] for j in range(1, len(result) + 1)) for k in out if k != "correct"}
    return out


def numpy_rows(X: np.ndarray, idx: np.ndarray, repeat: int) -> dict:
    result = {}
    for name, fn in {"get": lambda: X[idx], "set": lambda: X.__setitem__(idx, 1.0)}.items():
        before = peak_mb()
        fn()
        grew = peak_mb() - before
        result[name] = (median(fn, repeat, warmup=0), grew)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labs", type=int, default=2)
    parser.add_argument("--n", type=int, default=100_000_000)
    parser.add_argument("--m", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    seed = 21
    pool = spmdlab.Pool(args.labs)
    try:
        load = os.getloadavg()
        X = np.arange(args.n, dtype=np.float64) * 0.5
        idx = np.random.default_rng(seed).integers(0, args.n, size=args.m)
        ours: dict = {}
        base: dict = {}
        for _ in range(args.rounds):  # ours and numpy in turns
            t0 = time.perf_counter()
            r = lab_rows(pool, args.n, args.m, args.repeat, seed)
            assert r.pop("correct"), "D[idx] differs from X[idx]"
            grew = r.pop("grew_max")
            for k, (t, _) in r.items():
                ours[k] = min(ours.get(k, (np.inf,))[0], t), grew[k]
            for k, v in numpy_rows(X, idx, args.repeat).items():
                base[k] = (min(base.get(k, (np.inf,))[0], v[0]), v[1])
            print(f"  (round of ours {time.perf_counter() - t0:.0f} s)", flush=True)
        print(f"{args.labs} labs, D of {args.n:.0e} float64 ({args.n * 8 / 1e6:.0f} MB), {args.m:.0e} random "
              f"indices; load before {load[0]:.1f} {load[1]:.1f}, after {os.getloadavg()[0]:.1f}")
        print(f"{'ours':22} {'ms':>9} {'extra MB/lab':>13}   {'numpy':16} {'ms':>9} {'extra MB':>9}   numpy/ours")
        for name, label, bname, bkey in [("get", "D[idx]", "X[idx]", "get"), ("get codist", "D[cidx]", "X[idx]", "get"),
                                         ("set", "D[idx] = 1.0", "X[idx] = 1.0", "set")]:
            o, og = ours[name]
            b, bg = base[bkey]
            print(f"{label:22} {o * 1e3:9.1f} {og:13.0f}   {bname:16} {b * 1e3:9.1f} {bg:9.0f}   {b / o:6.2f}x")
    finally:
        pool.close()


if __name__ == "__main__":
    main()

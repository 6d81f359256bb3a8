"""In-place operators and ``out=`` at the client, against the operations they replace
(issue 19, item 3), in the same run.

    python benchmarks/bench_inplace.py [--labs 2] [--n 1000000] [--repeat 30]

Rows (medians of --repeat calls, ours and the baseline in turns):
- ``D += E`` at the client (one call on the labs, numpy's casting checked at the client
  first) against ``D = D + E`` (what ``D += E`` did before: a new array, the old one freed);
- ``np.sqrt(D, out=E)`` at the client against ``np.sqrt(D)`` (a new array);
- ``np.fft.fft(D, out=E)`` against ``np.fft.fft(D)``.
The ratio is ours / baseline: about 1 means the in-place form costs what a new array did.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import spmdlab
from spmdlab import distributed

from timing import median


def rows(pool, n: int, repeat: int) -> list:
    X = np.random.default_rng(0).random(n)
    D = distributed(X, pool=pool)
    E = distributed(X, pool=pool)
    C = distributed(np.zeros(n, complex), pool=pool)
    state = {"D": D}

    def iadd():
        d = state["D"]
        d += E

    def add():
        state["D"] = state["D"] + E

    cases = [("D += E", iadd, "D = D + E", add),
             ("np.sqrt(D, out=E)", lambda: np.sqrt(D, out=E), "np.sqrt(D)", lambda: np.sqrt(D)),
             ("np.fft.fft(D, out=C)", lambda: np.fft.fft(D, out=C), "np.fft.fft(D)", lambda: np.fft.fft(D))]
    out = []
    for name, ours, base_name, base in cases:
        t_ours, t_base = [], []
        for _ in range(3):  # ours and the baseline in turns
            t_ours.append(median(ours, repeat // 3 or 1))
            t_base.append(median(base, repeat // 3 or 1))
        o, b = min(t_ours), min(t_base)
        out.append((name, o, base_name, b))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labs", type=int, default=2)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    pool = spmdlab.Pool(args.labs)
    try:
        print(f"{args.labs} labs, n = {args.n} float64, load {os.getloadavg()[0]:.1f}")
        print(f"{'ours':24} {'ms':>8}   {'baseline':18} {'ms':>8}   ratio")
        for name, o, base_name, b in rows(pool, args.n, args.repeat):
            print(f"{name:24} {o * 1e3:8.2f}   {base_name:18} {b * 1e3:8.2f}   {o / b:5.2f}")
    finally:
        pool.close()


if __name__ == "__main__":
    main()

"""Issue 27: eigenvalues and singular values of square codistributed matrices against
numpy with 2 BLAS threads, ratios in the same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_eig.py \
        [--labs 2] [--n 2048] [--nb 64] [--repeat 3] [--only eigh]

(``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` select a slower kernel here: unset them.)
The distributed time is lab 1's clock between barriers inside one spmd block (the
matrix is made on the labs, 2dbc on the default grid); numpy runs in the client under
``threadpool_limits(2)`` on the same matrix, in turns with the labs, medians shown.
"""
from __future__ import annotations

import os
import sys

if __name__ == "__main__" and any(v in os.environ for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import argparse
import statistics
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
from threadpoolctl import threadpool_limits

import spmdlab
from spmdlab import codistributed, codistributor2dbc, spmd_run

OPS = {
    "eigh": lambda A: np.linalg.eigh(A),
    "eigvalsh": lambda A: np.linalg.eigvalsh(A),
    "svd(compute_uv=False)": lambda A: np.linalg.svd(A, compute_uv=False),
    "svd": lambda A: np.linalg.svd(A),
    "eigvals": lambda A: np.linalg.eigvals(A),
    "eig": lambda A: np.linalg.eig(A),
}


def _matrix(op: str, n: int) -> np.ndarray:
    A = np.random.default_rng(1).standard_normal((n, n))
    return A + A.T if op.startswith("eig") and "h" in op else A


def _lab_time(op: str, n: int, nb: int) -> float:
    from spmdlab import labBarrier

    A = codistributed(_matrix(op, n), codistributor2dbc(None, nb))
    labBarrier()
    t = time.perf_counter()
    OPS[op](A)
    labBarrier()
    return time.perf_counter() - t


def _numpy_time(op: str, n: int) -> float:
    A = _matrix(op, n)
    with threadpool_limits(2):
        t = time.perf_counter()
        OPS[op](A)
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labs", type=int, nargs="+", default=[2])
    ap.add_argument("--n", type=int, nargs="+", default=[2048])
    ap.add_argument("--nb", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="operations whose name contains this")
    args = ap.parse_args()
    for labs in args.labs:
        with spmdlab.Pool(labs) as pool:
            print(f"\n### {labs} labs (1 BLAS thread each) vs numpy with 2 BLAS threads; load "
                  f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, nb={args.nb}")
            print("| operation | N | spmdlab | numpy 2 threads | ratio numpy/spmdlab |")
            print("|---|---|---|---|---|")
            for n in args.n:
                for op in OPS:
                    if args.only not in op:
                        continue
                    ours, base = [], []
                    for _ in range(args.repeat):
                        base.append(_numpy_time(op, n))
                        ours.append(list(spmd_run(_lab_time, op, n, args.nb, pool=pool))[0])
                    o, b = statistics.median(ours), statistics.median(base)
                    print(f"| {op} | {n} | {o:.2f} s | {b:.2f} s | {b / o:.2f}x |", flush=True)


if __name__ == "__main__":
    main()

"""QR side of issue 12: TSQR, Householder QR on 2dbc, lstsq and the SVD of a tall matrix
against numpy with 2 BLAS threads, ratios in the same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_linalg_qr.py \
        [--labs 2 4] [--repeat 5] [--quick] [--only TSQR]

(``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` select a slower kernel here: unset them for
the whole command.) The client process (numpy's baseline) uses 2 BLAS threads, every lab
one. A distributed timing runs inside one spmd block: a barrier, the operation, a
barrier, on every lab, lab 1's clock (the result exists only once every lab is done);
numpy runs in the client under ``threadpool_limits(2)``. The two run in turns, --repeat
rounds, medians shown, so both see the same machine (others' jobs on it slow both).

:func:`qr_rows` is what ``bench_linalg.py`` calls for its QR table.
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

import cloudpickle
import numpy as np
from threadpoolctl import threadpool_limits

import spmdlab
from spmdlab import codistributed, codistributor1d, codistributor2dbc, spmd_run

if __name__ != "__main__":  # imported by bench_linalg: the lab functions must travel by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _lab_times(op: str, shape, layout, repeat: int):
    """On every lab: build the matrix, run ``op`` ``repeat`` times between barriers."""
    import numpy as np

    from spmdlab import labBarrier
    from spmdlab.arrays import linalg as la

    m, n = shape
    A = codistributed.randn(m, n, codist=layout, seed=1)
    b = codistributed.randn(m, 1, codist=codistributor1d(1), seed=2) if op.startswith("lstsq") else None
    fn = {
        "qr": lambda: np.linalg.qr(A),
        "qr-r": lambda: np.linalg.qr(A, mode="r"),
        "svd-s": lambda: np.linalg.svd(A, compute_uv=False),
        "lstsq": lambda: np.linalg.lstsq(A, b),
        "lstsq-x": lambda: la.lstsq(A, b, full_output=False),
    }[op]
    fn()  # warm-up (communicators, LAPACK workspace)
    out = []
    for _ in range(repeat):
        labBarrier()
        t = time.perf_counter()
        fn()
        labBarrier()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def _numpy_fn(op: str, shape):
    rng = np.random.default_rng(1)
    A = rng.standard_normal(shape)
    b = rng.standard_normal((shape[0], 1))
    return {
        "qr": lambda: np.linalg.qr(A),
        "qr-r": lambda: np.linalg.qr(A, mode="r"),
        "svd-s": lambda: np.linalg.svd(A, compute_uv=False),
        "lstsq": lambda: np.linalg.lstsq(A, b),
        "lstsq-x": lambda: np.linalg.lstsq(A, b),
    }[op]


def _numpy_once(fn, threads: int = 2) -> float:
    with threadpool_limits(threads):  # numpy's baseline: 2 BLAS threads (every lab has 1)
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t


def qr_rows(pool, repeat: int = 5, quick: bool = False, only: str = "", square: int = 0,
            blocks=(64, 128, 256)):
    """Yield ``(label, ours s, numpy 2 threads s, ratio numpy/ours, numpy 1 thread s)`` rows
    for one pool (the 1-thread baseline is the steadier one on a loaded machine: 2 BLAS
    threads that spin while waiting suffer most from others' jobs)."""
    tall = (20000, 50) if quick else (200000, 64)
    square = square or (1000 if quick else 2000)
    cases = [
        ("TSQR qr reduced", "qr", tall, codistributor1d(1)),
        ("TSQR qr mode='r'", "qr-r", tall, codistributor1d(1)),
        ("TSQR svd(compute_uv=False)", "svd-s", tall, codistributor1d(1)),
        ("TSQR lstsq (1 rhs)", "lstsq", tall, codistributor1d(1)),
    ]
    for nb in blocks:
        cases.append((f"2dbc qr mode='r' N={square} nb={nb}", "qr-r", (square, square),
                      codistributor2dbc(None, nb)))
    cases.append((f"2dbc qr reduced N={square} nb=128", "qr", (square, square), codistributor2dbc(None, 128)))
    cases.append((f"2dbc lstsq x N={square}x{square // 2} nb=128", "lstsq-x", (square, square // 2),
                  codistributor2dbc(None, 128)))
    for label, op, shape, layout in cases:
        if only not in label:
            continue
        fn = _numpy_fn(op, shape)
        _numpy_once(fn)
        ours, base, one = [], [], []
        for _ in range(repeat):  # in turns: numpy (2 threads, 1 thread), distributed
            base.append(_numpy_once(fn))
            one.append(_numpy_once(fn, 1))
            ours.append(list(spmd_run(_lab_times, op, shape, layout, 1, pool=pool))[0])
        o, b, b1 = statistics.median(ours), statistics.median(base), statistics.median(one)
        yield f"{label} {shape[0]}x{shape[1]}", o, b, b / o, b1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labs", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="rows whose label contains this (e.g. TSQR, 2dbc)")
    ap.add_argument("--square", type=int, default=0, help="N of the 2dbc rows (default 2000; issue 23: 4096)")
    ap.add_argument("--blocks", type=int, nargs="+", default=[64, 128, 256])
    args = ap.parse_args()
    for n in args.labs:
        with spmdlab.Pool(n) as pool:
            print(f"\n### {n} labs (1 BLAS thread each) vs numpy with 2 BLAS threads; load average "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            print("| operation | spmdlab | numpy 2 threads | ratio | numpy 1 thread | ratio |")
            print("|---|---|---|---|---|---|")
            for label, o, b, r, b1 in qr_rows(pool, args.repeat, args.quick, args.only, args.square, args.blocks):
                print(f"| {label} | {o * 1e3:.1f} ms | {b * 1e3:.1f} ms | {r:.2f}x | {b1 * 1e3:.1f} ms "
                      f"| {b1 / o:.2f}x |", flush=True)


if __name__ == "__main__":
    main()

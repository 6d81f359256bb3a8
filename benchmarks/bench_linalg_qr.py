"""QR side of issue 12: TSQR, Householder QR on 2dbc, lstsq and the SVD of a tall matrix
against numpy with 2 BLAS threads, ratios in the same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_linalg_qr.py \
        [--labs 2 4] [--repeat 5] [--quick]

(``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` select a slower kernel here: unset them for
the whole command.) The client process (numpy's baseline) uses 2 BLAS threads, every lab
one. A distributed timing runs inside one spmd block: a barrier, the operation, a
barrier, on every lab, the median over --repeat runs of lab 1's clock (the result
exists only once every lab is done). numpy's timing is the median in the client, taken
in turns with ours (one spmd block per round) so both see the same machine.

:func:`qr_rows` is what ``bench_linalg.py`` calls for its QR table.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "2"  # numpy's baseline: 2 BLAS threads (the labs get 1 from the pool)

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import spmdlab  # noqa: E402
from spmdlab import codistributed, codistributor1d, codistributor2dbc, spmd_run  # noqa: E402


def _lab_times(op: str, shape, layout, repeat: int):
    """On every lab: build the matrix, run ``op`` ``repeat`` times between barriers."""
    import numpy as np

    from spmdlab import labBarrier
    from spmdlab.codist import linalg as la

    m, n = shape
    A = codistributed.randn(m, n, codist=layout, seed=1)
    b = codistributed.randn(m, 1, codist=codistributor1d(1), seed=2) if op == "lstsq" else None
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


def _numpy_time(op: str, shape, repeat: int) -> float:
    rng = np.random.default_rng(1)
    A = rng.standard_normal(shape)
    b = rng.standard_normal((shape[0], 1))
    fn = {
        "qr": lambda: np.linalg.qr(A),
        "qr-r": lambda: np.linalg.qr(A, mode="r"),
        "svd-s": lambda: np.linalg.svd(A, compute_uv=False),
        "lstsq": lambda: np.linalg.lstsq(A, b),
        "lstsq-x": lambda: np.linalg.lstsq(A, b),
    }[op]
    fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def qr_rows(pool, repeat: int = 5, quick: bool = False) -> list:
    """``(label, ours s, numpy s, speed ratio numpy/ours)`` rows for one pool."""
    p = pool.numlabs
    tall = (20000, 50) if quick else (200000, 64)
    square = 1000 if quick else 2000
    cases = [
        ("TSQR qr reduced", "qr", tall, codistributor1d(1)),
        ("TSQR qr mode='r'", "qr-r", tall, codistributor1d(1)),
        ("TSQR svd(compute_uv=False)", "svd-s", tall, codistributor1d(1)),
        ("TSQR lstsq (1 rhs)", "lstsq", tall, codistributor1d(1)),
    ]
    for nb in (64, 128, 256):
        cases.append((f"2dbc qr mode='r' N={square} nb={nb}", "qr-r", (square, square),
                      codistributor2dbc(None, nb)))
    cases.append((f"2dbc qr reduced N={square} nb=128", "qr", (square, square), codistributor2dbc(None, 128)))
    cases.append((f"2dbc lstsq x N={square}x{square // 2} nb=128", "lstsq-x", (square, square // 2),
                  codistributor2dbc(None, 128)))
    rows = []
    for label, op, shape, layout in cases:
        ours, base = [], []
        for _ in range(2):  # rounds in turns
            ours.append(list(spmd_run(_lab_times, op, shape, layout, repeat, pool=pool))[0])
            base.append(_numpy_time(op, shape, repeat))
        o, b = min(ours), min(base)
        rows.append((f"{label} {shape[0]}x{shape[1]}", o, b, b / o))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labs", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    for n in args.labs:
        with spmdlab.Pool(n) as pool:
            print(f"\n### {n} labs (1 BLAS thread each) vs numpy with 2 BLAS threads")
            print("| operation | spmdlab | numpy | speed vs numpy |")
            print("|---|---|---|---|")
            for label, o, b, r in qr_rows(pool, args.repeat, args.quick):
                print(f"| {label} | {o * 1e3:.1f} ms | {b * 1e3:.1f} ms | {r:.2f}x |", flush=True)


if __name__ == "__main__":
    main()

"""Dense linear algebra timings against numpy with 2 BLAS threads, in the same run (issue 12).

    python benchmarks/bench_linalg.py [--n 4096] [--mm 3000] [--labs 2 4] [--blocks 64 128 256]
                                      [--repeat 3] [--neighbours]

Rows, each for block sizes 64, 128 and 256 (the table the default block size is chosen
from), medians of --repeat rounds in which ours and numpy's run in turns (so both see
the same machine; others' jobs on it slow both):

- ``np.linalg.solve(A, b)``, N = 4096 float64, on 2 labs with grids 1x2 and 2x1 (and
  the default grid of every other pool size asked for) against ``np.linalg.solve`` in
  this process with 2 BLAS threads (LU with partial pivoting; target >= 0.5x, aim 0.7x);
- ``np.linalg.cholesky(S)`` the same way (S symmetric positive definite);
- ``D @ E`` 2dbc, N = 3000, default grid, against ``A @ B`` with 2 BLAS threads
  (target >= 0.8x);
- with ``--ops qr``: the QR side's table (``bench_linalg_qr.py``: TSQR qr/svd/lstsq of a
  200000 x 64 matrix by rows, 2dbc Householder QR N = 2000 for block sizes 64/128/256,
  lstsq through it).

``--neighbours`` times every table again beside two idle MPI processes polling in a
blocking receive (``neighbours.py``), as another job's idle ranks do on a shared node;
``--labs 1 2`` compares one lab with two.

Ours is timed on the labs from a barrier until the last lab is done (barrier after),
inputs already distributed; results stay distributed. Every lab runs one BLAS thread
(``SPMDLAB_BLAS_THREADS``, default 1). ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``
select a slower kernel on this machine, so the script removes them from its environment
(re-executing itself) before numpy or any lab loads OpenBLAS. The load average is
printed with the tables: on a machine others share, compare ratios within one run.
"""
from __future__ import annotations

import os
import sys

if any(v in os.environ for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import argparse
import statistics
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
from neighbours import idle_neighbours
from threadpoolctl import threadpool_limits

import spmdlab
from spmdlab import spmd


def test_matrix(i: np.ndarray, j: np.ndarray, kind: str, n: int) -> np.ndarray:
    """Entries (i, j) of the benchmark matrices, computed where they live (no transfer):
    'general' a dense nonsymmetric matrix, 'spd' symmetric and diagonally dominant."""
    if kind == "spd":
        return np.cos(0.37 * (i + j)) + np.where(i == j, float(n), 0.0)
    return np.sin(0.61 * i + 1.37 * j + 1e-3 * i * j) + np.where(i == j, 2.0, 0.0)


def lab_build(kind: str, n: int, nb: int, grid):
    """On a lab: the benchmark matrix as a 2dbc codistributed array (grid None: default)."""
    from spmdlab import codistributed, codistributor2dbc

    c = codistributor2dbc(grid, nb).complete((n, n), spmdlab.numlabs())
    rows, cols = (c.globalIndices(d, spmdlab.labindex(), spmdlab.numlabs()) for d in (1, 2))
    local = test_matrix(rows[:, None], cols[None, :], kind, n)
    return codistributed.build(np.ascontiguousarray(local), c)


def full_matrix(kind: str, n: int) -> np.ndarray:
    i = np.arange(n)
    return test_matrix(i[:, None], i[None, :], kind, n)


def ours_once(pool, op: str, inputs: tuple) -> float:
    """One timed run of ``op`` on the labs (``inputs`` made by :func:`setup`)."""
    _A, _b, _E = inputs
    with spmd(pool=pool):
        from spmdlab.lab import comm as _comm

        _c = _comm.block()
        _c.Barrier()
        _t = time.perf_counter()
        if op == "solve":
            _X = np.linalg.solve(_A, _b)
        elif op == "cholesky":
            _X = np.linalg.cholesky(_A)
        else:
            _X = _A @ _E
        _c.Barrier()
        _dt = time.perf_counter() - _t
        del _X
    return _dt[1]


def setup(pool, op: str, n: int, nb: int, grid) -> tuple:
    """The inputs of ``op`` on the labs, as Composites."""
    kind = "spd" if op == "cholesky" else "general"
    with spmd(pool=pool):
        _A = lab_build(kind, n, nb, grid)
        _b = np.ones(n)
        _E = lab_build("general", n, nb, grid) if op == "matmul" else None
    return _A, _b, _E


def compare(pool, op: str, n: int, nb: int, grid, repeat: int, base) -> tuple:
    inputs = setup(pool, op, n, nb, grid)
    ours_once(pool, op, inputs)  # warm-up (also makes the grid's communicators)
    ours, two, one = [], [], []
    for _ in range(repeat):
        two.append(base[0]())
        one.append(base[1]())
        ours.append(ours_once(pool, op, inputs))
    del inputs
    return statistics.median(ours), statistics.median(two), statistics.median(one)


def baselines(n: int, m: int):
    A, S = full_matrix("general", n), full_matrix("spd", n)
    b = np.ones(n)
    M1, M2 = full_matrix("general", m), full_matrix("general", m) + 1

    def timed(f):
        def run(threads: int) -> float:
            with threadpool_limits(threads):
                t = time.perf_counter()
                f()
                return time.perf_counter() - t
        return (lambda: run(2)), (lambda: run(1))

    return {"solve": timed(lambda: np.linalg.solve(A, b)),
            "cholesky": timed(lambda: np.linalg.cholesky(S)),
            "matmul": timed(lambda: M1 @ M2)}


def check(pool, n: int = 300) -> None:
    """The benchmarked calls give numpy's answers (small size, before timing)."""
    A, S = full_matrix("general", n), full_matrix("spd", n)
    with spmd(pool=pool):
        _A = lab_build("general", n, 32, None)
        _S = lab_build("spd", n, 32, None)
        _x = spmdlab.gather(np.linalg.solve(_A, np.ones(n)))
        _L = spmdlab.gather(np.linalg.cholesky(_S))
        _P = spmdlab.gather(_A @ _S)
    assert np.allclose(A @ _x[1], 1), "solve"
    assert np.allclose(_L[1], np.linalg.cholesky(S)), "cholesky"
    assert np.allclose(_P[1], A @ S), "matmul"


# --- QR side (12b): TSQR, 2dbc Householder QR, lstsq, SVD of a tall matrix --------------
def qr_side_table(pool, repeat: int) -> None:
    """The QR rows (``--ops qr``) for one pool, from ``bench_linalg_qr.qr_rows``: ours
    against numpy with 2 BLAS threads (and 1), in turns, in this run."""
    from bench_linalg_qr import qr_rows

    print(f"\nQR side, {pool.numlabs} labs (one BLAS thread each); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| operation | spmdlab | numpy 2 threads | ratio | numpy 1 thread | ratio |")
    print("|---|---|---|---|---|---|")
    for label, o, b, r, b1 in qr_rows(pool, repeat):
        print(f"| {label} | {o:.3f} s | {b:.3f} s | {r:.2f}x | {b1:.3f} s | {b1 / o:.2f}x |", flush=True)
# --- end QR side (12b) ----------------------------------------------------------------------


def scalapack_anchor(requested: bool) -> None:
    """ScaLAPACK's pdgesv/pdpotrf as an anchor, when a ScaLAPACK library and a wrapper
    for it are installed (see README: no PyPI wheel ships ScaLAPACK for x86-64 Linux;
    Debian's ``libscalapack-mpich-dev`` with ``scalapack4py`` does). Skipped with a
    message otherwise."""
    if not requested:
        return
    import ctypes.util

    lib = next((n for n in ("scalapack-mpich", "scalapack-openmpi", "scalapack")
                if ctypes.util.find_library(n)), None)
    if lib is None:
        print("ScaLAPACK anchor skipped: no libscalapack found (README: how to install it)")
        return
    print(f"ScaLAPACK anchor: found lib{lib}; its driver is not wired into this script yet, "
          "time it with the ScaLAPACK example programs (README)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096, help="solve/cholesky size")
    parser.add_argument("--mm", type=int, default=3000, help="matmul size")
    parser.add_argument("--labs", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--blocks", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--ops", nargs="+", default=["solve", "cholesky", "matmul"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--grids", default="both", choices=["both", "1x2", "2x1"],
                        help="grids of the 2-lab solve/cholesky rows")
    parser.add_argument("--scalapack", action="store_true",
                        help="also time ScaLAPACK pdgesv/pdpotrf (optional; skipped when absent)")
    parser.add_argument("--neighbours", action="store_true",
                        help="time everything again beside two idle MPI processes polling (issue 23's shared cores)")
    args = parser.parse_args()
    scalapack_anchor(args.scalapack)
    base = baselines(args.n, args.mm)
    for phase, on in [("alone", False)] + ([("beside 2 idle MPI neighbours", True)] if args.neighbours else []):
        print(f"\n## {phase}", flush=True)
        with idle_neighbours(enabled=on):
            tables(args, base)


def tables(args: argparse.Namespace, base: dict) -> None:
    """One table per pool size of ``args.labs``."""
    for labs in args.labs:
        pool = spmdlab.parpool(labs)
        check(pool)
        grids = {"both": [[1, 2], [2, 1]], "1x2": [[1, 2]], "2x1": [[2, 1]]}[args.grids] if labs == 2 else [None]
        rows = []
        for op in [o for o in args.ops if o != "qr"]:  # "qr": qr_side_table below
            n = args.mm if op == "matmul" else args.n
            for grid in ([None] if op == "matmul" else grids):
                for nb in args.blocks:
                    t_ours, t_np, t_one = compare(pool, op, n, nb, grid, args.repeat, base[op])
                    g = grid or spmdlab.codistributor2dbc.defaultLabGrid(labs)
                    rows.append((f"{op} N={n}", f"{g[0]}x{g[1]}", nb, t_ours, t_np, t_one))
                    print(f"  {rows[-1][0]} grid {rows[-1][1]} nb {nb}: {t_ours:.3f} s vs "
                          f"{t_np:.3f} s ({t_np / t_ours:.2f}x), 1 thread {t_one:.3f} s "
                          f"({t_one / t_ours:.2f}x)  load {os.getloadavg()[0]:.1f}", flush=True)
        if "qr" in args.ops:
            qr_side_table(pool, args.repeat)
        pool.close()
        print(f"\n{labs} labs (one BLAS thread each) vs numpy with 2 BLAS threads, same run; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
        print("| operation | grid | block | spmdlab | numpy 2 threads | ratio | numpy 1 thread | ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for op, g, nb, t1, t2, t3 in rows:
            print(f"| {op} | {g} | {nb} | {t1:.3f} s | {t2:.3f} s | {t2 / t1:.2f}x | {t3:.3f} s "
                  f"| {t3 / t1:.2f}x |")
        print()


if __name__ == "__main__":
    main()

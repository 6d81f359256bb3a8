"""Sparse matrix-vector products and CG against scipy in the same run (issue 25).

    python benchmarks/bench_sparse.py [--grids 1024 2048] [--cg-grid 1024] [--labs 2] [--repeat 5] [--cg-repeat 3]

Rows (2 labs, the 5-point Laplacian of a k x k grid, n = k^2, by rows, float64):

- ``S @ x`` (PETSc's MatMult: the ghost exchange overlapped with the diagonal block's
  product) against scipy's CSR ``A @ x`` in this process, k = 1024 and 2048
  (target >= 2.0x); batches of 20 products between barriers, median of --repeat;
- ``pcg`` with ``ichol(S)`` (block Jacobi, an incomplete Cholesky per lab, SuperLU's
  compiled triangular solves) against ``pcg`` with ``jacobi(S)``, k = --ichol-grid (the
  baseline column is then ours with Jacobi; making the preconditioner is timed);
- ``pcg(S, b, 1e-8, maxit, jacobi(S))`` against ``scipy.sparse.linalg.cg`` with the same
  Jacobi preconditioner, k = 1024 (target >= 2.0x), iterations of both;
- the ceiling: scipy's compiled kernel (``csr_matvec``, the one ``S @ x`` uses) on each
  lab's rows with the whole ``x`` at hand, the labs side by side with no exchange at all:
  what two processes sharing these cores' memory bandwidth reach, whatever the algorithm;
- PETSc (petsc4py, 2 ranks, the same problems) when ``petsc4py`` is importable (an
  optional benchmark extra); otherwise that row says it was skipped;
- memory: each lab's resident set at the start, now (after ``malloc_trim``: what is
  live) and at its peak (``ru_maxrss``, building the matrix included) beside its share
  of the matrix (its entries, stored once: in PETSc's diagonal and off-diagonal
  blocks once ``S @ x`` has run) and a vector part.

Ours and the baseline run in turns, so both see the same machine; the load average is
printed with the table. Labs run one BLAS thread; scipy's sparse kernels are serial.
"""
from __future__ import annotations

import os
import sys

if any(v in os.environ for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import argparse
import statistics
import subprocess
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import spmdlab

BATCH = 20


def laplacian(k: int) -> sp.csr_array:
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k), format="csr")
    return sp.csr_array(sp.kron(T, sp.eye(k), format="csr") + sp.kron(sp.eye(k), T, format="csr"))


def lab_setup(k: int):
    """On the labs: the Laplacian assembled by rows (each lab its own rows, kron)."""
    from spmdlab import codistributor1d
    from spmdlab.arrays import sparse as spk

    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k), format="csr")
    S = spk.kron(T, sp.eye(k), codist=codistributor1d(1)) + spk.kron(sp.eye(k), T, codist=codistributor1d(1))
    return S


def lab_matvec(S, repeat: int):
    """Seconds per product (median over batches), timed between barriers on every lab."""
    from spmdlab import codistributed, codistributor1d, labBarrier

    n = S.shape[0]
    x = codistributed(np.ones(n), codistributor1d(1, S.partition, (n,)))
    y = S @ x  # the ghost pattern, made once
    times = []
    for _ in range(repeat):
        labBarrier()
        t = time.perf_counter()
        for _ in range(BATCH):
            y = S @ x
        labBarrier()
        times.append((time.perf_counter() - t) / BATCH)
    del y
    return statistics.median(times)


def lab_ceiling(k: int, repeat: int):
    """Seconds per product of scipy's kernel on this lab's rows (default partition, int32
    indices, a reused result zeroed each time, as ``S @ x`` does), x whole: no exchange."""
    from scipy.sparse._sparsetools import csr_matvec

    from spmdlab import codistributor1d, labBarrier, labindex, numlabs

    n = k * k
    part = codistributor1d.defaultPartition(n, numlabs())
    lo = int(sum(part[:labindex() - 1]))
    A = laplacian(k)[lo:lo + int(part[labindex() - 1])].tocsr()
    A.indices, A.indptr = A.indices.astype(np.int32), A.indptr.astype(np.int32)
    x, y = np.ones(n), np.zeros(A.shape[0])
    times = []
    for _ in range(repeat):
        labBarrier()
        t = time.perf_counter()
        for _ in range(BATCH):
            y.fill(0)
            csr_matvec(A.shape[0], n, A.indptr, A.indices, A.data, x, y)
        labBarrier()
        times.append((time.perf_counter() - t) / BATCH)
    return statistics.median(times)


def lab_pcg(S, tol: float, maxit: int, kind: str = "jacobi"):
    """Seconds of ``pcg`` with ``jacobi(S)`` or ``ichol(S)`` (making it included)."""
    from spmdlab import labBarrier
    from spmdlab.arrays import sparse as spk

    n = S.shape[0]
    b = np.ones(n)
    labBarrier()
    t = time.perf_counter()
    M = spk.jacobi(S) if kind == "jacobi" else spk.ichol(S)
    x, flag, relres, it, resvec = spk.pcg(S, b, tol, maxit, M)
    labBarrier()
    return time.perf_counter() - t, flag, it, relres


def lab_rss():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def lab_memory(S):
    import ctypes
    import resource

    try:  # hand freed heap back to the system, so "now" is what is live
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass

    A = S._local  # rebuilt from the two blocks: the same bytes as the share
    share = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    vectors = A.shape[0] * 8
    del A
    with open("/proc/self/status") as f:
        now = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, share, vectors, now


PETSC_SCRIPT = r'''
import sys, time
import petsc4py
petsc4py.init(sys.argv)
from petsc4py import PETSc
k, cg_grid, tol, maxit, batch = (int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]),
                                 int(sys.argv[5]))
def lap(k):
    n = k * k
    A = PETSc.Mat().createAIJ([n, n], nnz=5)
    lo, hi = A.getOwnershipRange()
    for i in range(lo, hi):
        r, c = divmod(i, k)
        A.setValue(i, i, 4.0)
        if r > 0: A.setValue(i, i - k, -1.0)
        if r < k - 1: A.setValue(i, i + k, -1.0)
        if c > 0: A.setValue(i, i - 1, -1.0)
        if c < k - 1: A.setValue(i, i + 1, -1.0)
    A.assemble()
    return A
A = lap(k)
x, y = A.createVecs()
x.set(1.0)
A.mult(x, y)
ts = []
for _ in range(5):
    PETSc.COMM_WORLD.barrier(); t = time.perf_counter()
    for _ in range(batch): A.mult(x, y)
    PETSc.COMM_WORLD.barrier(); ts.append((time.perf_counter() - t) / batch)
ts.sort()
out = [ts[len(ts) // 2]]
if k == cg_grid:
    ksp = PETSc.KSP().create(); ksp.setOperators(A); ksp.setType('cg'); ksp.getPC().setType('jacobi')
    ksp.setTolerances(rtol=tol, max_it=maxit)
    b, xx = A.createVecs(); b.set(1.0)
    PETSc.COMM_WORLD.barrier(); t = time.perf_counter(); ksp.solve(b, xx); PETSc.COMM_WORLD.barrier()
    out += [time.perf_counter() - t, ksp.getIterationNumber()]
if PETSc.COMM_WORLD.rank == 0:
    print("PETSC", *out)
'''


def petsc(k: int, cg_grid: int, tol: float, maxit: int, labs: int):
    """PETSc's MatMult (and CG + Jacobi on ``cg_grid``) on ``labs`` ranks, or None."""
    try:
        import petsc4py  # noqa: F401
    except ImportError:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PETSC_SCRIPT)
    try:
        mpiexec = os.environ.get("SPMDLAB_MPIEXEC", "mpiexec")
        out = subprocess.run([mpiexec, "-n", str(labs), sys.executable, f.name, str(k), str(cg_grid), str(tol),
                              str(maxit), str(BATCH)], capture_output=True, text=True, timeout=3600)
        line = next((l for l in out.stdout.splitlines() if l.startswith("PETSC")), None)
        return None if line is None else [float(v) for v in line.split()[1:]]
    finally:
        os.unlink(f.name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grids", type=int, nargs="+", default=[512, 1024, 2048])
    ap.add_argument("--cg-grid", type=int, default=1024)
    ap.add_argument("--ichol-grid", type=int, default=512, help="pcg + ichol against pcg + jacobi (ours both)")
    ap.add_argument("--labs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--maxit", type=int, default=10000)
    ap.add_argument("--cg-repeat", type=int, default=1, help="pcg and scipy's cg in turns, medians")
    args = ap.parse_args()
    rows = []
    with spmdlab.Pool(args.labs) as pool:
        spmdlab.spmd_run(lambda: np.ones(3) @ np.ones(3), pool=pool, timeout=600)  # imports done
        start = list(spmdlab.spmd_run(lab_rss, pool=pool, timeout=600))
        for k in args.grids:
            n = k * k
            A = laplacian(k)
            x = np.ones(n)
            S = spmdlab.spmd_run(lab_setup, k, pool=pool, timeout=3600)
            ours, base = [], []
            for _ in range(args.repeat):  # in turns
                ours.append(spmdlab.spmd_run(lab_matvec, S, 1, pool=pool, timeout=3600)[1])
                t = time.perf_counter()
                for _ in range(BATCH):
                    A @ x
                base.append((time.perf_counter() - t) / BATCH)
            o, b = statistics.median(ours), statistics.median(base)
            rows.append((f"S @ x, {k}x{k} grid (n = {n})", o, b, ""))
            ceiling = spmdlab.spmd_run(lab_ceiling, k, args.repeat, pool=pool, timeout=3600)[1]
            rows.append(("  ceiling: scipy's kernel on each lab's rows side by side, no exchange", ceiling, b, ""))
            rows.append(("  S @ x against that ceiling (ceiling s in the scipy column)", o, ceiling, ""))
            p = petsc(k, args.cg_grid, args.tol, args.maxit, args.labs)
            if k == args.cg_grid:
                d = A.diagonal()
                M = spla.LinearOperator(A.shape, matvec=lambda r: r / d)
                mine, theirs = [], []
                for _ in range(args.cg_repeat):  # in turns
                    t0, flag, it, relres = spmdlab.spmd_run(lab_pcg, S, args.tol, args.maxit, pool=pool,
                                                            timeout=7200)[1]
                    mine.append(t0)
                    count = [0]
                    t = time.perf_counter()
                    xs, info = spla.cg(A, np.ones(n), rtol=args.tol, maxiter=args.maxit, M=M,
                                       callback=lambda xk: count.__setitem__(0, count[0] + 1))
                    theirs.append(time.perf_counter() - t)
                t0, tb = statistics.median(mine), statistics.median(theirs)
                rows.append((f"pcg + jacobi to {args.tol:g}, {k}x{k} (ours {it} it, flag {flag}; scipy {count[0]} it; "
                             f"median of {args.cg_repeat})", t0, tb, ""))
            if k == args.ichol_grid:
                tj, _, itj, _ = spmdlab.spmd_run(lab_pcg, S, args.tol, args.maxit, pool=pool, timeout=7200)[1]
                ti, fi, iti, _ = spmdlab.spmd_run(lab_pcg, S, args.tol, args.maxit, "ichol", pool=pool,
                                                  timeout=7200)[1]
                rows.append((f"pcg + ichol, {k}x{k} ({iti} it, flag {fi}) vs pcg + jacobi ({itj} it)", ti, tj, ""))
            if p is not None:
                rows.append((f"  PETSc MatMult {k}x{k}", p[0], b, ""))
                if len(p) > 1:
                    rows.append((f"  PETSc CG + Jacobi {k}x{k} ({int(p[2])} it)", p[1], tb, ""))
            mem = list(spmdlab.spmd_run(lab_memory, S, pool=pool, timeout=600))
            for lab, (peak, share, vec, now) in enumerate(mem, 1):
                rows.append((f"  lab {lab} RSS at start {start[lab - 1] / 2**20:.0f} MiB, now {now / 2**20:.0f} MiB, "
                             f"peak {peak / 2**20:.0f} MiB (building included); "
                             f"its matrix part {share / 2**20:.0f} MiB, a vector part {vec / 2**20:.1f} MiB", None, None, ""))
            del S
    print(f"load average: {os.getloadavg()}  labs: {args.labs}")
    print(f"{'operation':<78} {'ours s':>10} {'scipy s':>10} {'speedup':>8}")
    for name, o, b, _ in rows:
        if o is None:
            print(name)
        else:
            print(f"{name:<78} {o:>10.5f} {b:>10.5f} {b / o:>7.2f}x")
    if petsc(1, 0, 0, 0, 1) is None:
        print("PETSc: petsc4py is not installed here; its rows were skipped")


if __name__ == "__main__":
    main()

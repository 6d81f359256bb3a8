"""Distributed FFT timings against numpy's FFT in one process, in the same run (issue 13).

    python benchmarks/bench_fft.py [--labs 1 2] [--repeat 5] [--warmup 2] [--size 4096]
                                   [--log2n 24] [--profile] [--no-anchor] [--neighbours]

``--neighbours`` times every table again beside two idle MPI processes polling in a
blocking receive (``neighbours.py``), as another job's idle ranks (mpi4py-fft's, a
ScaLAPACK driver's) do on a shared node; the default ``--labs 1 2`` compares one lab
with two.

Rows, per pool size (medians of --repeat rounds after --warmup untimed ones, for ours
and numpy alike: plans, caches, and the memory a lab keeps for reuse, SPMDLAB_KEEP_MEMORY,
which takes a round or two to reach its working size; ours and numpy run in turns, round
after round, so both see the same machine):
- ``np.fft.fft2`` of a size x size complex128 array, by columns (the default layout),
  result in the same layout: the slab transposes pipelined through the staging window
  with the local FFTs fused into their chunks (``fft.pipeline``), and the same with the
  message exchanges used before (``pipeline.ENABLED = False``, the "before" row);
  and with ``transposed=True`` (the result left by rows);
- ``np.fft.fft`` of a 2^log2n complex128 vector (four-step: three all-to-alls),
  pipelined and by messages;
- ``np.fft.fft`` of the prime length 999983 (Bluestein through 2^21, four-step).

``--profile`` splits the pipelined fft2 and vector times on the labs into the local
kernels alone (scipy.fft on the parts, the twiddles) and the transposes alone (the same
pipelined exchanges with a plain copy per chunk: copies and synchronization); the rest
is what fusing saves or costs.

The anchor (optional): mpi4py-fft's ``PFFT`` on the same number of MPI ranks
(``mpiexec`` of this venv), fft2 of the same size, forward only, its output left in
the other slab layout (like ``transposed=True``), timed barrier to barrier beside
numpy.fft on rank 0 in turns. Skipped with a note when mpi4py-fft is not installed
(``pip install mpi4py-fft`` needs FFTW's headers and libraries first, e.g.
``apt-get install libfftw3-dev``).

Ours is timed on the labs from a barrier until the last lab is done (the data is
already distributed, as it is for a program that works on codistributed arrays);
numpy's is the same transform of the whole array at the client, one thread (numpy's
pocketfft has no threads). scipy.fft with one worker, the labs' local kernel, is shown
too (same run, in turns): for fft2 it is itself much faster than numpy's, so the speed-up
over it is what the distribution adds. Targets (against numpy): fft2 ≥ 1.3x at 2 labs
(the limit is 2x on two cores), the 2^24 vector ≥ 1.0x. The last column, CPU seconds
of the busiest lab (its part of the work, copies and MPI included) against numpy's, is
what the speed-up tends to on an idle machine; on a loaded one the labs, which wait for
each other, lose more to the scheduler than one process does.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
import scipy.fft as sfft
from neighbours import idle_neighbours

import spmdlab
from spmdlab import codistributed

from timing import barrier_median

PRIME = 999983


def _lab_setup(size: int, log2n: int):
    """On the labs: the three inputs, kept in the labs' workspace between rounds."""
    import builtins

    D = codistributed.rand(size, size, seed=1) + 1j * codistributed.rand(size, size, seed=2)
    V = (codistributed.rand(1, 2 ** log2n, seed=3) + 1j).ravel()
    P = (codistributed.rand(1, PRIME, seed=4) + 1j).ravel()
    builtins._bench_fft = {"fft2": D, "fft2 msg": D, "fft2 T": D, "vector": V, "vector msg": V, "prime": P}
    return True


def _lab_time(name: str) -> float:
    """On the labs: one timed transform, barrier to barrier."""
    import builtins

    from spmdlab.arrays import fft as cfft
    from spmdlab.arrays.fft import pipeline
    from spmdlab.lab import comm

    x = builtins._bench_fft[name]
    f = {"fft2": lambda: np.fft.fft2(x), "fft2 msg": lambda: np.fft.fft2(x),
         "fft2 T": lambda: cfft.fft2(x, transposed=True), "vector": lambda: np.fft.fft(x),
         "vector msg": lambda: np.fft.fft(x), "prime": lambda: np.fft.fft(x)}[name]
    c = comm.block()
    pipeline.ENABLED = not name.endswith(" msg")
    try:
        c.Barrier()
        t, cpu = time.perf_counter(), time.process_time()
        r = f()
        cpu = time.process_time() - cpu
        c.Barrier()
        elapsed = time.perf_counter() - t
    finally:
        pipeline.ENABLED = True
    del r
    return elapsed, max(c.allgather(cpu))


def _lab_profile(name: str) -> dict:
    """On the labs: the pipelined transform's parts, each timed alone barrier to barrier
    (medians of 3): the local kernels, the transposes with a plain copy per chunk."""
    import builtins

    import scipy.fft as sfft

    from spmdlab import getLocalPart, labindex, numlabs
    from spmdlab.arrays import threads
    from spmdlab.arrays.fft import bailey, pipeline
    from spmdlab.arrays.fft.plan import default_partition, plan
    from spmdlab.lab import comm

    c = comm.block()
    x = builtins._bench_fft[name]
    local, me, p = getLocalPart(x), labindex() - 1, numlabs()

    def timed(fn) -> float:
        return barrier_median(c.Barrier, fn, 3)

    w = threads.fft_workers(local.size)
    if name == "fft2":
        n1, n2 = x.shape
        rows, cols = default_partition(n1, p), default_partition(n2, p)
        mid = np.empty((rows[me], n2), complex)
        kern = timed(lambda: (sfft.fft(local, axis=0, workers=w), sfft.fft(mid, axis=1, workers=w)))
        cp = pipeline.copy

        def moves():
            r = pipeline.cols_to_rows(local, n1, n2, rows, cols, cp, "bench")
            pipeline.rows_to_cols(r, n1, n2, rows, cols, cp, "bench")
        exch = timed(moves)
        total = timed(lambda: np.fft.fft2(x))
    else:
        pl = plan(x.shape[0], p)
        n1, n2 = pl.N1, pl.N2
        rows, cols = default_partition(n1, p), default_partition(n2, p)
        a = np.ones((n1, cols[me]), complex)
        b = np.ones((rows[me], n2), complex)

        def kernels():
            y = sfft.fft(a, axis=0, workers=w)
            bailey._twiddle(y, 0, 0, n1 * n2, -1)
            sfft.fft(b, axis=1, workers=w)
        kern = timed(kernels)
        cp = pipeline.copy

        def moves():
            r = pipeline.rows_to_cols(local.reshape(rows[me], n2), n1, n2, rows, cols, cp, "bench")
            r = pipeline.cols_to_rows(r, n1, n2, rows, cols, cp, "bench")
            pipeline.rows_to_cols(r, n1, n2, rows, cols, cp, "bench", transpose=True)
        exch = timed(moves)
        total = timed(lambda: np.fft.fft(x))
    return {"total": total, "kernels": kern, "transposes": exch}


def _lab_check(name: str, size: int, log2n: int):
    """On the labs: the result against numpy on the gathered input (lab 1 compares)."""
    import builtins

    from spmdlab import gather, labindex

    x = builtins._bench_fft[name]
    r = np.fft.fft2(x) if name.startswith("fft2") else np.fft.fft(x)
    X, R = gather(x, 1), gather(r, 1)
    if labindex() != 1:
        return True
    want = np.fft.fft2(X) if name.startswith("fft2") else np.fft.fft(X)
    return bool(np.allclose(R, want, rtol=1e-10, atol=1e-10 * np.abs(want).max()))


def _lab_cleanup():
    import builtins

    del builtins._bench_fft
    return True


def run(labs: int, size: int, log2n: int, repeat: int, check: bool, profile: bool = False,
        warmup: int = 2) -> list:
    pool = spmdlab.parpool(labs)
    rng = np.random.default_rng(0)
    A = rng.random((size, size)) + 1j * rng.random((size, size))
    v = rng.random(2 ** log2n) + 1j
    p = rng.random(PRIME) + 1j
    numpy_fns = {"fft2": lambda: np.fft.fft2(A), "fft2 T": lambda: np.fft.fft2(A),
                 "vector": lambda: np.fft.fft(v), "prime": lambda: np.fft.fft(p)}
    scipy_fns = {"fft2": lambda: sfft.fft2(A, workers=1), "fft2 T": lambda: sfft.fft2(A, workers=1),
                 "vector": lambda: sfft.fft(v, workers=1), "prime": lambda: sfft.fft(p, workers=1)}
    for k in ("fft2", "vector"):
        numpy_fns[k + " msg"], scipy_fns[k + " msg"] = numpy_fns[k], scipy_fns[k]
    spmdlab.spmd_run(_lab_setup, size, log2n, pool=pool)
    rows = []
    names = ["fft2", "fft2 msg", "fft2 T", "vector", "vector msg", "prime"]
    if labs == 1:  # one lab: no exchange at all, the pipelined and message rows are the same
        names = [n for n in names if not n.endswith(" msg")]
    for name in names:
        if check:
            assert all(spmdlab.spmd_run(_lab_check, name, size, log2n, pool=pool)), f"{name} differs from numpy"
        ours, base, base_sp, cpu_ours, cpu_base = [], [], [], [], []
        for _ in range(warmup):  # plans, caches, kept memory
            spmdlab.spmd_run(_lab_time, name, pool=pool)
            numpy_fns[name]()
            scipy_fns[name]()
        for _ in range(repeat):  # in turns
            wall, cpu = spmdlab.spmd_run(_lab_time, name, pool=pool)[1]
            ours.append(wall)
            cpu_ours.append(cpu)
            for fns, times in ((numpy_fns, base), (scipy_fns, base_sp)):
                t, c = time.perf_counter(), time.process_time()
                fns[name]()
                times.append(time.perf_counter() - t)
                if fns is numpy_fns:
                    cpu_base.append(time.process_time() - c)
        med = statistics.median
        rows.append((name, med(ours), med(base), med(base_sp), med(cpu_ours), med(cpu_base)))
    if profile and labs > 1:
        for name in ("fft2", "vector"):
            parts = spmdlab.spmd_run(_lab_profile, name, pool=pool)
            slowest = {k: max(parts[lab][k] for lab in range(1, labs + 1)) for k in ("total", "kernels", "transposes")}
            t = slowest["total"]
            print(f"profile {name} ({labs} labs): total {t * 1e3:.0f} ms; local kernels alone "
                  f"{slowest['kernels'] * 1e3:.0f} ms ({slowest['kernels'] / t:.0%}); transposes alone "
                  f"(copies + synchronization) {slowest['transposes'] * 1e3:.0f} ms "
                  f"({slowest['transposes'] / t:.0%})", flush=True)
    spmdlab.spmd_run(_lab_cleanup, pool=pool)
    pool.close()
    return rows


LABELS = {"fft2": "np.fft.fft2 {s} x {s} complex128 (result by columns)",
          "fft2 msg": "  the same by messages (before: no pipeline)",
          "fft2 T": "  fft2(D, transposed=True) (result by rows)",
          "vector": "np.fft.fft 2^{l} complex128 (four-step)",
          "vector msg": "  the same by messages (before: no pipeline)",
          "prime": "np.fft.fft 999983 (prime; Bluestein via 2^21)"}


ANCHOR_NOTE = ("mpi4py-fft: not installed, anchor skipped (pip install mpi4py-fft, after FFTW's "
               "headers and libraries: apt-get install libfftw3-dev)")


def _anchor_worker(size: int, repeat: int) -> None:
    """Under mpiexec: mpi4py-fft's PFFT fft2 (forward, output in the other slab layout),
    barrier to barrier, and numpy.fft.fft2 of the whole array on rank 0 in turns (the
    other ranks wait in a polled, sleeping barrier meanwhile)."""
    from mpi4py import MPI
    from mpi4py_fft import PFFT, newDistArray

    comm = MPI.COMM_WORLD
    fft = PFFT(comm, (size, size), axes=(0, 1), dtype=np.complex128)
    u = newDistArray(fft, False)
    u[:] = np.random.default_rng(comm.rank).random(u.shape) + 1j
    uh = newDistArray(fft, True)
    A = np.random.default_rng(0).random((size, size)) + 1j if comm.rank == 0 else None

    def idle_barrier() -> None:
        req = comm.Ibarrier()
        while not req.Test():
            time.sleep(2e-4)

    fft.forward(u, uh)  # warm-up (plans)
    ours, base = [], []
    for _ in range(repeat):
        comm.Barrier()
        t = time.perf_counter()
        fft.forward(u, uh)
        comm.Barrier()
        ours.append(time.perf_counter() - t)
        if comm.rank == 0:
            t = time.perf_counter()
            np.fft.fft2(A)
            base.append(time.perf_counter() - t)
        idle_barrier()
    if comm.rank == 0:
        print(f"ANCHOR {statistics.median(ours)} {statistics.median(base)}", flush=True)


def anchor(labs: int, size: int, repeat: int) -> str:
    """The mpi4py-fft row (or why there is none)."""
    try:
        import mpi4py_fft
    except ImportError:
        return ANCHOR_NOTE
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
    if mpiexec is None:
        return "mpi4py-fft: no mpiexec found, anchor skipped"
    cmd = [mpiexec, "-n", str(labs), sys.executable, os.path.abspath(__file__), "--anchor-worker",
           "--size", str(size), "--repeat", str(repeat)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    line = next((x for x in res.stdout.splitlines() if x.startswith("ANCHOR ")), None)
    if line is None:
        return f"mpi4py-fft: the anchor failed ({res.stderr.strip().splitlines()[-1:] or res.returncode})"
    ours, base = map(float, line.split()[1:])
    return (f"mpi4py-fft {mpi4py_fft.__version__} PFFT fft2 {size} x {size} complex128, {labs} ranks, output in "
            f"the other slab layout: {ours * 1e3:.0f} ms, numpy {base * 1e3:.0f} ms, {base / ours:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--log2n", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--no-check", action="store_true", help="skip the comparison with numpy")
    parser.add_argument("--profile", action="store_true", help="split the times into kernels and transposes")
    parser.add_argument("--no-anchor", action="store_true", help="skip mpi4py-fft")
    parser.add_argument("--anchor-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--neighbours", action="store_true",
                        help="time everything again beside two idle MPI processes polling (issue 23's shared cores)")
    args = parser.parse_args()
    if args.anchor_worker:
        _anchor_worker(args.size, args.repeat)
        return
    for phase, on in [("alone", False)] + ([("beside 2 idle MPI neighbours", True)] if args.neighbours else []):
        print(f"## {phase}", flush=True)
        with idle_neighbours(enabled=on):
            tables(args)


def tables(args: argparse.Namespace) -> None:
    """One table per pool size of ``args.labs`` (and mpi4py-fft's line, if installed)."""
    for labs in args.labs:
        rows = run(labs, args.size, args.log2n, args.repeat, not args.no_check, args.profile, args.warmup)
        header = ("transform", f"spmdlab ({labs} labs)", "numpy, 1 process", "speed-up",
                  "scipy.fft, 1 process, 1 worker", "speed-up", "CPU s: busiest lab / numpy")
        table = [(LABELS[n].format(s=args.size, l=args.log2n), f"{o * 1e3:.0f} ms", f"{b * 1e3:.0f} ms",
                  f"{b / o:.2f}x", f"{c * 1e3:.0f} ms", f"{c / o:.2f}x", f"{co:.2f} / {cb:.2f}")
                 for n, o, b, c, co, cb in rows]
        widths = [max(len(r[i]) for r in table + [header]) for i in range(len(header))]
        print(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
        print("-|-".join("-" * w for w in widths))
        for r in table:
            print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
        if labs > 1 and not args.no_anchor:
            print(anchor(labs, args.size, args.repeat))
        print(flush=True)


if __name__ == "__main__":
    main()

"""Distributed FFT timings against numpy's FFT in one process, in the same run (issue 13).

    python benchmarks/bench_fft.py [--labs 2 4] [--repeat 5] [--size 4096] [--log2n 24]

Rows, per pool size (medians of --repeat rounds; ours and numpy run in turns, round
after round, so both see the same machine):
- ``np.fft.fft2`` of a size x size complex128 array, by columns (the default layout),
  result in the same layout; and with ``transposed=True`` (the result left by rows);
- ``np.fft.fft`` of a 2^log2n complex128 vector (four-step: three all-to-alls);
- ``np.fft.fft`` of the prime length 999983 (Bluestein through 2^21, four-step).

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
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
import scipy.fft as sfft

import spmdlab
from spmdlab import codistributed

PRIME = 999983


def _lab_setup(size: int, log2n: int):
    """On the labs: the three inputs, kept in the labs' workspace between rounds."""
    import builtins

    D = codistributed.rand(size, size, seed=1) + 1j * codistributed.rand(size, size, seed=2)
    V = (codistributed.rand(1, 2 ** log2n, seed=3) + 1j).ravel()
    P = (codistributed.rand(1, PRIME, seed=4) + 1j).ravel()
    builtins._bench_fft = {"fft2": D, "fft2 T": D, "vector": V, "prime": P}
    return True


def _lab_time(name: str) -> float:
    """On the labs: one timed transform, barrier to barrier."""
    import builtins

    from spmdlab.arrays import fft as cfft
    from spmdlab.lab import comm

    x = builtins._bench_fft[name]
    f = {"fft2": lambda: np.fft.fft2(x), "fft2 T": lambda: cfft.fft2(x, transposed=True),
         "vector": lambda: np.fft.fft(x), "prime": lambda: np.fft.fft(x)}[name]
    c = comm.block()
    c.Barrier()
    t, cpu = time.perf_counter(), time.process_time()
    r = f()
    cpu = time.process_time() - cpu
    c.Barrier()
    elapsed = time.perf_counter() - t
    del r
    return elapsed, max(c.allgather(cpu))


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


def run(labs: int, size: int, log2n: int, repeat: int, check: bool) -> list:
    pool = spmdlab.parpool(labs)
    rng = np.random.default_rng(0)
    A = rng.random((size, size)) + 1j * rng.random((size, size))
    v = rng.random(2 ** log2n) + 1j
    p = rng.random(PRIME) + 1j
    numpy_fns = {"fft2": lambda: np.fft.fft2(A), "fft2 T": lambda: np.fft.fft2(A),
                 "vector": lambda: np.fft.fft(v), "prime": lambda: np.fft.fft(p)}
    scipy_fns = {"fft2": lambda: sfft.fft2(A, workers=1), "fft2 T": lambda: sfft.fft2(A, workers=1),
                 "vector": lambda: sfft.fft(v, workers=1), "prime": lambda: sfft.fft(p, workers=1)}
    spmdlab.spmd_run(_lab_setup, size, log2n, pool=pool)
    rows = []
    for name in ("fft2", "fft2 T", "vector", "prime"):
        if check:
            assert all(spmdlab.spmd_run(_lab_check, name, size, log2n, pool=pool)), f"{name} differs from numpy"
        ours, base, base_sp, cpu_ours, cpu_base = [], [], [], [], []
        spmdlab.spmd_run(_lab_time, name, pool=pool)  # warm-up (plans, caches)
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
    spmdlab.spmd_run(_lab_cleanup, pool=pool)
    pool.close()
    return rows


LABELS = {"fft2": "np.fft.fft2 {s} x {s} complex128 (result by columns)",
          "fft2 T": "  fft2(D, transposed=True) (result by rows)",
          "vector": "np.fft.fft 2^{l} complex128 (four-step)",
          "prime": "np.fft.fft 999983 (prime; Bluestein via 2^21)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--log2n", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-check", action="store_true", help="skip the comparison with numpy")
    args = parser.parse_args()
    for labs in args.labs:
        rows = run(labs, args.size, args.log2n, args.repeat, not args.no_check)
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
        print(flush=True)


if __name__ == "__main__":
    main()

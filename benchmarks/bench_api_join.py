"""Joining and shape functions (issue 21) against their baselines, in the same run.

    python benchmarks/bench_api_join.py [--labs 2] [--mb 400] [--repeat 5] [--shape-n 10000000]

Rows (medians of --repeat rounds; ours and the baseline in turns, barrier to barrier on
the labs):
- ``np.concatenate([A, B])`` of two --mb MB float64 arrays, both 1d by rows (the default
  layout): the result is 1d by rows, so lab 1 takes A's second half from lab 2 and lab 2
  takes B's first half from lab 1. Baselines: raw mpi4py ``Sendrecv`` of the same bytes
  between preallocated buffers (target: ours ≥ 0.8x its speed), and the same result built
  by hand with mpi4py (``np.empty``, the local copies, ``Sendrecv`` into place).
  Memory per lab: the peak of numpy allocations (tracemalloc) during one concatenate,
  beyond the inputs, against the result's part.
  Read the rows together: raw ``Sendrecv`` moves half the bytes a concatenate must
  write. Each lab's part of the result is twice what it receives: the other half is its
  own input, copied (numpy's semantics: a new array). Labs keep freed memory for reuse
  (SPMDLAB_KEEP_MEMORY), so after the warm-up round the result lands on mapped pages, as
  the raw buffers do; "by hand" (``np.empty``, the local copy, ``Sendrecv`` into place)
  is the floor for any concatenate, and the copy alone is printed beside it: with both
  labs' cores busy the copy and the transfer share the memory bus and do not overlap
  (an overlapping thread and a chunked nonblocking exchange measured no faster).
  returns a new array. Along the distributed axis a block layout (``codistributor1d``)
  cannot leave every lab's rows in place (lab 1 holds A's first half and B's first half,
  which are not adjacent in the result): a partition that moved less would leave one lab
  a quarter of the result.
- shape functions of a --shape-n float64 matrix (4 columns per row block) by rows, on
  the labs, against numpy on the whole array in one process (the client).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import spmdlab


def _lab_setup(mb: int, shape_n: int) -> bool:
    import builtins

    from spmdlab import codistributed, codistributor1d, redistribute

    rows = mb * 2**20 // 8 // 1000
    by_rows = codistributor1d(1)
    A = redistribute(codistributed.rand(rows, 1000, seed=1), by_rows)
    B = redistribute(codistributed.rand(rows, 1000, seed=2), by_rows)
    S = redistribute(codistributed.rand(shape_n // 1000, 1000, seed=3), by_rows)
    builtins._bench_join = {"A": A, "B": B, "S": S}
    return True


def _timed(c, f) -> float:
    c.Barrier()
    t = time.perf_counter()
    r = f()
    c.Barrier()
    elapsed = time.perf_counter() - t
    del r
    return elapsed


SHAPE_OPS = {
    "np.flip(D, 0) (distributed axis)": lambda D: np.flip(D, 0),
    "np.flip(D, 1) (local axis)": lambda D: np.flip(D, 1),
    "np.roll(D, 7, axis=0)": lambda D: np.roll(D, 7, axis=0),
    "D.ravel(order='F')": lambda D: D.ravel(order="F"),
    "np.repeat(D, 2, axis=0)": lambda D: np.repeat(D, 2, axis=0),
    "np.delete(D, 5, axis=0)": lambda D: np.delete(D, 5, axis=0),
    "np.swapaxes(D, 0, 1)": lambda D: np.swapaxes(D, 0, 1),
    "np.zeros_like(D)": lambda D: np.zeros_like(D),
    "np.diagonal(D)": lambda D: np.diagonal(D),
}


def _lab_concat(repeat: int) -> tuple:
    """On the labs: concatenate against raw Sendrecv of the same bytes, and by hand."""
    import builtins
    import tracemalloc

    from spmdlab import getLocalPart, labindex
    from spmdlab.lab import comm

    c = comm.block()
    A, B = builtins._bench_join["A"], builtins._bench_join["B"]
    a, b = getLocalPart(A), getLocalPart(B)
    me, peer = labindex(), 2 - labindex()  # the other lab's rank (0-based)
    half = a.shape[0]  # rows of each input on each lab (2 labs, even)
    send = b if me == 1 else a  # lab 1 sends its B rows, lab 2 its A rows
    recv = np.empty_like(send)

    def raw():
        c.Sendrecv(send, peer, 7, recv, peer, 7)

    def raw_fresh():
        into = np.empty_like(send)  # a new buffer each time, as a result is
        c.Sendrecv(send, peer, 7, into, peer, 7)

    def by_hand():
        out = np.empty((2 * half, a.shape[1]))
        mine, theirs = (out[:half], out[half:]) if me == 1 else (out[half:], out[:half])
        np.copyto(mine, a if me == 1 else b)
        c.Sendrecv(send, peer, 7, theirs, peer, 7)
        return out

    kept = np.empty_like(send)

    def copy_alone():
        np.copyto(kept, a if me == 1 else b)

    ours, base, fresh, hand, copy = [], [], [], [], []
    for _ in range(repeat + 1):  # in turns; the first round a warm-up
        ours.append(_timed(c, lambda: np.concatenate([A, B])))
        base.append(_timed(c, raw))
        fresh.append(_timed(c, raw_fresh))
        hand.append(_timed(c, by_hand))
        copy.append(_timed(c, copy_alone))
    tracemalloc.start()
    R = np.concatenate([A, B])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    part = getLocalPart(R).nbytes
    moved = c.allreduce(send.nbytes)
    med = lambda xs: statistics.median(xs[1:])
    return med(ours), med(base), med(fresh), med(hand), med(copy), max(c.allgather(peak)), part, moved


def _lab_shape(name: str, repeat: int) -> float:
    import builtins

    from spmdlab.lab import comm

    c = comm.block()
    S = builtins._bench_join["S"]
    f = SHAPE_OPS[name]
    times = [_timed(c, lambda: f(S)) for _ in range(repeat + 1)]
    return statistics.median(times[1:])


def _lab_check() -> bool:
    import builtins

    from spmdlab import gather, labindex

    S = builtins._bench_join["S"]
    X = gather(S)
    ok = True
    for f in SHAPE_OPS.values():
        ok = ok and np.array_equal(gather(f(S)), f(X))
    small = np.concatenate([S, S])
    ok = ok and np.array_equal(gather(small), np.concatenate([X, X]))
    return ok or labindex() < 0


def _lab_cleanup() -> bool:
    import builtins

    del builtins._bench_join
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, default=2)
    parser.add_argument("--mb", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--shape-n", type=int, default=10_000_000)
    args = parser.parse_args()
    if args.labs != 2:
        raise SystemExit("the concatenate baseline is written for 2 labs")
    pool = spmdlab.parpool(args.labs)
    try:
        spmdlab.spmd_run(_lab_setup, args.mb, args.shape_n, pool=pool)
        assert all(spmdlab.spmd_run(_lab_check, pool=pool)), "a result differs from numpy"
        o, b, f, h, cp, peak, part, moved = spmdlab.spmd_run(_lab_concat, args.repeat, pool=pool)[1]
        print(f"{args.labs} labs, load {os.getloadavg()[0]:.1f}")
        print(f"np.concatenate of two {args.mb} MB float64 arrays ({moved / 2**20:.0f} MB moved between labs)")
        print(f"  ours {o * 1e3:8.1f} ms | raw mpi4py Sendrecv of the same bytes {b * 1e3:8.1f} ms | "
              f"speed ours/raw {b / o:5.2f}x (target >= 0.8x)")
        print(f"  raw mpi4py Sendrecv into a new buffer each time {f * 1e3:8.1f} ms | speed ours/raw new {f / o:5.2f}x")
        print(f"  by hand with mpi4py (np.empty, local copy, Sendrecv into place) {h * 1e3:8.1f} ms | "
              f"speed ours/by hand {h / o:5.2f}x")
        print(f"  the local copy alone (each lab's own half of its result part) {cp * 1e3:8.1f} ms | "
              f"raw Sendrecv + the copy {(b + cp) * 1e3:8.1f} ms: speed raw/(raw + copy) {b / (b + cp):5.2f}x")
        print(f"  memory per lab: peak numpy allocations {peak / 2**20:.0f} MB for a result part of "
              f"{part / 2**20:.0f} MB ({peak / part:.2f}x)")
        rng = np.random.default_rng(3)
        X = rng.random((args.shape_n // 1000, 1000))
        print(f"\nshape functions of a {X.shape[0]} x 1000 float64 array by rows "
              f"({X.nbytes / 2**20:.0f} MB); numpy: the whole array in one process")
        print(f"  {'operation':36} {'ours ms':>9} {'numpy ms':>9}  speed-up")
        for name, f in SHAPE_OPS.items():
            ours_t, np_t = [], []
            for _ in range(3):  # in turns
                ours_t.append(spmdlab.spmd_run(_lab_shape, name, max(1, args.repeat // 2), pool=pool)[1])
                t = time.perf_counter()
                r = f(X)
                r = np.array(r, copy=True) if r.base is not None else r  # numpy's views: copied, as ours
                np_t.append(time.perf_counter() - t)
                del r
            o2, n2 = min(ours_t), min(np_t)
            print(f"  {name:36} {o2 * 1e3:9.1f} {n2 * 1e3:9.1f}  {n2 / o2:6.2f}x")
        spmdlab.spmd_run(_lab_cleanup, pool=pool)
    finally:
        pool.close()


if __name__ == "__main__":
    main()

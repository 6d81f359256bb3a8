"""``redistribute`` 1d (columns) <-> 2dbc of 80 MB against the other ways to move it
(issue 22), in turns in the same run:

    python benchmarks/bench_redistribute_paths.py [--labs 4 2] [--mb 80] [--repeat 9]

- ``redistribute`` as the package does it (staging window: the sender packs, the
  receiver unpacks);
- one ``Alltoallw`` with MPI derived datatypes (per region two nested ``hvector`` types
  per dimension, a ``struct`` of the region's run groups) straight from the old part
  into a fresh new part, the kept elements copied by numpy: ScaLAPACK ``PxGEMR2D``'s
  redistribution the way MPI-2 datatypes express it, with no packing in Python;
- raw mpi4py ``Alltoallv`` of the same byte counts between reused contiguous buffers
  (the floor of the issue's target, >= 0.7x).

Measured here (2 cores, MPICH 5 ch4:ucx, load 3-5): the datatype path took 1.4-3.2x
the staging window's time, so the package keeps the window.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import spmdlab
from spmdlab import codistributed, codistributor1d, codistributor2dbc, redistribute, spmd_run

from timing import between_barriers


def _group_type(MPI, combo, strides, itemsize, side):
    """One run group per dimension (``regions._group_view``) as a datatype, and the byte
    offset of its first element."""
    element = MPI.BYTE.Create_contiguous(itemsize)
    t, made, offset = element, [element], 0
    for d in range(len(combo) - 1, -1, -1):
        count, length, first, step = combo[d][0], combo[d][1], combo[d][2 + 2 * side], combo[d][3 + 2 * side]
        if t is element and strides[d] == itemsize:  # contiguous runs: blocks of bytes
            t = MPI.BYTE.Create_hvector(count, length * itemsize, step * strides[d])
            made.append(t)
        else:
            run = t.Create_hvector(length, 1, strides[d])
            t = run.Create_hvector(count, 1, step * strides[d])
            made += [run, t]
        offset += first * strides[d]
    for m in made[:-1]:
        m.Free()
    return t, offset


def _region_type(MPI, copy, strides, itemsize, side):
    parts = [_group_type(MPI, combo, strides, itemsize, side) for combo in copy.combos]
    whole = MPI.Datatype.Create_struct([1] * len(parts), [o for _, o in parts], [t for t, _ in parts])
    for t, _ in parts:
        t.Free()
    return whole.Commit()


def _types(src, dst, n, lab, itemsize, old_strides, new_strides):
    """This lab's send types (over its old part) and receive types (over its new part);
    sender and receiver use the pair's joint run groups, so both walk a region's elements
    in the same order."""
    from spmdlab.lab import comm
    from spmdlab.layouts.plan import transfer_regions
    from spmdlab.layouts.regions import RegionCopy
    MPI = comm.MPI
    plan = transfer_regions(src, dst, n, lab=lab)
    old = [src.localShape(k, n) for k in range(1, n + 1)]
    new = [dst.localShape(k, n) for k in range(1, n + 1)]
    out = [RegionCopy(t.dst_index, t.src_index, new[k], old[lab - 1]) for k, t in enumerate(plan[lab - 1])]
    into = [RegionCopy(t.dst_index, t.src_index, new[lab - 1], old[k])
            for k, t in enumerate(plan[k][lab - 1] for k in range(n))]
    assert all(c.combos is not None for c in out + into)
    skip = lambda k, c: k == lab - 1 or not c.combos
    sends = [None if skip(k, c) else _region_type(MPI, c, old_strides, itemsize, 0) for k, c in enumerate(out)]
    recvs = [None if skip(k, c) else _region_type(MPI, c, new_strides, itemsize, 1) for k, c in enumerate(into)]
    return sends, recvs, into[lab - 1]


def _lab(rows, cols, back, repeat):
    """On a lab: medians of redistribute, the Alltoallw path and raw Alltoallv, in turns;
    and whether the Alltoallw path gave redistribute's result."""
    from spmdlab.lab import comm
    from spmdlab.layouts.plan import transfer_plan
    c, MPI = comm.block(), comm.MPI
    me, n = c.Get_rank() + 1, c.Get_size()
    src, dst = codistributor1d(2), codistributor2dbc()
    if back:
        src, dst = dst, src
    D = codistributed.rand(rows, cols, codist=src, seed=1)
    src, dst = D.codistributor, dst.complete((rows, cols), n)
    local = D._local
    shape = dst.localShape(me, n)
    sends, recvs, keep = _types(src, dst, n, me, 8, local.strides, (shape[1] * 8, 8))
    address = lambda a: MPI.buffer.fromaddress(a.__array_interface__["data"][0], a.nbytes) if a.size \
        else MPI.buffer.fromaddress(0, 0)

    def typed():
        new = np.empty(shape)
        keep.run(new, local)
        c.Barrier()  # (the package would meet in an interruptible barrier first)
        c.Alltoallw([address(local), [int(t is not None) for t in sends], [0] * n,
                     [t or MPI.BYTE for t in sends]],
                    [address(new), [int(t is not None) for t in recvs], [0] * n,
                     [t or MPI.BYTE for t in recvs]])
        return new

    plan = transfer_plan(src, dst, n, lab=me)
    sc = np.array([t.size * 8 for t in plan[me - 1]], dtype=np.int64)
    rc = np.array([plan[s][me - 1].size * 8 for s in range(n)], dtype=np.int64)
    sb, rb = np.ones(int(sc.sum()), dtype=np.uint8), np.empty(int(rc.sum()), dtype=np.uint8)
    same = bool(np.array_equal(typed(), redistribute(D, dst)._local))

    runs: list = [[], [], []]
    for _ in range(repeat + 1):  # in turns, the first round a warm-up
        runs[0].append(between_barriers(c.Barrier, lambda: redistribute(D, dst)))
        runs[1].append(between_barriers(c.Barrier, typed))
        runs[2].append(between_barriers(c.Barrier, lambda: c.Alltoallv([sb, sc], [rb, rc])))
    for t in (*sends, *recvs):
        if t is not None:
            t.Free()
    return [sorted(r[1:])[len(r[1:]) // 2] for r in runs], same, int(c.allreduce(int(sc.sum())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, nargs="+", default=[4, 2])
    parser.add_argument("--mb", type=int, default=80)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    cols = 1000
    rows = args.mb * 1_000_000 // 8 // cols
    print(f"load: {os.getloadavg()[0]:.2f}")
    for labs in args.labs:
        pool = spmdlab.Pool(labs)
        try:
            for back, name in ((False, "1d->2dbc"), (True, "2dbc->1d")):
                (ours, typed, raw), same, total = list(spmd_run(_lab, rows, cols, back, args.repeat, pool=pool))[0]
                print(f"{labs} labs, {name} {total / 1e6:.0f} MB: redistribute {ours * 1e3:.1f} ms "
                      f"({raw / ours:.2f}x raw), Alltoallw with datatypes {typed * 1e3:.1f} ms "
                      f"({raw / typed:.2f}x raw{'' if same else ', WRONG RESULT'}), raw Alltoallv {raw * 1e3:.1f} ms")
        finally:
            pool.close()
    print(f"load: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

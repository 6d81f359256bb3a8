"""Sorting and statistics of codistributed arrays against numpy in one process, in the
same run (issue 21).

    python benchmarks/bench_api.py [--labs 2] [--n 100000000] [--repeat 3] [--warmup 2]
                                   [--numpy-keeps-memory]

Rows (medians of --repeat rounds after --warmup untimed ones; ours and numpy's in turns,
round after round, so both see the same machine; the first round is printed too, "cold":
a lab keeps the memory of the arrays it frees, SPMDLAB_KEEP_MEMORY, so its first rounds
map fresh pages and the later ones reuse them; ``--numpy-keeps-memory`` gives numpy's
process the same allocator switches, lab/memory.py):
- ``np.sort`` of n float64 (a sample sort: one all-to-all) against ``np.sort`` of the
  whole array in one process;
- ``np.unique`` of n int64 with 1e6 distinct values against numpy's ``unique``, and
  (row ``unique/sort``) against a sort and a mask in one process, as numpy <= 2.2 did
  (numpy 2.4's ``unique`` is many times slower than that on integers here);
- ``np.median`` and ``np.percentile(D, [5, 50, 95])`` of n float64 (distributed
  selection, no sort) against numpy's (``partition``).
Each lab generates its own part (the client the same values, whole). Ours is timed from
a barrier until the last lab is done. Memory: each lab's peak resident growth during the
operation (``VmHWM`` after resetting it) beside the size of its part, and its peak
resident set (what it held at its peak, memory kept for reuse included).

Targets (issue 21, 2 labs, n = 1e8): sort >= 1.3x numpy, unique >= 1.2x, median and
percentile >= 1.3x.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cloudpickle
import numpy as np

import spmdlab
from spmdlab import codistributed, codistributor1d, labBarrier, parpool, spmd

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the lab functions travel by value

DISTINCT = 1_000_000


def _part(kind: str, n: int, lab: int, labs: int) -> np.ndarray:
    """Lab ``lab``'s part (default partition) of the benchmark array ``kind``."""
    sizes = codistributor1d.defaultPartition(n, labs)
    rng = np.random.default_rng([lab, 21])
    if kind == "int":
        return rng.integers(0, DISTINCT, int(sizes[lab - 1]), dtype=np.int64)
    return rng.standard_normal(int(sizes[lab - 1]))


def _whole(kind: str, n: int, labs: int) -> np.ndarray:
    return np.concatenate([_part(kind, n, k, labs) for k in range(1, labs + 1)])


def _unique_by_sort(a: np.ndarray) -> np.ndarray:
    """numpy's distinct values the way numpy <= 2.2 found them (a sort, then a mask): the
    fair one-process baseline, as numpy 2.4's own ``unique`` is far slower on integers."""
    s = np.sort(a)
    keep = np.empty(s.size, dtype=bool)
    keep[:1] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


OPS = {
    "sort": ("float", np.sort),
    "unique": ("int", np.unique),
    "unique/sort": ("int", np.unique),  # against _unique_by_sort (BASELINES)
    "median": ("float", np.median),
    "percentile": ("float", lambda a: np.percentile(a, [5, 50, 95])),
}


BASELINES = {"unique/sort": _unique_by_sort}


def _peak_reset() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))


def lab_run(name: str, n: int) -> tuple:
    """On every lab: (seconds from a barrier until every lab is done, peak growth, part bytes)."""
    kind, fn = OPS[name]
    lab, labs = spmdlab.labindex(), spmdlab.numlabs()
    local = _part(kind, n, lab, labs)
    D = codistributed.build(local, codistributor1d(1, codistributor1d.defaultPartition(n, labs), (n,)),
                            "noCommunication")
    _peak_reset()
    before = _status("VmRSS:")
    labBarrier()
    t = time.perf_counter()
    r = fn(D)
    labBarrier()
    seconds = time.perf_counter() - t
    del r
    return seconds, _status("VmHWM:") - before, local.nbytes, _status("VmHWM:")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--labs", type=int, default=2)
    parser.add_argument("--n", type=int, default=100_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--numpy-keeps-memory", action="store_true")
    parser.add_argument("--ops", nargs="*", default=list(OPS))
    args = parser.parse_args()
    print(f"load: {os.getloadavg()}")
    if args.numpy_keeps_memory:
        from spmdlab.lab import memory

        print(f"numpy's process keeps freed memory: {memory.keep_freed(float('inf'), lambda: False) is not None}")
    pool = parpool(args.labs)
    try:
        print(f"{'operation':<12}{'numpy s':>10}{'ours s':>10}{'speedup':>9}{'cold: numpy':>13}{'ours':>7}"
              "  memory per lab (peak growth / part)")
        for name in args.ops:
            kind, fn = OPS[name]
            fn = BASELINES.get(name, fn)
            X = _whole(kind, args.n, args.labs)
            ours, base, mem = [], [], []
            for _ in range(args.warmup + args.repeat):
                t = time.perf_counter()
                fn(X)
                base.append(time.perf_counter() - t)
                with spmd(pool=pool, timeout=3600):
                    r = lab_run(name, args.n)
                per_lab = [r[k] for k in range(1, args.labs + 1)]
                ours.append(max(p[0] for p in per_lab))
                mem = [(p[1], p[2], p[3]) for p in per_lab]
            del X
            b, o = float(np.median(base[args.warmup:])), float(np.median(ours[args.warmup:]))
            text = ", ".join(f"{g / 1e6:.0f}/{s / 1e6:.0f} MB (peak RSS {h / 1e6:.0f} MB)" for g, s, h in mem)
            print(f"{name:<12}{b:>10.2f}{o:>10.2f}{b / o:>8.2f}x{base[0]:>13.2f}{ours[0]:>7.2f}  {text}", flush=True)
    finally:
        pool.close()
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()

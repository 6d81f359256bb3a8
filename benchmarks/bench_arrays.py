"""Distributed-array timings against raw transports and plain numpy, in the same run
(issue 3, item 8).

    python benchmarks/bench_arrays.py [--labs 4 2] [--mb 80] [--repeat 15]

One table per pool size (default 4 labs, then 2). Rows (medians of --repeat runs; ours
and the baseline run in turns, round after round, so that both see the same machine):
- ``distributed(X)`` of an 80 MB float64 array (default layout: column blocks, which the
  client must copy out, row blocks, which are contiguous views, 2dbc, rows with a halo
  of one row, and Dagger.jl-style blocks of 2500 x 250) against the raw
  floor: the same bytes, pre-cut contiguous, written straight into the same sockets to
  a bare receive loop on each lab;
- ``gather(D)`` at the client against the same bytes read straight from those sockets
  into a new array (gather returns a new array; the floor into a reused one is shown too);
  both ways are timed as spmdlab does them (cross-memory copies on one machine,
  ``SPMDLAB_CROSS_MEMORY``) and, in the same rounds, over spmdlab's sockets ("sockets");
- ``redistribute`` 1d (columns) -> 2dbc and back of 80 MB inside spmd against a raw
  mpi4py ``Alltoallv`` of the same byte counts on the same communicator;
- ``D * 2 + 1`` and ``D.sum()`` at 1e7 elements against numpy on the local part alone.
  A distributed result exists only once every lab has its part, so each is timed from a
  barrier until the last lab is done (a barrier after), ours and numpy's in turns: with
  more labs than cores, a lab's own clock mostly measures whether the scheduler gave it
  a core. Shown too: the raw program for the sum (numpy's local sum plus an mpi4py
  ``Allreduce``), and the local sum on one lab's own clock;
- ``D @ E`` with 2dbc at 2000 x 2000 against single-process numpy with one BLAS thread.

Targets (issue 3): transfers >= 0.5x raw throughput, elementwise overhead <= 10%.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"  # the single-process matmul baseline uses one BLAS thread

import argparse
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import spmdlab
from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    codistributorBlocks,
    distributed,
    gather,
    getCodistributor,
    getLocalPart,
    labindex,
    redistribute,
    spmd,
)
from spmdlab.protocol.messages import Block

from timing import median

# --------------------------------------------------------------------------- raw socket floor
RAW_LOOP = """
import struct, sys
_sock = sys.stdout._chan.sock   # this lab's socket to the client
_buf = None
while True:
    _head = bytearray(9)
    _v = memoryview(_head); _got = 0
    while _got < 9:
        _got += _sock.recv_into(_v[_got:])
    _op, _n = _head[0], struct.unpack("!Q", bytes(_head[1:]))[0]
    if _op == 0:        # stop
        break
    if _op == 1:        # receive n bytes, acknowledge
        _buf = bytearray(_n)
        _v = memoryview(_buf); _got = 0
        while _got < _n:
            _got += _sock.recv_into(_v[_got:], min(_n - _got, 1 << 24))
        _sock.sendall(b"k")
    elif _op == 2:      # send back what was received
        _sock.sendall(_buf)
"""


class RawSockets:
    """A bare byte pipe over the pool's own lab sockets (the transport floor)."""

    def __init__(self, pool):
        from spmdlab.protocol import messages as protocol

        self.pool = pool
        self.socks = [pool.main[lab].sock for lab in range(1, pool.numlabs + 1)]
        block = Block(epoch=next(pool._epochs), source=RAW_LOOP, filename="<raw>")
        frames = protocol.dumps(protocol.Exec(block), user=True, epoch=block.epoch)
        for lab in range(1, pool.numlabs + 1):
            pool.main[lab].send_frames(frames)

    def scatter(self, parts) -> None:
        for sock, part in zip(self.socks, parts):
            sock.sendall(b"\x01" + struct.pack("!Q", part.nbytes))
            sock.sendall(memoryview(part).cast("B"))
        for sock in self.socks:
            assert sock.recv(1) == b"k"

    def gather(self, out: np.ndarray, sizes) -> None:
        view = memoryview(out).cast("B")
        for sock in self.socks:
            sock.sendall(b"\x02" + struct.pack("!Q", 0))
        offset = 0
        for sock, size in zip(self.socks, sizes):
            end = offset + size
            while offset < end:
                offset += sock.recv_into(view[offset:end], min(end - offset, 1 << 24))

    def close(self) -> None:
        from spmdlab.protocol import messages as protocol

        for sock in self.socks:
            sock.sendall(b"\x00" + struct.pack("!Q", 0))
        for lab in range(1, self.pool.numlabs + 1):
            while not isinstance(self.pool.main[lab].recv(), protocol.Reply):
                pass


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def transfers(pool, mb: int, repeat: int, warmup: int = 2) -> list:
    """Ours and the raw floor in turns, round after round (so that both see the same
    machine: on 2 cores a drift between two blocks of runs moves the ratio by 0.2)."""
    n = pool.numlabs
    cols = 1000
    rows = mb * 1_000_000 // 8 // cols
    X = np.random.default_rng(0).random((rows, cols))
    nbytes = X.nbytes
    layouts = [("columns, default", None), ("rows", codistributor1d(1)), ("2dbc", codistributor2dbc()),
               ("rows, halo 1", codistributor1d(1, halo=1)), ("Dagger blocks 2500 x 250", codistributorBlocks((2500, 250)))]
    parts = np.array_split(X.reshape(-1), n)  # contiguous, already cut
    sizes = [p.nbytes for p in parts]
    out = np.empty_like(X)
    times: dict = {}

    def note(key, seconds, r):
        if r >= warmup:
            times.setdefault(key, []).append(seconds)

    cross = pool.settings.cross_memory
    ways = [(label + (", sockets" if not on else ""), codist, on) for label, codist in layouts
            for on in ([True, False] if cross else [False])]  # our socket path too, in the same rounds
    for r in range(warmup + repeat):
        for label, codist, on in ways:
            pool.settings.cross_memory = on
            made: list = []
            note(("scatter", label), _timed(lambda: made.append(distributed(X, codist, pool=pool))), r)
            D = made.pop()
            note(("gather", label), _timed(lambda: gather(D)), r)
            if r == 0:
                assert np.array_equal(gather(D), X)
            D = None  # freed on the labs with the next command
        pool.settings.cross_memory = cross
        raw = RawSockets(pool)
        note("raw scatter", _timed(lambda: raw.scatter(parts)), r)
        # gather returns a new array, so the like-for-like floor receives into a new one too
        note("raw gather", _timed(lambda: raw.gather(np.empty_like(X), sizes)), r)
        note("raw gather reused", _timed(lambda: raw.gather(out, sizes)), r)
        raw.close()
    assert np.array_equal(out, X)
    t = {key: statistics.median(v) for key, v in times.items()}
    rows_out = []
    for label, _, _ in ways:
        rows_out.append((f"distributed(X) {mb} MB ({label})", t["scatter", label], "raw socket scatter",
                         t["raw scatter"], nbytes))
        rows_out.append((f"gather(D) {mb} MB ({label})", t["gather", label], "raw socket gather into a new array",
                         t["raw gather"], nbytes))
    rows_out.append((f"  (raw socket gather into a reused array: {t['raw gather reused'] * 1e3:.1f} ms)",
                     None, "", 0, 0))
    return rows_out


def redistribute_vs_alltoallv(pool, mb: int, repeat: int, back: bool = False):
    """``redistribute`` 1d (columns) -> 2dbc (``back``: 2dbc -> 1d) and a raw ``Alltoallv``
    of the same byte counts, in turns."""
    cols = 1000
    rows = mb * 1_000_000 // 8 // cols
    with spmd(pool=pool):
        import time as _time

        from spmdlab.lab import comm as _comm
        from spmdlab.layouts.plan import transfer_plan as _plan

        _c = _comm.block()
        _src, _target = codistributor1d(2), codistributor2dbc()
        if back:
            _src, _target = _target, _src
        _D = codistributed.rand(rows, cols, codist=_src, seed=1)
        _me, _n = _c.Get_rank() + 1, _c.Get_size()
        _p = _plan(getCodistributor(_D), _target, _n, (rows, cols), lab=_me)
        _sc = np.array([t.size * 8 for t in _p[_me - 1]], dtype=np.int64)
        _rc = np.array([_p[s][_me - 1].size * 8 for s in range(_n)], dtype=np.int64)
        _sb = np.ones(int(_sc.sum()), dtype=np.uint8)
        _rb = np.empty(int(_rc.sum()), dtype=np.uint8)

        def _timed(_f):
            _c.Barrier()
            _t = _time.perf_counter()
            _f()
            _c.Barrier()
            return _time.perf_counter() - _t

        _ours, _raw = [], []
        for _i in range(repeat + 1):  # in turns, the first round a warm-up
            _ours.append(_timed(lambda: redistribute(_D, _target)))
            _raw.append(_timed(lambda: _c.Alltoallv([_sb, _sc], [_rb, _rc])))
        times = tuple(sorted(_x[1:])[len(_x[1:]) // 2] for _x in (_ours, _raw))
        total = int(_c.allreduce(int(_sc.sum())))
    t_ours, t_raw = times[1]
    return t_ours, t_raw, total[1]


def elementwise(pool, repeat: int):
    with spmd(pool=pool):
        import time as _time

        from spmdlab.lab import comm as _comm

        _c = _comm.block()
        _D = codistributed.rand((10 ** 7,), seed=2)
        _L = getLocalPart(_D)

        def _timed(_f, _every=True):
            _c.Barrier()
            _t = _time.perf_counter()
            _f()
            if _every:  # until every lab is done
                _c.Barrier()
            return _time.perf_counter() - _t

        def _meds(*_fs, _every=True):
            """Medians of the functions, timed in turns so that each sees the same
            scheduler (with more labs than cores, that matters more than anything)."""
            for _f in _fs:
                _f()
            _ts = [[_timed(_f, _every) for _f in _fs] for _ in range(repeat)]
            return [sorted(_col)[len(_col) // 2] for _col in zip(*_ts)]

        _one, _total = np.zeros(1), np.zeros(1)

        def _raw_sum():  # what a raw mpi4py program does: local numpy sum, then Allreduce
            _one[0] = _L.sum()
            _c.Allreduce(_one, _total)

        times = (*_meds(lambda: _D * 2 + 1, lambda: _L * 2 + 1),
                 *_meds(lambda: _D.sum(), lambda: _L.sum(), _raw_sum),
                 *_meds(lambda: _L.sum(), _every=False))
        check = float(_D.sum())
    return times[1]


def matmul(pool, repeat: int, size: int = 2000):
    A = np.random.default_rng(3).random((size, size))
    B = np.random.default_rng(4).random((size, size))
    t_numpy = median(lambda: A @ B, max(1, repeat // 2))
    with spmd(pool=pool):
        import time as _time

        from spmdlab.lab import comm as _comm

        _c = _comm.block()
        _D = codistributed(A, codistributor2dbc())
        _E = codistributed(B, codistributor2dbc())
        _F = _D @ _E
        _ts = []
        for _ in range(max(1, repeat // 2)):
            _c.Barrier()
            _t = _time.perf_counter()
            _F = _D @ _E
            _c.Barrier()
            _ts.append(_time.perf_counter() - _t)
        t_ours = sorted(_ts)[len(_ts) // 2]
        _G = gather(_F, 1)  # a collective: every lab calls it
        ok = bool(np.allclose(_G, A @ B)) if labindex() == 1 else True
        del _G
    assert ok[1], "D @ E differs from numpy"
    return t_ours[1], t_numpy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, nargs="+", default=[4, 2],
                        help="pool sizes, one table each (default: 4 2; with fewer cores than "
                             "labs, labs share cores and every collective waits for the scheduler)")
    parser.add_argument("--mb", type=int, default=80)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS),
                        help="which tables' rows to time (default: all)")
    args = parser.parse_args()
    for labs in args.labs:
        run(labs, args.mb, args.repeat, frozenset(args.parts))


PARTS = ("transfers", "redistribute", "elementwise", "matmul")


def run(labs: int, mb: int, repeat: int, parts: frozenset = frozenset(PARTS)) -> None:
    pool = spmdlab.parpool(labs)
    rows = []

    def add(op, ours, base_label, base, nbytes=None, kind="throughput"):
        if ours is None and not base_label:
            rows.append((op, "", "", ""))
            return
        if ours is None:
            rows.append((op, "n/a", f"{base_label} {base * 1e3:.1f} ms", "n/a"))
            return
        if nbytes:
            ours_txt = f"{ours * 1e3:.1f} ms ({nbytes / ours / 1e9:.2f} GB/s)"
            base_txt = f"{base_label} {base * 1e3:.1f} ms ({nbytes / base / 1e9:.2f} GB/s)"
        else:
            ours_txt, base_txt = f"{ours * 1e3:.2f} ms", f"{base_label} {base * 1e3:.2f} ms"
        if kind == "throughput":
            ratio = f"{base / ours:.2f}x raw throughput"
        elif kind == "overhead":
            ratio = f"{(ours / base - 1) * 100:+.0f}% overhead"
        else:
            ratio = f"{base / ours:.2f}x speed-up"
        rows.append((op, ours_txt, base_txt, ratio))

    for op, ours, label, base, nbytes in transfers(pool, mb, repeat) if "transfers" in parts else []:
        add(op, ours, label, base, nbytes)
    for back, name in ((False, "1d->2dbc"), (True, "2dbc->1d")) if "redistribute" in parts else ():
        t_ours, t_raw, total = redistribute_vs_alltoallv(pool, mb, repeat, back)
        add(f"redistribute {name} {mb} MB ({total / 1e6:.0f} MB move)", t_ours, "raw Alltoallv", t_raw, total)
    ew = elementwise(pool, repeat * 3) if "elementwise" in parts else None
    if ew is not None:
        add("D * 2 + 1, 1e7 elements", ew[0], "numpy on the local part", ew[1], kind="overhead")
        add("D.sum(), 1e7 elements, until every lab is done", ew[2], "numpy on the local part", ew[3],
            kind="overhead")
        add("  (same run, raw)", ew[2], "numpy local sum + mpi4py Allreduce", ew[4], kind="overhead")
        add(f"  (numpy local sum on one lab, not waiting for the others: {ew[5] * 1e3:.2f} ms)", None, "", 0)
    if "matmul" in parts:
        t_mm, t_np = matmul(pool, repeat)
        add("D @ E 2dbc, 2000 x 2000", t_mm, "numpy, 1 process, 1 BLAS thread", t_np, kind="speedup")
    pool.close()

    header = ("operation", f"spmdlab ({labs} labs)", "baseline, same run", "ratio")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(4)]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    print(f"\n{os.cpu_count()} CPU cores; labs run with one BLAS thread each.\n")


if __name__ == "__main__":
    main()

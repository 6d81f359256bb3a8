"""Core runtime timings against raw transports, in the same run (issue 2, item 7).

    python benchmarks/bench_core.py [--labs 4] [--repeat 300]

Prints medians and the ratio spmdlab / raw:
- empty block: ``with spmd(): pass`` round trip vs. the raw floor: the same client sends
  a small pickled message to each lab over the same kind of socket and waits for each
  reply, and vs. an mpi4py bcast+gather round trip among the labs themselves;
- Composite read ``c[2]`` vs. a raw socket request/reply with the same payload;
- pool start-up (``parpool(n)``: mpiexec, imports, MPI init, connections) vs. a bare
  ``mpiexec -n N python -c "from mpi4py import MPI"`` job;
- ipyparallel's ``view.execute`` per command and its cluster start, if installed.

    python benchmarks/bench_core.py --scaling 2 4 8 16 32 [--tree both]

prints, per pool size, the client's CPU time per empty block (``time.process_time``, so
an oversubscribed pool is fine: the labs' turns do not count) and the block's wall time,
with the tree fan-out on and off (``SPMDLAB_TREE``), each against the 2-lab figure.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import spmdlab
from spmdlab import Composite, spmd
from spmdlab.protocol.messages import Block

from timing import median


def median_ms(fn, repeat: int) -> float:
    return median(fn, repeat, warmup=min(20, repeat)) * 1e3


ECHO_LOOP = """
import sys
chan = sys.stdout._chan  # this lab's end of its socket to the client
while True:
    message = chan.recv()
    chan.send(message)
    if message == "stop":
        break
"""


def raw_socket_round_trip(pool, repeat: int) -> tuple[float, float]:
    """The transport floor: a small pickled message to every lab over the pool's own
    sockets and a reply from each, answered by a bare echo loop (no block machinery)."""
    from spmdlab.protocol import messages as protocol

    chans = [pool.main[lab] for lab in range(1, pool.numlabs + 1)]
    block = Block(epoch=next(pool._epochs), source=ECHO_LOOP, filename="<echo>")
    frames = protocol.dumps(protocol.Exec(block), user=True, epoch=block.epoch)
    for chan in chans:
        chan.send_frames(frames)

    def once():
        for chan in chans:
            chan.send("ping")
        for chan in chans:
            chan.recv()

    def one_lab():
        chans[1].send("ping")
        chans[1].recv()

    ms = median_ms(once, repeat), median_ms(one_lab, repeat)
    for chan in chans:
        chan.send("stop")
        assert chan.recv() == "stop"
        while not isinstance(chan.recv(), protocol.Reply):
            pass
    return ms


def mpi_round_trip(pool, repeat: int) -> float:
    """Among the labs: rank 0 bcasts a small object and gathers one back, mpi4py only."""
    with spmd(pool=pool):
        import time as _time

        from spmdlab.lab import comm as _comm

        _c = _comm.block()
        for _ in range(50):
            _c.bcast("x", 0)
            _c.gather(1, 0)
        _c.Barrier()
        _t = []
        for _ in range(repeat):
            _s = _time.perf_counter()
            _c.bcast("x", 0)
            _c.gather(1, 0)
            _t.append(_time.perf_counter() - _s)
        _t.sort()
        mpi_ms = _t[len(_t) // 2] * 1e3
    return mpi_ms[1]


def start_times(n: int, tries: int = 3) -> tuple[float, float]:
    ours, raw = [], []
    mpiexec = spmdlab.settings.load().launcher()
    for _ in range(tries):
        t = time.perf_counter()
        pool = spmdlab.Pool(n)
        ours.append(time.perf_counter() - t)
        pool.close()
        t = time.perf_counter()
        subprocess.run([*mpiexec, "-n", str(n), sys.executable, "-c", "import numpy; from mpi4py import MPI"],
                       check=True)
        raw.append(time.perf_counter() - t)
    return statistics.median(ours), statistics.median(raw)


def ipyparallel_times(n: int, repeat: int):
    try:
        import ipyparallel as ipp
    except ImportError:
        return None
    t = time.perf_counter()
    cluster = ipp.Cluster(n=n)
    rc = cluster.start_and_connect_sync()
    start = time.perf_counter() - t
    view = rc[:]
    ms = median_ms(lambda: view.execute("pass", block=True), repeat)
    cluster.stop_cluster_sync()
    return ms, start


_MODES = {None: "default", True: "tree", False: "direct"}


def client_cost(n: int, tree: bool | None, repeat: int) -> tuple[float, float]:
    """(client CPU ms, wall ms) per empty block on ``n`` labs: medians of 5 batches
    (``tree`` None: the pool's default)."""
    pool = spmdlab.Pool(n) if tree is None else spmdlab.Pool(n, tree=tree)
    try:
        def empty():
            with spmd(pool=pool):
                pass

        for _ in range(min(50, repeat)):
            empty()
        cpus, walls = [], []
        batch = max(1, repeat // 5)
        for _ in range(5):
            c, t = time.process_time(), time.perf_counter()
            for _ in range(batch):
                empty()
            cpus.append((time.process_time() - c) / batch * 1e3)
            walls.append((time.perf_counter() - t) / batch * 1e3)
        return statistics.median(cpus), statistics.median(walls)
    finally:
        pool.close()


def scaling(sizes: list[int], modes: list, repeat: int) -> dict:
    """Client CPU and wall per empty block for each pool size and fan-out mode."""
    found: dict = {}
    for tree in modes:
        for n in sizes:
            found[(tree, n)] = client_cost(n, tree, repeat)
    print(f"load: {os.getloadavg()[0]:.1f}")
    print("labs | mode    | client CPU ms | x 2 labs | wall ms | x 4 labs")
    for tree in modes:
        first = found[(tree, sizes[0])][0]
        four = found.get((tree, 4), found[(tree, sizes[0])])[1]
        for n in sizes:
            cpu, wall = found[(tree, n)]
            print(f"{n:4d} | {_MODES[tree]:7s} | {cpu:13.3f} | {cpu / first:8.2f} | {wall:7.3f} | "
                  f"{wall / four:8.2f}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--scaling", type=int, nargs="*", help="pool sizes: client CPU per empty block")
    parser.add_argument("--no-start", action="store_true", help="skip the pool start-up timings")
    parser.add_argument("--tree", choices=["on", "off", "both", "default"], default="both", help="fan-out modes to time")
    args = parser.parse_args()
    n, repeat = args.labs, args.repeat
    if args.scaling:
        modes = {"on": [True], "off": [False], "both": [False, True], "default": [None]}[args.tree]
        scaling(args.scaling, modes, repeat)
        return

    pool = spmdlab.parpool(n)

    def empty():
        with spmd(pool=pool):
            pass

    empty_ms = median_ms(empty, repeat)
    c = Composite(pool=pool)
    c[2] = 12345
    read_ms = median_ms(lambda: c[2], repeat)
    raw_ms, raw_one = raw_socket_round_trip(pool, repeat)
    mpi_ms = mpi_round_trip(pool, repeat)
    pool.close()
    start_s, raw_start_s = start_times(n) if not args.no_start else (float("nan"), float("nan"))
    ipp = ipyparallel_times(n, min(repeat, 100)) if not args.no_start else None

    rows = [
        ("empty spmd block (median)", f"{empty_ms:.3f} ms", f"raw socket round trip to {n} labs {raw_ms:.3f} ms",
         f"{empty_ms / raw_ms:.1f}x"),
        ("", "", f"mpi4py bcast+gather among labs {mpi_ms:.3f} ms", f"{empty_ms / mpi_ms:.1f}x"),
        ("Composite read c[2]", f"{read_ms:.3f} ms", f"raw socket round trip to lab 2 {raw_one:.3f} ms",
         f"{read_ms / raw_one:.1f}x"),
        (f"pool start ({n} labs)", f"{start_s:.2f} s", f"bare mpiexec+numpy+mpi4py job {raw_start_s:.2f} s",
         f"{start_s / raw_start_s:.1f}x"),
    ]
    if ipp:
        rows.append(("ipyparallel view.execute", f"{ipp[0]:.3f} ms", "", f"ours {ipp[0] / empty_ms:.0f}x faster"))
        rows.append(("ipyparallel cluster start", f"{ipp[1]:.2f} s", "", f"ours {ipp[1] / start_s:.0f}x faster"))
    else:
        rows.append(("ipyparallel", "not installed", "", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    header = ("operation", "spmdlab", "raw, same run", "ratio")
    widths = [max(w, len(h)) for w, h in zip(widths, header)]
    line = " | ".join(h.ljust(w) for h, w in zip(header, widths))
    print(line)
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths)))


if __name__ == "__main__":
    main()

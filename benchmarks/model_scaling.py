"""A model of the empty spmd block at 64-4,096 labs, from measured per-message costs
(issue 22), checked against measured 2-32 lab pools.

    python benchmarks/model_scaling.py [--measure 2 4 8 16 32] [--repeat 200]

What it measures, on this machine, in this run:
- the client's cost per lab of the direct path: pickling is shared, so per lab it is one
  ``send_frames`` of the block's frame and one ``recv`` + decode of an empty ``done``
  reply (a socket pair in this process, medians), plus the selector's wake-up per reply;
- the client's cost per lab of the tree path: decoding one lab's code of a ``Gathered``
  (``protocol.tree.replies`` of a 4,096-lab answer, per lab);
- the labs' MPI step ``alpha``: half a broadcast+gather round trip between 2 labs
  (one tree level each way);
- the client's CPU per empty block at the ``--measure`` sizes, direct and tree
  (``bench_core.client_cost``, ``time.process_time``: valid on an oversubscribed pool).

The model:
- direct: client CPU ``c0 + n * (send + recv + wake)``; the labs answer in parallel, so
  the wall time is the client's serial work plus one socket round trip and a lab's work;
- tree: client CPU ``c0 + n * decode`` (one send, one receive); wall adds the leader's
  broadcast and gather, binomial trees of ``ceil(log2 n)`` levels each
  (``2 * ceil(log2 n) * alpha``), and the gather's ``n * SLOT`` bytes at lab 1.
``c0`` is fitted to the 2-lab measurement of each path; the other measured sizes check
the slope. Labs are assumed to have a core each (a cluster): the wall figures are not
those of an oversubscribed machine, where every MPI level waits for a lab's turn.
"""
from __future__ import annotations

import argparse
import math
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import spmdlab
from spmdlab.protocol import messages as protocol
from spmdlab.protocol import tree
from spmdlab.protocol.channel import Channel
from spmdlab.protocol.messages import Block, Done, Exec, Gathered, Reply

SIZES = (64, 256, 1024, 4096)


def _median_us(fn, repeat: int = 2000) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def per_message_costs() -> dict[str, float]:
    """Microseconds per lab of the client's work on each path."""
    a, b = socket.socketpair()
    client, lab = Channel(a), Channel(b)
    block = Block(source="    pass\n", filename="/tmp/x.py").stamped(1, False, ())
    frames = protocol.dumps(Exec(block), False, 1)
    reply = protocol.dumps(Reply("done", 2, 1, Done()), False, 1)

    def send():
        client.send_frames(frames)
        lab.recv()  # drain (timed apart below)

    drain = _median_us(lambda: (lab.send_frames(frames), client.recv()))
    send_us = max(0.0, _median_us(send) - drain / 2)

    def recv():
        lab.send_frames(reply)
        client.recv()

    recv_us = _median_us(recv) - send_us / 2
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(a, selectors.EVENT_READ)
    wake_us = _median_us(lambda: (lab.send_frames(reply), sel.select(0), client.recv())) - recv_us - send_us / 2
    sel.close()
    a.close()
    b.close()
    n = 4096
    gathered = Gathered(1, bytes(n))
    decode_us = _median_us(lambda: tree.replies(gathered), 50) / n
    return {"send": send_us, "recv": recv_us, "wake": max(wake_us, 0.0), "decode": decode_us}


def mpi_alpha(repeat: int) -> float:
    """Microseconds of one MPI tree level between 2 labs (a bcast+gather round trip / 2)."""
    import bench_core

    pool = spmdlab.Pool(2)
    try:
        return bench_core.mpi_round_trip(pool, repeat) * 1e3 / 2
    finally:
        pool.close()


def model(n: int, c0: float, per_lab: float, alpha: float = 0.0, tree_path: bool = False,
          slot_us_per_lab: float = 0.0) -> tuple[float, float]:
    """(client CPU µs, wall µs beyond the client's and one lab's work) of an empty block."""
    cpu = c0 + n * per_lab
    extra = 2 * math.ceil(math.log2(max(n, 2))) * alpha + n * slot_us_per_lab if tree_path else 0.0
    return cpu, cpu + extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", type=int, nargs="*", default=[2, 4, 8, 16, 32])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--alpha", type=float, help="µs of one MPI tree level (else measured on 2 labs)")
    parser.add_argument("--points", nargs="*", default=[], metavar="PATH:LABS:CPU_MS",
                        help="measured client CPU per block (e.g. direct:2:0.178 tree:2:0.154) instead of --measure")
    args = parser.parse_args()
    import bench_core

    costs = per_message_costs()
    alpha = args.alpha if args.alpha is not None else mpi_alpha(args.repeat)
    print(f"load {os.getloadavg()[0]:.1f}; per lab, µs: send {costs['send']:.2f}, recv+decode {costs['recv']:.2f}, "
          f"selector wake {costs['wake']:.2f}, Gathered decode {costs['decode']:.3f}; MPI level alpha {alpha:.1f}")
    measured = {}
    for point in args.points:
        path, labs, cpu_ms = point.split(":")
        measured[(path == "tree", int(labs))] = (float(cpu_ms) * 1e3, float("nan"))
    for n in [] if args.points else args.measure:
        for tree_path in (False, True):
            cpu, wall = bench_core.client_cost(n, tree_path, args.repeat)
            measured[(tree_path, n)] = (cpu * 1e3, wall * 1e3)
    sizes = sorted({n for _, n in measured})
    direct_lab = costs["send"] + costs["recv"] + costs["wake"]
    slot_us = tree.SLOT / 5e3  # bytes at ~5 GB/s into lab 1
    first = sizes[0]
    c0_direct = measured[(False, first)][0] - first * direct_lab
    c0_tree = measured[(True, first)][0] - first * costs["decode"]
    print("\nlabs | path   | client CPU µs model | measured | wall µs model (1 lab/core) | measured wall µs")
    for n in [*sizes, *SIZES]:
        for tree_path, c0, per in ((False, c0_direct, direct_lab), (True, c0_tree, costs["decode"])):
            cpu, wall = model(n, c0, per, alpha, tree_path, slot_us)
            got = measured.get((tree_path, n))
            seen = f"{got[0]:8.0f} | {got[1]:8.0f}" if got else "       - |        -"
            if got is None and n in sizes:
                continue
            print(f"{n:4d} | {'tree' if tree_path else 'direct':6s} | {cpu:19.0f} | {seen.split(' | ')[0]} | "
                  f"{wall:26.0f} | {seen.split(' | ')[1]}")
    cpu, wall = model(1024, c0_tree, costs["decode"], alpha, True, slot_us)
    dcpu, dwall = model(1024, c0_direct, direct_lab)
    print(f"\nprediction, 1,024 labs: tree {wall / 1e3:.2f} ms a block (client CPU {cpu / 1e3:.2f} ms); "
          f"direct {dwall / 1e3:.2f} ms (client CPU {dcpu / 1e3:.2f} ms)")


if __name__ == "__main__":
    main()

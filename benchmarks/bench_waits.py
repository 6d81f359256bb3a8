"""How spmdlab's waits fare alone and beside idle MPI neighbours (issues 22 and 23).

    python benchmarks/bench_waits.py [--labs 2 4] [--repeat 9] [--no-neighbours]

One pool per wait policy runs side by side (``SPMDLAB_WAIT``: ``poll``, the earlier
waits: test, yield for 2 ms, then sleep between tests; ``spin``: a 5 ms tight loop of
tests first; ``yield``: yielding for 50 ms before sleeping; ``block``: a blocking MPI ``Waitany`` beside a wake-up receive), their rounds
in turns; each figure is also timed as the raw mpi4py program on the same labs (a blocking
MPI call), in the same round. Then the same again with two idle MPI processes polling on
the machine (``neighbours.idle_neighbours``). Workloads, each timed from a barrier to a
barrier on the labs (medians):
- ``D.sum()`` of 1e7 float64 against numpy's local sum + ``Allreduce``;
- 200 scalar ``gplus`` (latency) against 200 ``allreduce`` of one float;
- ``redistribute`` 1d -> 2dbc of 40 MB against ``Alltoallv`` of the same byte counts;
- ``D @ E`` 2dbc at 1500 x 1500 (its panels move with nonblocking broadcasts).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from neighbours import idle_neighbours

import spmdlab
from spmdlab import spmd_run

from timing import between_barriers


def _lab_setup() -> dict:
    """On each lab: the workloads, ``name -> (ours, raw or None)``, and the barrier."""

    import numpy as np

    from spmdlab import (
        codistributed,
        codistributor1d,
        codistributor2dbc,
        getCodistributor,
        getLocalPart,
        gplus,
        redistribute,
    )
    from spmdlab.lab import comm
    from spmdlab.layouts.plan import transfer_plan

    c = comm.block()
    me, n = c.Get_rank() + 1, c.Get_size()
    S = codistributed.rand((10 ** 7,), seed=2)
    L = getLocalPart(S)
    one, tot = np.zeros(1), np.zeros(1)
    R = codistributed.rand(5000, 1000, codist=codistributor1d(2), seed=1)
    T = codistributor2dbc()
    p = transfer_plan(getCodistributor(R), T, n, (5000, 1000), lab=me)
    sc = np.array([t.size * 8 for t in p[me - 1]], dtype=np.int64)
    rc = np.array([p[s][me - 1].size * 8 for s in range(n)], dtype=np.int64)
    sb = np.ones(int(sc.sum()), dtype=np.uint8)
    rb = np.empty(int(rc.sum()), dtype=np.uint8)
    A = codistributed.rand(1500, 1500, codist=codistributor2dbc(), seed=3)
    B = codistributed.rand(1500, 1500, codist=codistributor2dbc(), seed=4)

    def raw_sum():
        one[0] = L.sum()
        c.Allreduce(one, tot)

    def gplus_chain():
        for _ in range(200):
            gplus(1.0)

    def raw_chain():
        for _ in range(200):
            c.allreduce(1.0)

    work = {
        "D.sum() 1e7": (lambda: S.sum(), raw_sum),
        "200 x gplus(scalar)": (gplus_chain, raw_chain),
        "redistribute 1d->2dbc 40 MB": (lambda: redistribute(R, T), lambda: c.Alltoallv([sb, sc], [rb, rc])),
        "D @ E 2dbc 1500": (lambda: A @ B, None),
    }
    return {"work": work, "barrier": c.Barrier}


def _lab_round(env: dict) -> dict:
    barrier = env["barrier"]
    return {k: (between_barriers(barrier, ours), between_barriers(barrier, raw) if raw is not None else None)
            for k, (ours, raw) in env["work"].items()}


def _round(pool, env) -> dict:
    return spmd_run(_lab_round, env, pool=pool)[1]


def _phase(pools: dict, envs: dict, repeat: int) -> dict:
    times: dict = {}
    for policy, pool in pools.items():
        _round(pool, envs[policy])  # warm-up
    for _ in range(repeat):
        for policy, pool in pools.items():
            for k, (ours, raw) in _round(pool, envs[policy]).items():
                times.setdefault((policy, k), []).append((ours, raw))
    return {key: (statistics.median(o for o, _ in v),
                  statistics.median(r for _, r in v) if v[0][1] is not None else None)
            for key, v in times.items()}


def run(labs: int, repeat: int, neighbours: bool, policies: list) -> None:
    pools = {}
    for policy in policies:
        os.environ["SPMDLAB_WAIT"] = policy
        pools[policy] = spmdlab.Pool(labs)
    os.environ.pop("SPMDLAB_WAIT", None)
    try:
        envs = {policy: spmd_run(_lab_setup, pool=pool) for policy, pool in pools.items()}
        phases = [("alone", False)] + ([("2 idle MPI neighbours", True)] if neighbours else [])
        for name, on in phases:
            with idle_neighbours(enabled=on):
                t = _phase(pools, envs, repeat)
            print(f"\n{labs} labs, {name} (load {os.getloadavg()[0]:.1f}):")
            print(f"{'workload':32} | " + " | ".join(f"{p:>24}" for p in policies) + f" | ratios to {policies[0]}")
            for k in sorted({k for _, k in t}):
                cells = []
                for policy in policies:
                    ours, raw = t[policy, k]
                    ratio = f" ({ours / raw:.2f}x raw)" if raw else ""
                    cells.append(f"{ours * 1e3:8.2f} ms{ratio:>14}")
                ratios = " ".join(f"{t[p, k][0] / t[policies[0], k][0]:.2f}" for p in policies[1:])
                print(f"{k:32} | " + " | ".join(f"{c:>24}" for c in cells) + f" | {ratios}")
    finally:
        for pool in pools.values():
            pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--no-neighbours", action="store_true")
    parser.add_argument("--policies", nargs="+", default=["poll", "spin", "yield", "block"],
                        help="SPMDLAB_WAIT values, one pool each (poll: the earlier waits)")
    args = parser.parse_args()
    for labs in args.labs:
        run(labs, args.repeat, not args.no_neighbours, args.policies)


if __name__ == "__main__":
    main()

"""The stall check costs nothing on the normal path (issue 19, item 4): an empty block and
a block with ``D.sum()``, with the check and without it, in the same run.

    python benchmarks/bench_stall_check.py [--labs 4] [--repeat 400]
    git archive <old commit> | tar -x -C /tmp/base
    python benchmarks/bench_stall_check.py --baseline /tmp/base [--rounds 4]

Without ``--baseline``: one pool, each block timed with the check on and off in turns
(``spmdlab.client.stall.ENABLED``, the client's switch; the labs' side of the check is one
counter increment in a wait that already had to wait). With ``--baseline``: each round
starts one fresh pool per checkout (alternating which goes first); ratio this/baseline
per round and its median.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(labs: int, repeat: int) -> dict:
    """Medians (ms) of an empty block and of ``s = D.sum()`` on a fresh pool of ``labs``."""
    sys.path.insert(0, os.path.join(HERE, "benchmarks"))
    import spmdlab
    from spmdlab import codistributed, spmd

    from timing import median

    with spmdlab.Pool(labs) as pool:
        with spmd(pool=pool):
            import spmdlab as lab_spmdlab
            where = lab_spmdlab.__file__
            D = codistributed.rand(1000, 1000)

        def empty():
            with spmd(pool=pool):
                pass

        def total():
            with spmd(pool=pool):
                s = D.sum()

        return {"code": os.path.dirname(spmdlab.__file__), "labs_code": os.path.dirname(where[1]),
                "empty": median(empty, repeat, warmup=20) * 1e3, "sum": median(total, repeat, warmup=20) * 1e3}


def switched(labs: int, repeat: int) -> None:
    """Paired timings on one pool: every repetition times each block with the check on
    and off, in alternating order, so load changes hit both alike."""
    import time

    import spmdlab
    from spmdlab import codistributed, spmd
    from spmdlab.client import stall

    with spmdlab.Pool(labs) as pool:
        with spmd(pool=pool):
            D = codistributed.rand(1000, 1000)

        def empty():
            with spmd(pool=pool):
                pass

        def total():
            with spmd(pool=pool):
                s = D.sum()

        print(f"{'block':>14} {'check on ms':>12} {'check off ms':>13} {'on/off':>7}  (median of {repeat} pairs)")
        for name, fn in (("empty", empty), ("D.sum()", total)):
            times: dict[bool, list[float]] = {True: [], False: []}
            for i in range(repeat + 20):
                for enabled in ((True, False) if i % 2 else (False, True)):
                    stall.ENABLED = enabled
                    t = time.perf_counter()
                    fn()
                    if i >= 20:
                        times[enabled].append(time.perf_counter() - t)
            stall.ENABLED = True
            on, off = (statistics.median(times[k]) * 1e3 for k in (True, False))
            print(f"{name:>14} {on:>12.3f} {off:>13.3f} {on / off:>7.3f}")


def run(code: str, labs: int, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (code, os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", "--labs", str(labs),
                          "--repeat", str(repeat)], env=env, capture_output=True, text=True, check=True, cwd="/")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    expected = os.path.join(os.path.abspath(code), "spmdlab")
    assert result["code"] == expected and result["labs_code"] == expected, (result, expected)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a checkout of the commit to compare with")
    parser.add_argument("--labs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=400)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.labs, args.repeat)))
        return
    if not args.baseline:
        switched(args.labs, args.repeat)
        return
    ratios: dict[str, list[float]] = {"empty": [], "sum": []}
    print(f"{'round':>5} {'checkout':>9} {'empty block ms':>15} {'D.sum() ms':>11}")
    for r in range(args.rounds):
        order = [("this", HERE), ("baseline", args.baseline)]
        if r % 2:
            order.reverse()
        got = {name: run(code, args.labs, args.repeat) for name, code in order}
        for name, _ in order:
            print(f"{r + 1:>5} {name:>9} {got[name]['empty']:>15.3f} {got[name]['sum']:>11.3f}")
        for key in ratios:
            ratios[key].append(got["this"][key] / got["baseline"][key])
    for key, label in (("empty", "empty block"), ("sum", "D.sum() block")):
        rs = ", ".join(f"{x:.3f}" for x in ratios[key])
        print(f"{label}: this/baseline per round {rs}; median {statistics.median(ratios[key]):.3f}")


if __name__ == "__main__":
    main()

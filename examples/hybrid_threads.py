"""Labs and threads: PDL::ParallelCPU's auto-threading inside each lab.

Processes (labs) split an array between them; inside a lab, an elementwise operation or a
reduction on a large local part is split again over threads (numpy releases the GIL).
PDL's calls, under spmdlab's names:

    set_autopthread_targ(2)     ->  set_autothread_targ(2)   or parpool(n, threads=2)
    set_autopthread_size(1)     ->  set_autothread_size(1)   (mega-elements; smaller: 1 thread)
    get_autopthread_actual()    ->  get_autothread_actual()
    PDL_AUTOPTHREAD_TARG/SIZE   ->  SPMDLAB_AUTOTHREAD_TARG/SIZE

By default a lab uses max(1, cores // labs on this machine) threads, so labs x threads
never oversubscribe the cores. At the client, a distributed array smaller than
SPMDLAB_DISTRIBUTE_SIZE (10^6 elements) stays whole on lab 1: spreading 16 numbers over
4 labs costs more in messages than it saves. ``D.numlabs_used`` says where it went.

Run:  python examples/hybrid_threads.py [--labs N] [--threads T] [--size ELEMENTS]
"""
import os
import time

import numpy as np

from spmdlab import (
    distributed,
    gather,
    get_autothread_actual,
    get_autothread_targ,
    parpool,
    set_autothread_size,
    set_autothread_targ,
)

from common import check, check_close, check_equal, labs_text, parse_args, report

args = parse_args(__doc__, size=4_000_000, size_help="elements of the large array",
                  threads=(0, "threads per lab (0: the default, max(1, cores // labs))"),
                  split_at=(0.1, "mega-elements from which a lab's part is split over threads"))
cores = len(os.sched_getaffinity(0))

with parpool(args.labs, threads=args.threads or None) as pool:
    n = pool.numlabs
    targ = get_autothread_targ()
    print(f"{labs_text(n)} x {targ} thread{'s' if targ > 1 else ''} each on {cores} cores "
          f"({'as asked' if args.threads else 'the default: max(1, cores // labs)'})")
    if not args.threads:
        check_equal("the default thread count fits the cores", targ, max(1, cores // n))

    # 1. Small arrays stay on one lab; large ones spread (SPMDLAB_DISTRIBUTE_SIZE).
    small = distributed.rand(4)  # MATLAB's rand(4): 4 x 4, 16 elements
    x = np.random.default_rng(1).random(args.size)
    D = distributed(x)
    print(f"distributed.rand(4): {small.numlabs_used} lab holds it; "
          f"distributed of {args.size:,} elements: {D.numlabs_used} labs hold it")
    check_equal("a 4 x 4 array stays whole on one lab", small.numlabs_used, 1)
    if args.size >= 1_000_000:
        check_equal("an array of 10^6 elements or more spreads over every lab", D.numlabs_used, n)
    else:
        check_equal("an array under 10^6 elements stays on one lab", D.numlabs_used, 1)

    # 2. Above the size, operations on each lab's part are split over the threads.
    set_autothread_size(args.split_at)
    E = D * 2 + 1
    used = get_autothread_actual()
    total = D.sum()
    print(f"D * 2 + 1 and D.sum() used up to {used} thread{'s' if used > 1 else ''} per lab "
          f"(parts of {args.size // D.numlabs_used:,} elements, split from {args.split_at:g} M)")
    part = args.size // D.numlabs_used
    check_equal("the threads used follow the size threshold", used, targ if part >= args.split_at * 1e6 else 1)
    check("D * 2 + 1 is bitwise numpy's result", np.array_equal(gather(E), x * 2 + 1))
    check_close("D.sum() equals numpy's sum to rounding", total, x.sum())

    # 3. One thread against the threads, on the same labs and data.
    def seconds(op, repeat=5):
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            op()
            best = min(best, time.perf_counter() - t)
        return best

    timings = {}
    for t in sorted({1, targ}):
        set_autothread_targ(t)
        timings[t] = (seconds(lambda: D * 2 + 1), seconds(lambda: D.sum()))
    set_autothread_targ(targ)
    for t, (a, b) in timings.items():
        print(f"  {t} thread{'s' if t > 1 else ' '} per lab: D * 2 + 1 {a * 1e3:7.1f} ms, D.sum() {b * 1e3:6.1f} ms")
    print("(one measurement at the client, round trips included; a machine shared with other work "
          "gives threads of one lab less than it gives separate labs)")

report()

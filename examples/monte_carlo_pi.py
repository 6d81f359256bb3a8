"""Monte Carlo pi: every lab throws its share of darts at the unit square, gplus adds the hits.

The MATLAB original:

    spmd
        hits = 0;
        for c = labindex:numlabs:nchunks          % lab k takes chunks k, k+numlabs, ...
            xy = rand(chunk, 2);
            hits = hits + nnz(sum(xy.^2, 2) <= 1);
        end
        total = gplus(hits);                      % every lab gets the sum
    end
    piEstimate = 4 * total{1} / N

The work is cut into chunks, and each chunk draws from its own random stream, seeded
by (seed, chunk number). Which lab runs a chunk does not change its darts, so the count
is the same on 1 lab, on 4 labs, and in the serial numpy loop of the self-check.

Run:  python examples/monte_carlo_pi.py [--labs N] [--size SAMPLES]
"""
import math
import os
import time

import numpy as np

from spmdlab import gplus, labindex, numlabs, parpool, spmd

from common import check, check_equal, labs_text, parse_args, report

args = parse_args(__doc__, size=16_000_000, size_help="number of darts (random points)",
                  chunks=(64, "number of chunks the darts are cut into"),
                  seed=(2024, "random seed"))
N, nchunks, seed = args.size, args.chunks, args.seed
# Chunk c (0-based) throws chunk_sizes[c] darts; they add up to N.
chunk_sizes = [N // nchunks + (c < N % nchunks) for c in range(nchunks)]


def chunk_hits(c):
    """How many of chunk c's darts land inside the quarter circle x^2 + y^2 <= 1."""
    rng = np.random.default_rng([seed, c])
    xy = rng.random((chunk_sizes[c], 2))
    return int(np.count_nonzero((xy * xy).sum(axis=1) <= 1.0))


def my_hits():
    """This lab's hits: chunks labindex, labindex + numlabs, ... (1-based), as in MATLAB's
    `for c = labindex:numlabs:nchunks`; here the chunk numbers are 0-based."""
    return sum(chunk_hits(c) for c in range(labindex() - 1, nchunks, numlabs()))


with parpool(args.labs) as pool:
    n = pool.numlabs
    with spmd():
        pass  # warm-up: the first block on a new pool pays a one-off start-up cost

    # All labs share the work; gplus gives every lab the total.
    t0 = time.perf_counter()
    with spmd():
        hits = my_hits()
        total = gplus(hits)
    t_all = time.perf_counter() - t0

    # The same work on one lab, for the speed-up: inside spmd(1) only lab 1 runs the
    # body and numlabs() is 1, so my_hits() walks through every chunk.
    t0 = time.perf_counter()
    with spmd(1):
        total_one = gplus(my_hits())
    t_one = time.perf_counter() - t0

    per_lab = list(hits)
    totals = list(total)
    one_lab = total_one[1]

estimate = 4 * totals[0] / N
print(f"pi ~ {estimate:.6f} from {N:,} darts (error {abs(estimate - math.pi):.1e}); "
      f"hits per lab: {per_lab}")
cores = len(os.sched_getaffinity(0))
print(f"time: {labs_text(n)} {t_all:.3f} s, 1 lab {t_one:.3f} s -> speed-up {t_one / t_all:.2f}x "
      f"(one measurement of wall time at the client; {cores} CPU core{'s' if cores > 1 else ''} here, "
      f"so at most {min(n, cores)}x is possible)")

# Self-check: the serial numpy loop over the same chunks gives the same count.
serial = sum(chunk_hits(c) for c in range(nchunks))
check_equal("gplus of the labs' hits equals the serial count", totals, [serial] * n)
check_equal("the labs' hits add up to the serial count", sum(per_lab), serial)
check_equal("one lab alone finds the same count", one_lab, serial)
# And the estimate is statistically sound: within 5 standard deviations of pi.
p = math.pi / 4
sigma = 4 * math.sqrt(p * (1 - p) / N)
check(f"|estimate - pi| < 5 standard deviations ({5 * sigma:.1e})", abs(estimate - math.pi) < 5 * sigma,
      f"error {abs(estimate - math.pi):.3g}")
report()

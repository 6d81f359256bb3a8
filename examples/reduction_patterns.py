"""Reductions across labs: gop with max, min and functions of your own, gcat, and labBroadcast.

Every lab draws its own vector of random numbers; then the labs combine what they have:

  gop(fcn, x)              fcn folds the labs' x values together, in lab order
                           (x1 fcn x2 fcn ... xN); every lab gets the result. fcn must
                           be associative: (a fcn b) fcn c == a fcn (b fcn c).
  gop(fcn, x, targetlab=1) the same, but only lab 1 gets it (the others get None).
  gplus(x)                 gop(+, x).
  gcat(x, dim)             the labs' x joined in lab order: dim 2 (default) side by side,
                           dim 1 on top of each other (MATLAB dimensions, 1-based).
  labBroadcast(k, x)       lab k's x, on every lab.

Patterns shown: global max/min; elementwise max of arrays; where the global maximum is
(a custom function on (value, lab, index) tuples); the mean and variance of all data in
one pass (a custom function merging (count, mean, M2) summaries); a non-commutative
function (matrix product) that shows the lab order; lab 1 choosing a threshold that
everyone uses. The self-check regenerates every lab's data serially and asks numpy.

Run:  python examples/reduction_patterns.py [--labs N] [--size S]
"""
import functools

import numpy as np

from spmdlab import gcat, gop, gplus, labBroadcast, labindex, parpool, spmd

from common import check, check_close, check_equal, labs_text, parse_args, report

args = parse_args(__doc__, size=1000, size_help="numbers per lab", seed=(11, "random seed"))
size, seed = args.size, args.seed


def lab_data(lab):
    """The numbers lab `lab` works on (the serial check calls it for every lab)."""
    return np.random.default_rng([seed, lab]).standard_normal(size)


def larger(a, b):
    """Of two (value, lab, index) tuples, the one with the larger value (the first on ties)."""
    return a if a[0] >= b[0] else b


def merge(a, b):
    """Merge two (count, mean, M2) summaries (Chan et al.); M2 = sum of squared deviations."""
    na, mean_a, m2a = a
    nb, mean_b, m2b = b
    n = na + nb
    delta = mean_b - mean_a
    return n, mean_a + delta * nb / n, m2a + m2b + delta * delta * na * nb / n


def step_matrix(k):
    """[[k, 1], [1, 0]]: products of these do not commute, so the order shows."""
    return np.array([[k, 1], [1, 0]])


with parpool(args.labs) as pool:
    # Functions defined in this script (larger, merge, lab_data, ...) travel to the labs
    # by value, like any other client value the body uses.
    with spmd():
        x = lab_data(labindex())

        biggest = gop(max, float(x.max()))          # a plain scalar per lab
        smallest = gop(min, float(x.min()))
        total = gplus(float(x.sum()))
        elementwise = gop(np.maximum, x)            # arrays: elementwise, one MPI_Allreduce

        where = gop(larger, (float(x.max()), labindex(), int(x.argmax())))
        stats = gop(merge, (x.size, float(x.mean()), float(((x - x.mean()) ** 2).sum())), targetlab=1)
        chain = gop(np.matmul, step_matrix(labindex()))     # M1 @ M2 @ ... @ Mn

        maxima = gcat(float(x.max()))               # one row: each lab's max, in lab order
        heads = gcat(x[:3], 1)                      # numlabs x 3: each lab's first three

        # Lab 1 picks a threshold; labBroadcast gives it to everyone.
        threshold = labBroadcast(1, float(np.median(x)) if labindex() == 1 else None)
        above = gplus(int((x > threshold).sum()))

    n = pool.numlabs
    results = {name: list(c) for name, c in [
        ("biggest", biggest), ("smallest", smallest), ("total", total), ("where", where),
        ("chain", chain), ("maxima", maxima), ("threshold", threshold), ("above", above)]}
    elementwise_1, stats_all, heads_n = elementwise[1], list(stats), heads[n]

count, mean, m2 = stats_all[0]
lab_of_max, index_of_max = results["where"][0][1:]
print(f"{size} numbers per lab on {labs_text(n)}: max {results['biggest'][0]:.4f} (lab {lab_of_max}'s x[{index_of_max}]), "
      f"min {results['smallest'][0]:.4f}, mean {mean:.4f}, variance {m2 / count:.4f}")
print(f"each lab's max (gcat): {np.round(results['maxima'][0], 3).tolist()}")
print(f"gop(np.matmul, [[k, 1], [1, 0]]) on lab k, in lab order: {results['chain'][0].tolist()}")
print(f"lab 1's median {results['threshold'][0]:.4f} broadcast; {results['above'][0]} numbers lie above it")

# ---- serial numpy on every lab's data ------------------------------------------------
data = np.stack([lab_data(k) for k in range(1, n + 1)])     # row k-1: lab k's numbers
flat = data.ravel()
top = int(np.argmax(flat))


check_equal("gop(max, x.max()) on every lab", results["biggest"], [flat.max()] * n)
check_equal("gop(min, x.min()) on every lab", results["smallest"], [flat.min()] * n)
check_close("gplus(x.sum()) on every lab", results["total"], [flat.sum()] * n)
check_equal("gop(np.maximum, x) is elementwise", elementwise_1, data.max(axis=0))
check_equal("gop(larger, ...): where the maximum is, on every lab", [list(w) for w in results["where"]],
            [[flat.max(), top // size + 1, top % size]] * n)
check("gop with targetlab=1: only lab 1 has the statistics", all(s is None for s in stats_all[1:]))
check_close("one-pass mean and variance", [mean, m2 / count], [flat.mean(), flat.var()])
check_equal("count of all numbers", count, flat.size)
chain_serial = functools.reduce(np.matmul, [step_matrix(k) for k in range(1, n + 1)])
check_equal("gop(np.matmul, ...) is M1 @ M2 @ ... in lab order", results["chain"], [chain_serial] * n)
check_equal("gcat(x.max()) is each lab's max in lab order", results["maxima"], [data.max(axis=1)] * n)
check_equal("gcat(x[:3], 1) stacks the labs' heads", heads_n, data[:, :3])
check_equal("labBroadcast gave lab 1's median to every lab", results["threshold"], [np.median(data[0])] * n)
check_equal("numbers above the threshold", results["above"], [int((flat > np.median(data[0])).sum())] * n)
report()

"""Hello, labs: labindex and numlabs, per-lab output, and Composites going both ways.

The MATLAB original:

    parpool(4);
    spmd
        fprintf('Hello from lab %d of %d\\n', labindex, numlabs);
        sq = labindex^2;
    end
    sq{2}                  % lab 2's value of sq, read at the client

Run:  python examples/hello_labs.py [--labs N] [--size S]
"""
import numpy as np

from spmdlab import Composite, labindex, numlabs, parpool, spmd

from common import check, check_equal, parse_args, report

args = parse_args(__doc__, size=5, size_help="length of the vector the client gives each lab")
size = args.size

with parpool(args.labs) as pool:
    n = pool.numlabs

    # 1. The body of `with spmd():` runs on every lab at once. Labs are numbered
    #    1..numlabs, as in MATLAB. What a lab prints shows up here as "Lab k: ...",
    #    live, so the order between labs changes from run to run.
    with spmd():
        me = labindex()
        print(f"Hello from lab {me} of {numlabs()}")
        square = me ** 2

    # 2. Every name the body assigned is now a Composite at the client: one value per
    #    lab, indexed by lab number (MATLAB's sq{2} is square[2]).
    print(square)
    print(f"square[{n}] = {square[n]}  (read from lab {n})")

    # 3. The other direction: the client fills a Composite element by element...
    c = Composite()
    for k in range(1, n + 1):
        c[k] = np.arange(size) * k

    # ...and inside spmd each lab sees only its own element. A Composite made by an
    # earlier block (square) is also each lab's own value; it never left the labs.
    # A plain client value (offset) is copied to every lab.
    offset = 1000
    with spmd():
        total = offset + int(c.sum()) + square
        doubled = 2 * c

    # A Composite iterates over its values in lab order; list() reads them all.
    totals = list(total)
    squares = list(square)
    back = doubled[n]
    print(f"offset + sum(c) + square on each lab: {totals}")
    print(f"doubled[{n}] = {back}")

# The same numbers in serial numpy: the self-check.
labs = np.arange(1, n + 1)
check_equal("labindex()**2 on labs 1..n", squares, labs ** 2)
check_equal("offset + sum(c) + square on every lab", totals, offset + np.arange(size).sum() * labs + labs ** 2)
check_equal(f"lab {n}'s value of 2 * c", back, 2 * np.arange(size) * n)
check("every Composite has one element per lab", len(square) == len(total) == len(doubled) == n)
report()

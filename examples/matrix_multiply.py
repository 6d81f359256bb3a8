"""Matrix products on codistributed arrays: 2-D block-cyclic D @ E, and a 1-D matrix-vector product.

Part 1: D and E are n x n, laid out 2-D block-cyclically (codistributor2dbc): the labs
form a grid (2 x 2 for 4 labs), the matrix is cut into b x b blocks, and the blocks are
dealt out cyclically over the grid rows and columns, as in ScaLAPACK. `D @ E` keeps the
layout (the labs run SUMMA: panels of D travel along grid rows, panels of E along grid
columns). globalIndices(C, 1) and globalIndices(C, 2) say which rows and columns of C
a lab stores (0-based).

Part 2: the same matrix redistributed by rows (codistributor1d(1)) times a vector that
every lab holds (replicated): each lab multiplies its own rows, so y = M @ v comes out
distributed by rows too, and needs no communication.

Both results are gathered and compared with numpy's A @ B and A @ v.

Run:  python examples/matrix_multiply.py [--labs N] [--size n] [--block b]
"""
import numpy as np

from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    gather,
    getCodistributor,
    getLocalPart,
    globalIndices,
    numlabs,
    parpool,
    redistribute,
    spmd,
)

from common import check, check_close, labs_text, parse_args, ranges, report

args = parse_args(__doc__, size=12, size_help="n: the matrices are n x n",
                  block=(2, "block size b of the 2-D block-cyclic layout"))
n, b = args.size, args.block
v = np.arange(1.0, n + 1)  # the vector of part 2, made at the client

with parpool(args.labs) as pool:
    with spmd():
        # Part 1: random matrices made directly on the labs in the 2dbc layout (each
        # lab draws only its own blocks; seed= makes them reproducible).
        grid = codistributor2dbc.defaultLabGrid(numlabs())    # e.g. [2, 2] for 4 labs
        layout = codistributor2dbc(grid, b)
        D = codistributed.rand(n, n, codist=layout, seed=1)
        E = codistributed.rand(n, n, codist=layout, seed=2)
        C = D @ E
        c_rows, c_cols = globalIndices(C, 1), globalIndices(C, 2)
        c_local = getLocalPart(C).shape

        # Part 2: the same D, now by rows; v is replicated (a client value).
        M = redistribute(D, codistributor1d(1))
        y = M @ v
        m_rows = globalIndices(M, 1)
        y_rows = globalIndices(y, 1)

    # D, E, C, M and y are codistributed on every lab, so here they are `distributed`
    # arrays; gather() assembles the whole matrix at the client.
    A, B, AB, Av = gather(D), gather(E), gather(C), gather(y)
    labs = pool.numlabs
    rows = [c_rows[k] for k in range(1, labs + 1)]
    cols = [c_cols[k] for k in range(1, labs + 1)]
    local_shapes = list(c_local)
    by_rows = [(m_rows[k], y_rows[k]) for k in range(1, labs + 1)]
    c_layout = getCodistributor(C)

print(f"Part 1: C = D @ E, {n}x{n}, on {labs_text(labs)}: {c_layout}")
for k in range(labs):
    print(f"  lab {k + 1} stores rows [{ranges(rows[k])}] x columns [{ranges(cols[k])}] of C "
          f"(local part {local_shapes[k]})")
# How many labs store each element of C, and which, worked out from globalIndices.
count = np.zeros((n, n), dtype=int)
owner = np.zeros((n, n), dtype=int)
for k in range(labs):
    count[np.ix_(rows[k], cols[k])] += 1
    owner[np.ix_(rows[k], cols[k])] = k + 1
if n <= 24:
    print("  which lab stores each element of C:")
    for line in owner:
        print("    " + " ".join(str(lab) for lab in line))
print("Part 2: y = M @ v with M by rows: "
      + "; ".join(f"lab {k + 1} rows {ranges(r)}" for k, (r, _) in enumerate(by_rows)))

check_close("gather(D @ E) equals numpy's A @ B", AB, A @ B)
check_close("gather(M @ v) equals numpy's A @ v", Av, A @ v)
check("every element of C is stored by exactly one lab", bool(np.all(count == 1)))
check("y is distributed like M's rows", all(np.array_equal(mr, yr) for mr, yr in by_rows))
report()

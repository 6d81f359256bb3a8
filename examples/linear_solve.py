"""Solve a 2-D Poisson problem with A\\b on a codistributed matrix (MATLAB's x = A\\b).

The 5-point Laplacian on an m x m grid of unknowns is an N x N matrix, N = m^2: 4 on
the diagonal, -1 between grid neighbours. Each lab computes only the entries it stores
in the 2-D block-cyclic layout (codistributor2dbc): the labs form a grid (2 x 2 for 4
labs), the matrix is cut into b x b blocks, and block (I, J) lives on the lab at grid
position (I mod rows, J mod cols), as in ScaLAPACK. Nothing is assembled on one lab.

x = mldivide(A, b) is MATLAB's A\\b. A is symmetric with a positive diagonal, so it
tries Cholesky first (PDPOTRF-style, on the same 2dbc grid) as MATLAB does; a general
matrix would take LU with partial pivoting (PDGETRF), which np.linalg.solve(A, b) uses
here for comparison. Both answers are gathered and compared with numpy on the whole
matrix, and the residual |A x - b| is checked.

Run:  python examples/linear_solve.py [--labs N] [--size m] [--block b]
"""
import numpy as np

from spmdlab import (
    codistributed,
    codistributor2dbc,
    gather,
    getCodistributor,
    globalIndices,
    labindex,
    mldivide,
    numlabs,
    parpool,
    spmd,
)

from common import check, check_close, labs_text, parse_args, ranges, report

args = parse_args(__doc__, size=6, size_help="m: the grid has m x m unknowns, the matrix is m^2 x m^2",
                  min_size=1, block=(4, "block size b of the 2-D block-cyclic layout"))
m, nb = args.size, args.block
N = m * m


def poisson_entries(i, j, m):
    """Entries A[i, j] of the 5-point Laplacian (i, j broadcastable global indices)."""
    (ix, iy), (jx, jy) = divmod(i, m), divmod(j, m)
    neighbours = np.abs(ix - jx) + np.abs(iy - jy) == 1
    return np.where(i == j, 4.0, np.where(neighbours, -1.0, 0.0))


with parpool(args.labs) as pool:
    with spmd():
        layout = codistributor2dbc(codistributor2dbc.defaultLabGrid(numlabs()), nb).complete((N, N), numlabs())
        rows = layout.globalIndices(1, labindex(), numlabs())
        cols = layout.globalIndices(2, labindex(), numlabs())
        # this lab's entries only, from their global indices
        A = codistributed.build(poisson_entries(rows[:, None], cols[None, :], m), layout)
        b = np.ones(N)             # the right-hand side, the same on every lab
        x = mldivide(A, b)         # A \ b: Cholesky first (A is symmetric, positive diagonal)
        x_lu = np.linalg.solve(A, b)   # numpy's name: LU with partial pivoting
        residual = np.linalg.norm(gather(A @ x.reshape(N, 1)).ravel() - b)
        a_rows, a_cols = globalIndices(A, 1), globalIndices(A, 2)

    labs = pool.numlabs
    full, X, X_lu = gather(A), gather(x), gather(x_lu)
    grid = getCodistributor(A).LabGrid
    stored = [(a_rows[k], a_cols[k]) for k in range(1, labs + 1)]
    res = residual[1]

print(f"Poisson matrix {N} x {N} ({m} x {m} grid) on {labs_text(labs)}: lab grid "
      f"{grid[0]} x {grid[1]}, blocks of {nb} x {nb}")
for k, (r, c) in enumerate(stored):
    print(f"  lab {k + 1} stores rows [{ranges(r)}] x columns [{ranges(c)}]")
nblk = -(-N // nb)
if nblk <= 16:
    print("  which lab stores each block (block row I, block column J):")
    owner = np.zeros((nblk, nblk), dtype=int)
    for k, (r, c) in enumerate(stored):
        owner[np.ix_(np.unique(r // nb), np.unique(c // nb))] = k + 1
    for line in owner:
        print("    " + " ".join(str(v) for v in line))
print(f"x = A\\b: |A x - b| = {res:.2e}; x at the centre of the grid: {X[(m // 2) * m + m // 2]:.6f}")

want = np.zeros((N, N))
for i in range(N):
    want[i] = poisson_entries(np.full(N, i), np.arange(N), m)
check_close("the codistributed matrix equals the Poisson matrix built serially", full, want, rtol=0, atol=0)
check_close("mldivide(A, b) equals numpy's np.linalg.solve on the whole matrix", X, np.linalg.solve(want, np.ones(N)))
check_close("np.linalg.solve(A, b) on the labs equals it too", X_lu, np.linalg.solve(want, np.ones(N)))
check("the residual |A x - b| is at rounding level", res <= 1e-10 * N, f"residual {res:.3g}")
report()

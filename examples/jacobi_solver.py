"""Jacobi iteration for A x = b: the rows of A codistributed over the labs, gplus for the residual norm.

A is n x n and strictly diagonally dominant (A[i, j] = 1 / (1 + |i - j|) off the
diagonal, and a diagonal twice the row's off-diagonal sum, plus one), so the Jacobi
iteration

    x_i  <-  x_i + (b_i - (A x)_i) / A[i, i]          for every row i at once

converges. Each lab builds and keeps only its own rows of A (codistributed.build from
local pieces, never the whole matrix), and every lab holds the whole iterate x. One
iteration per lab: multiply its rows by x, then
  - gplus adds the labs' squared residuals: every lab gets ||b - A x||, the same value
    on every lab, so all labs stop at the same iteration;
  - gcat joins the labs' updated pieces of x, in lab order, into the new whole x.

The solution must match the same iteration run serially in numpy, and numpy.linalg.solve.

Run:  python examples/jacobi_solver.py [--labs N] [--size n] [--tol TOL]
"""
import numpy as np

from spmdlab import codistributed, codistributor1d, gather, gcat, getLocalPart, globalIndices, gplus, parpool, spmd

from common import check, check_close, check_equal, labs_text, parse_args, ranges, report

args = parse_args(__doc__, size=200, size_help="n: unknowns",
                  tol=(1e-10, "stop when ||b - A x|| <= tol ||b||"),
                  maxit=(500, "at most this many iterations"))
n, tol, maxit = args.size, args.tol, args.maxit
b = np.cos(np.arange(n))  # the right-hand side, made at the client
bnorm = float(np.linalg.norm(b))


def matrix_rows(rows, n):
    """Rows `rows` (0-based) of A, computed from the formula: no lab needs the others' rows."""
    A = 1.0 / (1.0 + np.abs(rows[:, None] - np.arange(n)[None, :]))
    mine = np.arange(len(rows))
    A[mine, rows] = 0.0
    A[mine, rows] = 2.0 * A.sum(axis=1) + 1.0
    return A


with parpool(args.labs) as pool:
    with spmd():
        # A complete codistributor knows the global size and every lab's share, so a lab
        # can ask for its rows before any array exists.
        layout = codistributor1d(1, codistributor1d.defaultPartition(n), (n, n))
        rows = globalIndices(layout, 1)
        A = codistributed.build(matrix_rows(rows, n), layout)
        mine = getLocalPart(A)                      # my rows of A
        diag = mine[np.arange(len(rows)), rows]     # my diagonal entries
        b_mine = b[rows]
        x = np.zeros(n)                             # the whole iterate, on every lab
        for iteration in range(maxit + 1):
            r_mine = b_mine - mine @ x              # my part of the residual b - A x
            residual = np.sqrt(gplus(float(r_mine @ r_mine)))
            if residual <= tol * bnorm:
                break
            x = x + gcat(r_mine / diag)             # gcat: the pieces of x, in lab order

    A_full = gather(A)
    x_labs = x[1]
    iterations = iteration[1]
    residual_1 = residual[1]
    row_ranges = [ranges(rows[k]) for k in range(1, pool.numlabs + 1)]
    same_everywhere = len(set(iteration)) == 1 and all(np.array_equal(xk, x_labs) for xk in x)

# Serial numpy: the same iteration on the whole matrix, and a direct solve.
A_serial = matrix_rows(np.arange(n), n)
d = np.diag(A_serial)
xs = np.zeros(n)
for serial_iterations in range(maxit + 1):
    r = b - A_serial @ xs
    if np.linalg.norm(r) <= tol * bnorm:
        break
    xs = xs + r / d
x_direct = np.linalg.solve(A_serial, b)

print(f"n = {n}, rows per lab: {'; '.join(f'lab {k}: {s}' for k, s in enumerate(row_ranges, 1))}")
print(f"Jacobi on {labs_text(pool.numlabs)}: {iterations} iterations, "
      f"||b - A x|| / ||b|| = {residual_1 / bnorm:.1e}, max |x - solve(A, b)| = "
      f"{np.max(np.abs(x_labs - x_direct)):.1e}")
check_equal("A assembled from the labs' rows equals the serial A", A_full, A_serial)
check("every lab ends with the same x after the same number of iterations", same_everywhere)
check(f"it converged within --maxit {maxit} iterations", residual_1 <= tol * bnorm,
      f"residual {residual_1 / bnorm:.3g} after {maxit} iterations")
check_equal("same number of iterations as serial numpy", iterations, serial_iterations)
check_close("x equals the serial Jacobi iterate", x_labs, xs, rtol=1e-12, atol=1e-14)
check_close("x solves A x = b (numpy.linalg.solve)", x_labs, x_direct, rtol=0, atol=10 * tol * bnorm)
report()

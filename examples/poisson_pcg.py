"""2-D Poisson with sparse codistributed matrices: assembled on the labs, solved with pcg and block ILU.

The 5-point Laplacian of -u'' = f on a k x k interior grid of the unit square (zero
boundary values, spacing h = 1/(k+1)) is

    A = (kron(T, I) + kron(I, T)) / h^2,    T = spdiags([-1 2 -1], [-1 0 1], k, k),

n = k^2 unknowns, about 5 nonzeros a row. Each lab assembles only its rows of A (kron of
the small factors, MATLAB's spdiags for T): the matrix is never whole anywhere. The
solve is MATLAB's

    [x, flag, relres, iter, resvec] = pcg(A, b, tol, maxit, M)

with M = ilu(A): block Jacobi with an incomplete LU of each lab's diagonal block (PETSc's
default preconditioner), and once without a preconditioner, to see what M buys. Each
product A p sends only the entries of p that other labs' rows touch (the grid rows next
to a lab's first and last: 2k numbers per neighbour).

Checked at the client against scipy: the gathered A equals scipy's kron assembly, and x
matches scipy.sparse.linalg.spsolve within the tolerance.

Run:  python examples/poisson_pcg.py [--labs N] [--size k] [--tol TOL]
"""
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from spmdlab import codistributor1d, gather, ilu, kron, nnz, parpool, pcg, spdiags, speye, spmd

from common import check, check_close, check_equal, labs_text, parse_args, report

args = parse_args(__doc__, size=40, size_help="k: grid points per side (n = k^2 unknowns)",
                  tol=(1e-8, "pcg's relative tolerance"), maxit=(1000, "at most this many iterations"))
k, tol, maxit = args.size, args.tol, args.maxit
n = k * k
h = 1.0 / (k + 1)
b = np.ones(n)  # f = 1 everywhere

with parpool(args.labs) as pool:
    with spmd():
        e = np.ones(k)
        T = spdiags(np.column_stack([-e, 2 * e, -e]), [-1, 0, 1], k, k)  # sparse, on the labs
        I = speye(k)
        rows = codistributor1d(1)  # by rows: the layout the solvers use
        A = (kron(T, I, codist=rows) + kron(I, T, codist=rows)) / h**2
        M = ilu(A)
        x, flag, relres, iters, resvec = pcg(A, b, tol, maxit, M)
        x0, flag0, relres0, iters0, _ = pcg(A, b, tol, maxit)
        total = nnz(A)
        mine = A.range_of()

    A_labs = gather(A)
    x_labs = gather(x)
    flag, relres, iters, resvec = flag[1], relres[1], iters[1], resvec[1]
    flag0, iters0 = flag0[1], iters0[1]
    total = total[1]
    row_ranges = [mine[lab] for lab in range(1, pool.numlabs + 1)]

# scipy on one process: the same matrix and a direct solve
Ts = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
A_serial = sp.csr_array((sp.kron(Ts, sp.eye(k)) + sp.kron(sp.eye(k), Ts)) / h**2)
x_direct = spla.spsolve(A_serial.tocsc(), b)

print(f"{k} x {k} grid, n = {n} unknowns, nnz = {total}, rows per lab: "
      + "; ".join(f"lab {lab}: {lo}:{hi}" for lab, (lo, hi) in enumerate(row_ranges, 1)))
print(f"pcg + block ILU on {labs_text(pool.numlabs)}: flag {flag}, {iters} iterations, relres {relres:.1e}")
print(f"pcg without a preconditioner: flag {flag0}, {iters0} iterations")
print(f"max |x - spsolve(A, b)| = {np.max(np.abs(x_labs - x_direct)):.1e}, max u = {x_labs.max():.5f}")
check_close("A assembled on the labs equals scipy's kron assembly", A_labs.toarray(), A_serial.toarray(),
            rtol=1e-12, atol=0)
check_equal("pcg converged (MATLAB's flag 0)", flag, 0)
check("relres <= tol and resvec ends there", relres <= tol and abs(resvec[-1] / np.linalg.norm(b) - relres) < tol)
if k >= 10:  # on a tiny grid A has few distinct eigenvalues, and plain CG needs few steps
    check("block ILU needs fewer iterations than none", iters < iters0, f"{iters} vs {iters0}")
else:
    print(f"  (k = {k} < 10: A has few distinct eigenvalues, plain CG needs few steps; not compared)")
check_close("x solves A x = b (scipy.sparse.linalg.spsolve)", x_labs, x_direct, rtol=0,
            atol=100 * tol * np.abs(x_direct).max())
report()

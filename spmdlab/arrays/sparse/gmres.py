"""Restarted GMRES, MATLAB's ``gmres`` (Saad-Schultz, right preconditioned, Givens
rotations on the Hessenberg matrix).

The Arnoldi step orthogonalizes with classical Gram-Schmidt run twice (CGS2, as PETSc's
``KSPGMRESClassicalGramSchmidtOrthogonalization`` with refinement): each pass's
projections on the whole basis are one matrix-vector product of the local basis and ONE
allreduce, the second fused with the new vector's norm; two allreduces per iteration
instead of the j + 1 of modified Gram-Schmidt. With right preconditioning the residual
the rotations give is ``norm(b - A x)``, so ``relres`` and ``resvec`` are MATLAB's
unpreconditioned residuals (checked against the true residual at every restart).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla

from .problem import Problem, dots, finish, nonfinite

__all__ = ["gmres", "givens"]


def givens(a: Any, b: Any) -> tuple:
    """``c, s, r`` with ``[[c, s], [-conj(s), c]] @ [a, b] = [r, 0]`` (c real)."""
    if b == 0:
        return 1.0, 0.0, a
    if a == 0:
        return 0.0, 1.0, b
    t = np.hypot(abs(a), abs(b))
    phase = a / abs(a)
    return abs(a) / t, phase * np.conj(b) / t, phase * t


def gmres(A: Any, b: Any, restart: int | None = None, tol: float | None = None, maxit: int | None = None,
          M1: Any = None, M2: Any = None, x0: Any = None) -> tuple:
    """``x, flag, relres, iter, resvec = gmres(A, b, restart, tol=1e-6, maxit, M1, M2, x0)``.

    ``restart`` inner iterations per cycle (None: no restart, n); ``maxit`` cycles
    (default ``min(n // restart, 10)``, as MATLAB); ``iter`` is ``(outer, inner)``; flags
    as ``pcg`` (2: the preconditioner gave NaN/Inf; 3: stagnated).
    """
    what = "gmres"
    P = Problem(A, b, x0, M1, M2, what)
    n = P.n
    tol = 1e-6 if tol is None else float(tol)
    restart = n if restart is None or restart >= n else max(1, int(restart))
    maxit = max(1, min(n // restart, 10)) if maxit is None else int(maxit)
    n2b = P.start()
    x = P.x
    if n2b == 0:
        return P.no_work((0, 0))
    tolb = tol * n2b
    dtype = x.dtype
    V = np.empty((restart + 1, x.size), dtype)
    H = np.zeros((restart + 1, restart), dtype)
    cs = np.zeros(restart)
    sn = np.zeros(restart, dtype)
    r = P.b - P.matvec(x)
    beta = P.norm(r)
    resvec = [beta]
    normr_act = beta
    if beta <= tolb:
        return P.wrap(x), 0, beta / n2b, (0, 0), np.array(resvec)
    flag, outer, inner = 1, 0, 0
    best = (beta, x.copy(), (0, 0))
    for outer in range(1, maxit + 1):
        V[0] = r / beta
        g = np.zeros(restart + 1, dtype)
        g[0] = beta
        k = 0
        stop = None
        for j in range(restart):
            z = P.psolve(V[j])
            w = P.matvec(z)
            Vj = V[:j + 1]
            h = dots(list(Vj.conj() @ w) + [nonfinite(z)], what)
            if h[-1].real:
                stop = 2
                break
            h = h[:-1].astype(dtype, copy=False)
            w -= h @ Vj
            s = dots(list(Vj.conj() @ w) + [np.vdot(w, w).real], what)
            h2 = s[:-1].astype(dtype, copy=False)
            w -= h2 @ Vj
            h = h + h2
            hn = float(np.sqrt(max(s[-1].real - float(np.vdot(h2, h2).real), 0.0)))
            for i in range(j):  # the earlier rotations
                h[i], h[i + 1] = cs[i] * h[i] + sn[i] * h[i + 1], -np.conj(sn[i]) * h[i] + cs[i] * h[i + 1]
            c, sj, rr = givens(h[j], hn)
            cs[j], sn[j] = c, sj
            H[:j + 1, j] = h[:j + 1]
            H[j, j] = rr
            g[j + 1] = -np.conj(sj) * g[j]
            g[j] = c * g[j]
            k = j + 1
            inner = k
            resid = float(abs(g[j + 1]))
            resvec.append(resid)
            if resid <= tolb or hn == 0:
                break
            V[j + 1] = w / hn
        if k:
            y = sla.solve_triangular(H[:k, :k], g[:k])
            x += P.psolve(y @ V[:k])
        r = P.b - P.matvec(x)
        normr_act = P.norm(r)
        beta = normr_act
        if normr_act < best[0]:
            best = (normr_act, x.copy(), (outer, inner))
        if stop is not None:
            flag = stop
            break
        if normr_act <= tolb:
            flag = 0
            break
        if k == 0 or not np.isfinite(normr_act):
            flag = 3 if np.isfinite(normr_act) else 4
            break
    return finish(P, x, flag, (outer, inner), normr_act, n2b, best[1], best[2], resvec)

"""MATLAB's other Krylov solvers: ``bicg`` (Fletcher's biconjugate gradients), ``cgs``
(Sonneveld's conjugate gradients squared), ``minres`` (Paige-Saunders, for Hermitian A and
an SPD preconditioner) and ``lsqr`` (Paige-Saunders, for rectangular A, least squares).

Same signature, flags and outputs as ``pcg``; each iteration's reductions are fused
where they fall at one point of the algorithm (two allreduces of a few scalars per
iteration for each method).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import CodistArray
from .matrix import SparseBase
from .problem import BlockSolve, Problem, dots, finish, nonfinite, setup

__all__ = ["bicg", "cgs", "minres", "lsqr"]


def _adjoint_psolve(P: Problem, M1: Any, M2: Any, what: str) -> Any:
    """``M^H \\ r`` for bicg: the preconditioners must say how (objects with
    ``solve_adjoint``, jacobi and ichol being Hermitian)."""
    Ms = [M for M in (M1, M2) if M is not None]
    for M in Ms:
        if not hasattr(M, "solve_local_adjoint"):
            raise TypeError(f"{what}: a preconditioner for bicg must also solve with M^H: pass jacobi(A), "
                            "ilu(A) or ichol(A)")

    def solve(r: np.ndarray) -> np.ndarray:
        for M in reversed(Ms):
            r = M.solve_local_adjoint(r, P.part, what)
        return r
    return solve


def bicg(A: Any, b: Any, tol: float | None = None, maxit: int | None = None, M1: Any = None,
         M2: Any = None, x0: Any = None) -> tuple:
    """``x, flag, relres, iter, resvec = bicg(A, b, tol, maxit, M1, M2, x0)``."""
    what = "bicg"
    P, tol, maxit, n2b = setup(A, b, tol, maxit, M1, M2, x0, what, need_adjoint=True)
    psolve_h = _adjoint_psolve(P, M1, M2, what)
    x = P.x
    if n2b == 0:
        return P.no_work()
    tolb = tol * n2b
    r = P.b - P.matvec(x)
    rt = r.copy()
    z, zt = P.psolve(r), psolve_h(rt)
    s = dots([np.vdot(r, r).real, np.vdot(zt, r), nonfinite(z) + nonfinite(zt)], what)
    normr = normr_act = float(np.sqrt(s[0].real))
    resvec = [normr]
    if normr <= tolb:
        return P.wrap(x), 0, normr / n2b, 0, np.array(resvec)
    flag, ii, rho, rho1 = 1, 0, s[1], 1.0
    best = (normr, x.copy(), 0)
    p = pt = None
    for ii in range(1, maxit + 1):
        if s[2].real:
            flag = 2
            break
        if rho == 0 or np.isinf(rho):
            flag = 4
            break
        if ii == 1:
            p, pt = z.copy(), zt.copy()
        else:
            beta = rho / rho1
            p, pt = z + beta * p, zt + np.conj(beta) * pt
        q, qt = P.matvec(p), P.rmatvec(pt)
        ptq = dots([np.vdot(pt, q)], what)[0]
        if ptq == 0 or np.isinf(ptq):
            flag = 4
            break
        alpha = rho / ptq
        x += alpha * p
        r -= alpha * q
        rt -= np.conj(alpha) * qt
        z, zt = P.psolve(r), psolve_h(rt)
        s = dots([np.vdot(r, r).real, np.vdot(zt, r), nonfinite(z) + nonfinite(zt)], what)
        rho1, rho = rho, s[1]
        normr = normr_act = float(np.sqrt(s[0].real))
        resvec.append(normr)
        if normr <= tolb:
            normr_act = P.true_residual(x)
            resvec[-1] = normr_act
            if normr_act <= tolb:
                flag = 0
                break
        if normr_act < best[0]:
            best = (normr_act, x.copy(), ii)
    return finish(P, x, flag, ii, normr_act, n2b, best[1], best[2], resvec)


def cgs(A: Any, b: Any, tol: float | None = None, maxit: int | None = None, M1: Any = None,
        M2: Any = None, x0: Any = None) -> tuple:
    """``x, flag, relres, iter, resvec = cgs(A, b, tol, maxit, M1, M2, x0)``."""
    what = "cgs"
    P, tol, maxit, n2b = setup(A, b, tol, maxit, M1, M2, x0, what)
    x = P.x
    if n2b == 0:
        return P.no_work()
    tolb = tol * n2b
    r = P.b - P.matvec(x)
    rt = r.copy()
    s = dots([np.vdot(r, r).real, np.vdot(rt, r)], what)
    normr = normr_act = float(np.sqrt(s[0].real))
    resvec = [normr]
    if normr <= tolb:
        return P.wrap(x), 0, normr / n2b, 0, np.array(resvec)
    flag, ii, rho, rho1 = 1, 0, s[1], 1.0
    best = (normr, x.copy(), 0)
    q = p = u = None
    for ii in range(1, maxit + 1):
        if rho == 0 or np.isinf(rho):
            flag = 4
            break
        if ii == 1:
            u, p = r.copy(), r.copy()
        else:
            beta = rho / rho1
            u = r + beta * q
            p = u + beta * (q + beta * p)
        ph = P.psolve(p)
        vh = P.matvec(ph)
        s1 = dots([np.vdot(rt, vh), nonfinite(ph)], what)
        if s1[1].real:
            flag = 2
            break
        if s1[0] == 0 or np.isinf(s1[0]):
            flag = 4
            break
        alpha = rho / s1[0]
        q = u - alpha * vh
        uh = P.psolve(u + q)
        x += alpha * uh
        r -= alpha * P.matvec(uh)
        s = dots([np.vdot(r, r).real, np.vdot(rt, r), nonfinite(uh)], what)
        if s[2].real:
            flag = 2
            break
        rho1, rho = rho, s[1]
        normr = normr_act = float(np.sqrt(s[0].real))
        resvec.append(normr)
        if normr <= tolb:
            normr_act = P.true_residual(x)
            resvec[-1] = normr_act
            if normr_act <= tolb:
                flag = 0
                break
        if normr_act < best[0]:
            best = (normr_act, x.copy(), ii)
    return finish(P, x, flag, ii, normr_act, n2b, best[1], best[2], resvec)


def minres(A: Any, b: Any, tol: float | None = None, maxit: int | None = None, M1: Any = None,
           M2: Any = None, x0: Any = None) -> tuple:
    """``x, flag, relres, iter, resvec = minres(A, b, tol, maxit, M1, M2, x0)`` for Hermitian
    A (M Hermitian positive definite); ``resvec`` the (preconditioned) residual estimates."""
    what = "minres"
    P, tol, maxit, n2b = setup(A, b, tol, maxit, M1, M2, x0, what)
    x = P.x
    if n2b == 0:
        return P.no_work()
    tolb = tol * n2b
    r1 = P.b - P.matvec(x)
    y = P.psolve(r1)
    s = dots([np.vdot(r1, y).real, np.vdot(r1, r1).real], what)
    if s[0] < 0:
        return finish(P, x, 2, 0, float(np.sqrt(s[1])), n2b, None, 0, [float(np.sqrt(s[1]))])
    beta1 = float(np.sqrt(s[0]))
    normr_act = float(np.sqrt(s[1]))
    resvec = [normr_act]
    if normr_act <= tolb:
        return P.wrap(x), 0, normr_act / n2b, 0, np.array(resvec)
    oldb, beta, dbar, epsln, phibar = 0.0, beta1, 0.0, 0.0, beta1
    cs, sn = -1.0, 0.0
    r2 = r1.copy()
    w = np.zeros_like(x)
    w2 = np.zeros_like(x)
    flag, ii = 1, 0
    scale = normr_act / beta1 if beta1 else 1.0  # preconditioned to true residual, at the start
    for ii in range(1, maxit + 1):
        v = y / beta
        y = P.matvec(v)
        if ii >= 2:
            y = y - (beta / oldb) * r1
        alfa = dots([np.vdot(v, y).real], what)[0]
        y = y - (alfa / beta) * r2
        r1, r2 = r2, y
        y = P.psolve(r2)
        oldb = beta
        bb = dots([np.vdot(r2, y).real, nonfinite(y)], what)
        if bb[1] or bb[0] < 0:
            flag = 2
            break
        beta = float(np.sqrt(bb[0]))
        oldeps = epsln
        delta = cs * dbar + sn * alfa
        gbar = sn * dbar - cs * alfa
        epsln = sn * beta
        dbar = -cs * beta
        gamma = max(float(np.hypot(gbar, beta)), np.finfo(float).eps)
        cs, sn = gbar / gamma, beta / gamma
        phi = cs * phibar
        phibar = sn * phibar
        w1, w2 = w2, w
        w = (v - oldeps * w1 - delta * w2) / gamma
        x += phi * w
        est = abs(phibar) * scale
        resvec.append(est)
        if est <= tolb or beta == 0:
            normr_act = P.true_residual(x)
            resvec[-1] = normr_act
            if normr_act <= tolb:
                flag = 0
                break
    else:
        normr_act = P.true_residual(x)
    return finish(P, x, flag, ii, normr_act, n2b, None, ii, resvec)


def lsqr(A: Any, b: Any, tol: float | None = None, maxit: int | None = None, M1: Any = None,
         M2: Any = None, x0: Any = None) -> tuple:
    """``x, flag, relres, iter, resvec = lsqr(A, b, tol, maxit, M1, M2, x0)`` for any m x n A:
    converged when ``norm(b - A x) <= tol norm(b)`` or, for inconsistent systems, when
    ``norm(B^H r) / (norm(B) norm(r)) <= tol`` (MATLAB's two tests). ``M = M1 M2`` (n x n)
    preconditions on the right, as MATLAB's: LSQR (Paige and Saunders) on ``B = A M^-1``,
    then ``x = x0 + M^-1 y``."""
    what = "lsqr"
    P, tol, maxit, n2b = setup(A, b, tol, maxit, None, None, x0, what, square=False, need_adjoint=True)
    solve, solve_h = _right_precond(P, M1, M2, what)
    x0loc = P.x
    if n2b == 0:
        return P.wrap(np.zeros_like(x0loc)), 0, 0.0, 0, np.zeros(1)
    u = P.b - P.matvec(x0loc)
    beta = P.norm(u)
    resvec = [beta]
    if beta <= tol * n2b:
        return P.wrap(x0loc), 0, beta / n2b, 0, np.array(resvec)
    u = u / beta
    v = solve_h(P.rmatvec(u))
    alpha = P.norm(v)
    if alpha == 0:
        return P.wrap(x0loc), 0, beta / n2b, 0, np.array(resvec)
    v = v / alpha
    w = v.copy()
    y = np.zeros_like(x0loc)
    phibar, rhobar, normA2 = beta, alpha, alpha ** 2
    flag, ii, normr = 1, 0, beta
    for ii in range(1, maxit + 1):
        u = P.matvec(solve(v)) - alpha * u
        beta = P.norm(u)
        if beta:
            u = u / beta
        normA2 += beta ** 2
        v = solve_h(P.rmatvec(u)) - beta * v
        alpha = P.norm(v)
        if alpha:
            v = v / alpha
        normA2 += alpha ** 2
        rho = float(np.hypot(rhobar, beta))
        c, s = rhobar / rho, beta / rho
        theta, rhobar = s * alpha, -c * alpha
        phi, phibar = c * phibar, s * phibar
        y += (phi / rho) * w
        w = v - (theta / rho) * w
        normr = abs(phibar)
        resvec.append(normr)
        normar = abs(phibar * alpha * c)
        if normr <= tol * n2b or normar <= tol * np.sqrt(normA2) * normr:
            flag = 0
            break
    x = x0loc + solve(y)
    normr_act = P.true_residual(x)
    return finish(P, x, flag, ii, normr_act, n2b, None, ii, resvec)


def _right_precond(P: Problem, M1: Any, M2: Any, what: str) -> tuple:
    """``(r -> M^-1 r, r -> M^-H r)`` on this lab's part of an n-vector (A's column
    partition), ``M = M1 M2``; the identity without a preconditioner."""
    pairs = [_solves(P, M, k, what) for k, M in ((1, M1), (2, M2)) if M is not None]

    def solve(r: np.ndarray) -> np.ndarray:
        for f, _ in pairs:
            r = f(r)
        return r

    def solve_h(r: np.ndarray) -> np.ndarray:
        for _, g in reversed(pairs):
            r = g(r)
        return r
    return solve, solve_h


def _solves(P: Problem, M: Any, k: int, what: str) -> tuple:
    """``M \\ r`` and ``M^H \\ r`` for one preconditioner of lsqr (n x n, in ``P.cpart``)."""
    if hasattr(M, "build_for"):
        M = M.build_for(P.A)
    if hasattr(M, "solve_local"):
        return (lambda r: M.solve_local(r, P.cpart, what),
                lambda r: M.solve_local_adjoint(r, P.cpart, what))
    if isinstance(M, (SparseBase, CodistArray)):
        if tuple(M.shape) != (P.n, P.n):
            raise ValueError(f"{what}: M{k} must be {P.n}x{P.n} (A has {P.n} columns), got {M.shape}")
        B = BlockSolve(M, P.cpart, f"{what}: M{k}")
        return B.solve, B.solve_adjoint
    if callable(M):
        return (lambda r: P.apply(M, r, P.cpart, P.cpart, "notransp"),
                lambda r: P.apply(M, r, P.cpart, P.cpart, "transp"))
    raise TypeError(f"{what}: M{k} must be a preconditioner (jacobi, ilu, ichol), a function "
                    f"M(x, 'notransp'/'transp') or a matrix; got {type(M).__name__}")

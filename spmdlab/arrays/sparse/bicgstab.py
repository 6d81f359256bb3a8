"""BiCGSTAB, MATLAB's ``bicgstab`` (van der Vorst 1992, preconditioned), with MATLAB's
half iterations: ``iter`` may end in .5 when the half step ``s`` already converged.

Three allreduces per iteration, each of a few scalars: ``[rt'v, bad(ph)]``; then
``[s's, t's, t't, bad(sh)]`` after ``t = A sh`` (the half step's norm travels with the
stabilizing step's products, so a converged half step costs one product more); then
``[r'r, rt'r]`` (the next ``rho`` fused with the residual norm).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .problem import dots, finish, nonfinite, setup

__all__ = ["bicgstab"]


def bicgstab(A: Any, b: Any, tol: float | None = None, maxit: int | None = None, M1: Any = None,
             M2: Any = None, x0: Any = None) -> tuple:
    """``x, flag, relres, iter, resvec = bicgstab(A, b, tol=1e-6, maxit=min(n, 20), M1, M2, x0)``;
    ``resvec`` holds the residual norm after every half iteration (2 iter + 1 entries)."""
    what = "bicgstab"
    P, tol, maxit, n2b = setup(A, b, tol, maxit, M1, M2, x0, what)
    x = P.x
    if n2b == 0:
        return P.no_work()
    tolb = tol * n2b
    r = P.b - P.matvec(x)
    rt = r.copy()
    s0 = dots([np.vdot(r, r).real, np.vdot(rt, r)], what)
    normr = normr_act = float(np.sqrt(s0[0].real))
    resvec = [normr]
    if normr <= tolb:
        return P.wrap(x), 0, normr / n2b, 0, np.array(resvec)
    rho, rho1 = s0[1], 1.0
    flag, it, alpha, omega = 1, 0.0, 1.0, 1.0
    best = (normr, x.copy(), 0.0)
    p = np.zeros_like(x)
    v = np.zeros_like(x)
    for ii in range(1, maxit + 1):
        it = float(ii)
        if rho == 0 or np.isinf(rho):
            flag = 4
            break
        if ii == 1:
            p[:] = r
        else:
            beta = (rho / rho1) * (alpha / omega)
            if beta == 0 or np.isinf(beta):
                flag = 4
                break
            p = r + beta * (p - omega * v)
        ph = P.psolve(p)
        v = P.matvec(ph)
        s1 = dots([np.vdot(rt, v), nonfinite(ph)], what)
        if s1[1].real:
            flag = 2
            break
        rtv = s1[0]
        if rtv == 0 or np.isinf(rtv):
            flag = 4
            break
        alpha = rho / rtv
        s = r - alpha * v
        sh = P.psolve(s)
        t = P.matvec(sh)
        s2 = dots([np.vdot(s, s).real, np.vdot(t, s), np.vdot(t, t).real, nonfinite(sh)], what)
        normr = float(np.sqrt(s2[0].real))
        resvec.append(normr)
        if normr <= tolb:
            x += alpha * ph
            normr_act = P.true_residual(x)
            resvec[-1] = normr_act
            if normr_act <= tolb:
                it, flag = ii - 0.5, 0
                break
        else:
            x += alpha * ph
        if s2[3].real:
            flag, it = 2, ii - 0.5
            break
        tt = s2[2].real
        if tt == 0 or np.isinf(tt):
            flag, it = 4, ii - 0.5
            break
        omega = s2[1] / tt
        if omega == 0:
            flag, it = 4, ii - 0.5
            break
        x += omega * sh
        r = s - omega * t
        s3 = dots([np.vdot(r, r).real, np.vdot(rt, r)], what)
        rho1, rho = rho, s3[1]
        normr = normr_act = float(np.sqrt(s3[0].real))
        resvec.append(normr)
        if normr <= tolb:
            normr_act = P.true_residual(x)
            resvec[-1] = normr_act
            if normr_act <= tolb:
                flag = 0
                break
        if normr_act < best[0]:
            best = (normr_act, x.copy(), float(ii))
    return finish(P, x, flag, it, normr_act, n2b, best[1], best[2], resvec)

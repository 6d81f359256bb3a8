"""Preconditioned conjugate gradients, MATLAB's ``pcg`` (Hestenes-Stiefel CG with
MATLAB's flags, stagnation test, verified residual and best iterate).

Two allreduces per iteration, each of a few scalars: ``[p'q, p'p, x'x]`` once ``q = A p``
is known (the step length and MATLAB's stagnation test), and ``[r'r, r'z]``
after the update, the preconditioner applied first so the next ``rho`` travels with the
residual norm (the classic two-reduction CG; Chronopoulos-Gear's one-reduction form is
not used). ``A p`` is PETSc's MatMult with the ghost exchange overlapped.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .problem import EPS, axpy, dots, finish, nonfinite, setup

__all__ = ["pcg"]


def pcg(A: Any, b: Any, tol: float | None = None, maxit: int | None = None, M1: Any = None,
        M2: Any = None, x0: Any = None) -> tuple:
    """``x, flag, relres, iter, resvec = pcg(A, b, tol=1e-6, maxit=min(n, 20), M1, M2, x0)``.

    flag: 0 converged (``norm(b - A x) <= tol norm(b)``), 1 ``maxit`` reached, 2 the
    preconditioner gave NaN/Inf, 3 stagnated, 4 a scalar became 0 or Inf (A or M not
    positive definite). ``resvec[k]`` is the residual norm after k iterations.
    """
    what = "pcg"
    P, tol, maxit, n2b = setup(A, b, tol, maxit, M1, M2, x0, what)
    x = P.x
    if n2b == 0:
        return P.no_work()
    tolb = tol * n2b
    r = P.b - P.matvec(x)
    z = P.psolve(r)
    s = dots([np.vdot(r, r).real, np.vdot(r, z)], what)
    normr = normr_act = float(np.sqrt(s[0].real))
    resvec = [normr]
    if normr <= tolb:
        return P.wrap(x), 0, normr / n2b, 0, np.array(resvec)
    rho, rho1 = s[1], 1.0
    flag, ii, stag, moresteps = 1, 0, 0, 0
    maxmsteps = min(P.n // 50, 5, P.n - maxit)
    normrmin, xmin, imin = normr, x.copy(), 0
    p = np.zeros_like(x)
    q = np.empty_like(x)
    for ii in range(1, maxit + 1):
        if not np.isfinite(rho):  # NaN/Inf in M \ r shows in r'z: ask which (flag 2 or 4)
            flag = 2 if P.M and dots([nonfinite(z)], what)[0].real else 4
            break
        if rho == 0:
            flag = 4
            break
        if ii == 1:
            p[:] = z
        else:
            beta = rho / rho1
            if beta == 0 or np.isinf(beta):
                flag = 4
                break
            if z.dtype == p.dtype and z is not r and z.base is None:  # z a buffer of its own
                p, z = axpy(beta, p, z), p  # p = z + beta p in one pass, in z's buffer
            else:
                p *= beta
                p += z
        P.matvec(p, out=q)
        s = dots([np.vdot(p, q), np.vdot(p, p).real, np.vdot(x, x).real], what)
        pq = s[0] if np.iscomplexobj(x) else s[0].real
        if (pq.real if np.iscomplexobj(pq) else pq) <= 0 or np.isinf(pq):
            flag = 4
            break
        alpha = rho / pq
        if np.isinf(alpha):
            flag = 4
            break
        stag = stag + 1 if abs(alpha) * np.sqrt(s[1].real) < EPS * np.sqrt(s[2].real) else 0
        axpy(alpha, p, x)
        axpy(-alpha, q, r)
        z = P.psolve(r)
        s = dots([np.vdot(r, r).real, np.vdot(r, z)], what)
        rho1, rho = rho, s[1]
        normr = normr_act = float(np.sqrt(s[0].real))
        resvec.append(normr)
        if normr <= tolb or stag >= 3 or moresteps:
            r = P.b - P.matvec(x)
            z = P.psolve(r)
            s = dots([np.vdot(r, r).real, np.vdot(r, z)], what)
            rho = s[1]
            normr_act = float(np.sqrt(s[0].real))
            resvec[-1] = normr_act
            if normr_act <= tolb:
                flag = 0
                break
            if stag >= 3 and moresteps == 0:
                stag = 0
            moresteps += 1
            if moresteps >= maxmsteps:
                flag = 3
                break
        if normr_act < normrmin:
            normrmin, imin = normr_act, ii
            xmin[:] = x
        if stag >= 3:
            flag = 3
            break
    return finish(P, x, flag, ii, normr_act, n2b, xmin, imin, resvec)

"""Householder reduction of a square 2dbc matrix to upper Hessenberg form (ScaLAPACK
PDGEHRD/PDLAHRD), with the Hessenberg matrix collected on lab 1.

Blocked as LAPACK's xGEHRD with xLAHR2 (Quintana-Ortí and van de Geijn, "Improving the
performance of reduction to Hessenberg form", ACM TOMS 32(2), 2006), distributed as
PDGEHRD. Per panel of ``nb`` columns, ``Q_p = I - V T V^H`` and ``Y = A0 V T`` are
built column by column (``A0`` the panel-start matrix): the current column is
``(I - V T^H V^H)(A0[:, j] - Y V[j]^H)``, LAPACK ``xLARFG`` gives the reflector, and
``A0 v`` is the distributed step (each lab's local GEMV; the partial vectors and the
next column of ``A0`` summed over the labs in lab order: one all-gather of 2n numbers
per column). V, Y and T are replicated (O(n nb)). After the panel the trailing
columns get ``A -= Y V^H`` (local GEMM) and ``A -= V T^H (V^H A)`` (``V^H A`` summed
down grid columns, as PDLARFB).

Every lab sees each finished column of H (it is replicated in the loop); lab 1 keeps
them: the Hessenberg eigenproblem then runs on lab 1 (``eig.py``), which needs n^2
words there. The reflectors stay in the factored local parts and ``tridiag.apply_q``
multiplies ``Q`` into the eigenvectors (PDORMHR).
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np
from scipy.linalg import get_lapack_funcs

from ..blas import gemm
from .grid import ProcessGrid
from .qrbase import summed
from .tridiag import Tridiagonal

__all__ = ["gehrd"]


def _matvec_and_column(a: np.ndarray, g: ProcessGrid, j: int, v: Optional[np.ndarray],
                       gr: np.ndarray, gc: np.ndarray, what: str):
    """``A[:, j:] @ v`` (all rows; ``v`` None: skipped) and the column ``A[:, j]``."""
    buf = np.zeros((2, g.n), dtype=a.dtype)
    c = g.cols_before(j)
    if v is not None and c < a.shape[1] and a.shape[0]:
        buf[0, gr] = a[:, c:] @ v[gc[c:] - j]
    if j < g.n and g.col_owner(j) == g.mycol and a.shape[0]:
        buf[1, gr] = a[:, g.local_col(j)[1]]
    buf = summed(buf, g, what)
    return buf[0], buf[1]


def gehrd(a: np.ndarray, g: ProcessGrid, what: str, keep_q: bool = True):
    """Reduce the n x n matrix with local part ``a`` (in place) to Hessenberg form;
    collective. Returns ``(H or None, reduction)``: H (n x n) on lab 1 only, the
    reduction as a ``tridiag.Tridiagonal`` (its ``apply_q`` applies Q)."""
    n, nb, dt = g.n, g.nb, a.dtype
    keep_h = g.lab == 1
    H = np.zeros((n, n) if keep_h else (0, 0), dtype=dt)  # H lives on lab 1 only
    Ts: List[np.ndarray] = []
    larfg = get_lapack_funcs("larfg", dtype=dt)
    gr, gc = g.global_rows(), g.global_cols()
    _, col = _matvec_and_column(a, g, 0, None, gr, gc, what)
    for j0 in range(0, max(n - 1, 0), nb):
        jb = min(nb, n - 1 - j0)
        t = n - j0 - 1
        V = np.zeros((t, jb), dt)
        Y = np.zeros((n, jb), dt)
        T = np.zeros((jb, jb), dt)
        for i in range(jb):
            j = j0 + i
            b = col.copy()
            if i:
                b -= Y[:, :i] @ V[i - 1, :i].conj()
                w = T[:i, :i].conj().T @ (V[:, :i].conj().T @ b[j0 + 1:])
                b[j0 + 1:] -= V[:, :i] @ w
            beta, tail, tau = larfg(n - j - 1, b[j + 1], b[j + 2:].copy())
            if keep_h:
                H[:j + 1, j] = b[:j + 1]
                H[j + 1, j] = beta
            v = np.zeros(t, dt)
            v[i] = 1
            v[i + 1:] = tail
            V[:, i] = v
            y, col = _matvec_and_column(a, g, j + 1, v[i:], gr, gc, what)
            s = V[:, :i].conj().T @ v
            y -= Y[:, :i] @ s
            Y[:, i] = tau * y
            T[:i, i] = -tau * (T[:i, :i] @ s)
            T[i, i] = tau
        _update(a, g, gr, gc, j0, jb, V, Y, T, what)
        _, col = _matvec_and_column(a, g, j0 + jb, None, gr, gc, what)
        if keep_q:
            Ts.append(T)
            if g.col_owner(j0) == g.mycol:
                rb, c0 = g.rows_before(j0 + 1), g.cols_before(j0)
                a[rb:, c0:c0 + jb] = V[gr[rb:] - (j0 + 1)]
    if keep_h and n:
        H[:, n - 1] = col
    empty = np.zeros(0, dtype=np.float64)
    return (H if keep_h else None), Tridiagonal(g, a, empty, empty, Ts, what)


def _update(a: np.ndarray, g: ProcessGrid, gr: np.ndarray, gc: np.ndarray, j0: int, jb: int,
            V: np.ndarray, Y: np.ndarray, T: np.ndarray, what: str) -> None:
    """Trailing columns (>= j0 + jb): ``A -= Y V^H``, then ``A = (I - V T^H V^H) A``."""
    k = j0 + jb
    c = g.cols_before(k)
    if c < a.shape[1] and a.shape[0]:
        gemm(-1.0, Y[gr], V[gc[c:] - (j0 + 1)].conj().T, 1.0, a[:, c:])
    r = g.rows_before(j0 + 1)
    At = a[r:, c:]
    if At.shape[1] == 0:  # the same on every lab of my grid column
        return
    Vr = np.ascontiguousarray(V[gr[r:] - (j0 + 1)])
    W = Vr.conj().T @ At
    if g.nprow > 1:
        W = g.allreduce(W, "sum", what, "col")
    gemm(-1.0, Vr, T.conj().T @ W, 1.0, At)

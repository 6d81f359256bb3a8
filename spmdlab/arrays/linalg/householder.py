"""Householder QR of a 2dbc matrix, ScaLAPACK PDGEQRF-style, and applying its Q.

Right-looking blocked Householder QR (Golub & Van Loan, *Matrix Computations*, 4th ed.,
§5.2.2-5.2.3) with the compact WY representation ``H_1 ... H_b = I - V T V^H`` of
Schreiber and Van Loan, "A storage-efficient WY representation for products of
Householder transformations", SIAM J. Sci. Stat. Comput. 10(1), 1989, distributed as
ScaLAPACK's PDGEQRF (Choi, Dongarra, Ostrouchov, Petitet, Walker, Whaley, "The design
and implementation of the ScaLAPACK LU, QR and Cholesky factorization routines",
Scientific Programming 5, 1996). For every panel of ``nb`` columns (one block column,
on one grid column of labs):

1. panel factorization down the panel's grid column: the labs of that column gather
   the panel's rows at and below the diagonal (a panel-sized buffer, ``(m - j0) x nb``)
   and factor it with LAPACK ``xGEQRF``, redundantly and identically; each keeps its own
   rows of R and of the Householder vectors V in its local part (LAPACK's storage), and
   forms the triangular factor T;
2. V (each lab's rows) and T are broadcast along the grid rows;
3. trailing update by local GEMMs: ``W = V^H A`` summed down every grid column (one
   allreduce of a ``nb x local columns`` block), then ``A -= V (T^H W)``.

``Q`` stays implicit (V in the factored local parts, T per panel); :meth:`Householder.apply`
applies ``Q`` or ``Q^H`` to a matrix in the same grid layout (forward or backward over the
panels, V broadcast again), which forms ``Q`` explicitly from the identity and gives
``Q^H B`` for least squares (then ``factor.trsm``, PDTRSM, solves with the upper
triangle of the factored local parts). A lab holds its local part plus panel-sized
buffers, never the whole matrix.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from ...layouts.codistributor import codistributor2dbc
from ..array import codistributed, getCodistributor, getLocalPart
from ..blas import gemm
from .grid import ProcessGrid, numroc
from .tsqr import geqrf

__all__ = ["larft", "Householder", "householder_qr", "identity_like", "unit_lower"]


def larft(V: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """The upper-triangular T of ``H_1 ... H_k = I - V T V^H`` (LAPACK xLARFT, forward,
    columnwise) for unit lower-trapezoidal ``V`` and the scalars ``tau``."""
    k = tau.shape[0]
    T = np.zeros((k, k), dtype=V.dtype)
    S = V.conj().T @ V
    for i in range(k):
        T[i, i] = tau[i]
        if i:
            T[:i, i] = -tau[i] * (T[:i, :i] @ S[:i, i])
    return T


def _unit_lower(block: np.ndarray, gl: np.ndarray) -> np.ndarray:
    """Rows of V from the factored storage ``block`` whose rows are panel rows ``gl``
    (0 = the panel's first column's diagonal): 1 on the diagonal, 0 above it."""
    V = np.array(block, copy=True)
    cols = np.arange(V.shape[1])
    V[gl[:, None] < cols[None, :]] = 0
    diag = gl < V.shape[1]
    V[np.flatnonzero(diag), gl[diag]] = 1
    return V


def _unit_lower_in_place(V: np.ndarray) -> None:
    """``V`` (the panel's factored rows from its first column's diagonal down) made
    unit lower trapezoidal in place: 1 on the diagonal, 0 above it."""
    jb = V.shape[1]
    for i in range(min(jb, V.shape[0])):
        V[i, i] = 1
        V[i, i + 1:] = 0


unit_lower = _unit_lower  # (public name for the other reductions: bidiag.py)


class Householder:
    """The factorization on one lab: the factored local part (R above the diagonal, V
    below), ``tau`` (replicated) and one T per panel (replicated)."""

    def __init__(self, grid: ProcessGrid, local: np.ndarray, tau: np.ndarray,
                 Ts: List[np.ndarray], what: str) -> None:
        self.grid, self.local, self.tau, self.Ts, self.what = grid, local, tau, Ts, what
        self.k = tau.shape[0]

    def panels(self) -> List[Tuple[int, int]]:
        nb = self.grid.nb
        return [(j0, min(nb, self.k - j0)) for j0 in range(0, self.k, nb)]

    def _panel_v(self, j0: int, jb: int) -> np.ndarray:
        """My rows (global >= j0) of the panel's V, broadcast from the panel's grid column."""
        g = self.grid
        pc = g.col_owner(j0)
        r0 = g.rows_before(j0)
        V = np.empty((g.mloc - r0, jb), dtype=self.local.dtype)
        if g.mycol == pc:
            c0 = g.cols_before(j0)
            V[...] = _unit_lower(self.local[r0:, c0:c0 + jb], g.global_rows()[r0:] - j0)
        return g.bcast_row(V, pc, self.what)

    def apply(self, X: np.ndarray, conj: bool, col_from: Optional[Callable[[int], int]] = None) -> None:
        """``X <- Q^H X`` (``conj``) or ``Q X``, in place, for ``X`` this lab's local part
        of an m x * matrix in the same grid layout (rows like A's). ``col_from(j0)``: local
        columns of X before it are known untouched (forming Q from the identity)."""
        g = self.grid
        order = self.panels() if conj else self.panels()[::-1]
        for j0, jb in order:
            T = self.Ts[j0 // g.nb]
            V = self._panel_v(j0, jb)
            r0 = g.rows_before(j0)
            c0 = 0 if col_from is None else int(col_from(j0))
            Xt = X[r0:, c0:]
            if Xt.shape[1] == 0:  # the same on every lab of my grid column
                continue
            W = V.conj().T @ Xt
            W = g.allreduce(W, "sum", self.what, "col") if g.nprow > 1 else W
            gemm(-1.0, V, (T.conj().T if conj else T) @ W, 1.0, Xt)  # in place, no temporary


def householder_qr(A: codistributed, what: str) -> Householder:
    """Factor the 2dbc matrix ``A`` (LAPACK dtype); collective over the block's labs.

    Look-ahead (ScaLAPACK's PDGEQRF leaves it out; the LU/Cholesky kernels in
    ``factor.py`` have it): the grid column owning the next panel applies the current
    panel's reflectors to that panel's columns first, factors it and starts its
    broadcast, then updates the rest of its trailing matrix while the panel travels."""
    c = getCodistributor(A)
    g = ProcessGrid(c).connect(what)
    local = np.array(getLocalPart(A), copy=True)
    m, n, nb = g.m, g.n, g.nb
    k = min(m, n)
    tau = np.zeros(k, dtype=local.dtype)
    Ts: List[np.ndarray] = []
    pending = _start_panel(g, local, 0, k, what) if k else None
    while pending is not None:
        j0, jb, buf, request = pending
        g.finish(request, what)
        r0 = g.rows_before(j0)
        nv = (g.mloc - r0) * jb
        Vl = buf[:nv].reshape(g.mloc - r0, jb)
        T = buf[nv:nv + jb * jb].reshape(jb, jb).copy()
        tau[j0:j0 + jb] = buf[nv + jb * jb:]
        Ts.append(T)
        TH = T.conj().T
        ct = g.cols_before(j0 + jb)
        j1 = j0 + jb
        done = ct
        pending = None
        if j1 < k:
            if g.mycol == g.col_owner(j1):  # the next panel's columns first
                done = min(g.nloc, ct + min(nb, k - j1))
                _reflect(g, Vl, TH, local[r0:, ct:done], what)
            pending = _start_panel(g, local, j1, k, what)
        _reflect(g, Vl, TH, local[r0:, done:], what)
    return Householder(g, local, tau, Ts, what)


def _reflect(g: ProcessGrid, Vl: np.ndarray, TH: np.ndarray, At: np.ndarray, what: str) -> None:
    """``At -= V T^H (V^H At)`` in place (the sum over the grid column in between)."""
    if not At.shape[1]:  # the same on every lab of my grid column
        return
    W = (Vl.conj().T if np.iscomplexobj(Vl) else Vl.T) @ At
    if g.nprow > 1:
        W = g.allreduce(W, "sum", what, "col")
    gemm(-1.0, Vl, TH @ W, 1.0, At)  # in place on the view, no temporary


def _start_panel(g: ProcessGrid, local: np.ndarray, j0: int, k: int, what: str) -> tuple:
    """Factor the panel at column ``j0`` on its grid column (``geqrf`` of the gathered
    rows, ``larft``), write R and V into ``local``, and start the broadcast of my rows
    of V, T and tau along my grid row; ``(j0, jb, buffer, request)``."""
    m, nb = g.m, g.nb
    jb = min(nb, k - j0)
    pc = g.col_owner(j0)
    r0 = g.rows_before(j0)
    buf = np.empty((g.mloc - r0) * jb + jb * jb + jb, dtype=local.dtype)
    if g.mycol == pc:
        c0 = g.cols_before(j0)
        nv = (g.mloc - r0) * jb
        if g.nprow == 1:  # the panel is all mine, in order: no gather, no row shuffles
            h, t = geqrf(local[r0:, c0:c0 + jb])  # (f2py makes the one Fortran copy)
            local[r0:, c0:c0 + jb] = h
            V = buf[:nv].reshape(g.mloc - r0, jb)
            V[...] = h
            _unit_lower_in_place(V)
        else:
            counts = [numroc(m, nb, pr, g.nprow) - g.rows_before(j0, pr) for pr in range(g.nprow)]
            P = g.allgatherv_col(local[r0:, c0:c0 + jb], counts, what)
            globs = np.concatenate([g.global_rows(pr)[g.rows_before(j0, pr):] for pr in range(g.nprow)])
            Pg = np.empty_like(P)
            Pg[globs - j0] = P
            h, t = geqrf(Pg)
            mine = g.global_rows()[r0:] - j0
            local[r0:, c0:c0 + jb] = h[mine]
            V = _unit_lower(h, np.arange(h.shape[0]))
            buf[:nv] = V[mine].reshape(-1)
        T = larft(V, t)
        buf[nv:nv + jb * jb] = T.reshape(-1)
        buf[nv + jb * jb:] = t
    return j0, jb, buf, g.ibcast_row(buf, pc)


def identity_like(g: ProcessGrid, m: int, ncols: int, dtype: Any) -> Tuple[np.ndarray, codistributor2dbc]:
    """The local part of the m x ncols identity in ``g``'s grid layout, and its layout."""
    c = g.codist
    cq = codistributor2dbc(c.LabGrid, c.BlockSize, c.Orientation, (m, ncols))
    rows = g.global_rows()
    cols = cq.globalIndices(2, g.lab, g.numlabs)
    E = np.zeros((rows.size, cols.size), dtype=dtype)
    hit = np.flatnonzero(np.isin(rows, cols))
    if hit.size:
        E[hit, np.searchsorted(cols, rows[hit])] = 1
    return E, cq

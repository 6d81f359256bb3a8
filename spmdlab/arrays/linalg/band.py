"""Eigenvalues of a Hermitian 2dbc matrix in two stages: a distributed reduction to band
form by BLAS-3 updates, then the band's eigenvalues by LAPACK on every lab.

The one-stage reduction (``tridiag.sytrd``, PDSYTRD) spends half its flops in a
matrix-vector product per column, which reads the whole trailing matrix from memory
each time: two labs sharing one memory system cannot run it faster than one process
with two BLAS threads. The two-stage form of Bischof, Lang and Sun ("A framework for
symmetric band reduction", ACM TOMS 26(4), 2000; LAPACK's ``xSYTRD_SY2SB`` and
``xSYTRD_SB2ST``, ELPA's and PLASMA's two-stage solvers) moves that work into matrix
products:

1. **dense to band** (``xSYTRD_SY2SB`` distributed): for each panel of ``w = b``
   columns ``j..j+w-1`` (held by one or more labs), the QR factors of
   the panel below the band, ``A[j+w:, j:j+w] = Q R``, are computed on every lab
   (LAPACK ``xGEQRF`` on the panel, summed over the labs in lab order, so every lab
   holds the same V, T, R bitwise; O(n b) words), the panel becomes ``[R; 0]`` and the
   trailing matrix ``A22 <- Q^H A22 Q`` with ``Q = I - V T V^H``:
   ``X = A22 V T`` (each lab's local GEMM on its columns, summed over the labs),
   ``W = X - 1/2 V (T^H V^H X)``, ``A22 -= [V W] [W V]^H`` (one local GEMM of rank
   2b; both triangles kept as in ``tridiag.py``).
2. **band to eigenvalues**: the band (``b + 1`` diagonals, lower storage) is summed
   onto every lab and LAPACK's ``xSBEVD``/``xHBEVD`` (through scipy's
   ``eigvals_banded``: ``xSBTRD``'s Givens sweeps to tridiagonal form, then ``xSTERF``)
   gives the eigenvalues, the same on every lab.

Eigenvectors stay with the one-stage path (the band-to-tridiagonal step's rotations
would have to be applied back to n x n vectors).
"""
from __future__ import annotations

from typing import Iterator, Tuple

import numpy as np
from scipy.linalg import eigvals_banded, get_lapack_funcs

from ..blas import gemm
from .grid import ProcessGrid
from .householder import larft, unit_lower
from .qrbase import summed

__all__ = ["BAND", "panels", "qr_factors", "panel_qr", "reduce_to_band", "band_of", "band_eigvalsh"]

BAND = 32  # measured at n = 2048 on 2 labs: 16 slows the GEMMs, 64 the band solver


def panels(n: int, b: int) -> Iterator[int]:
    """The first column ``j`` of each panel of ``b`` columns that reaches further than
    ``b`` rows below its diagonal. One width for all: a column's band reaches ``b``
    rows below it, and a narrower next panel would leave some of it outside the next
    transform."""
    return iter(range(0, max(n - 1 - b, 0), max(b, 1)))


def _held(g: ProcessGrid, j: int, w: int) -> Tuple[np.ndarray, np.ndarray]:
    """Of the columns ``j..j+w-1``: which I hold (positions from ``j``) and where
    (local columns)."""
    cols = np.arange(j, j + w)
    mine = np.flatnonzero(g.col_owner(cols) == g.mycol)
    return mine, g.local_col(cols[mine])[1]


def qr_factors(P: np.ndarray, what: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(V, T, R)`` of ``P = (I - V T V^H) [R; 0]`` (xGEQRF, xLARFT)."""
    qr, tau, _, info = get_lapack_funcs("geqrf", dtype=P.dtype)(P)
    if info:
        raise np.linalg.LinAlgError(f"{what}: xGEQRF failed (info {info})")
    k = tau.size
    V = unit_lower(qr, np.arange(qr.shape[0]))[:, :k]
    return V, larft(V, tau), np.triu(qr[:k])


def panel_qr(a: np.ndarray, g: ProcessGrid, i: int, j: int, w: int,
             what: str) -> Tuple[np.ndarray, np.ndarray]:
    """``(V, T)`` of the QR factors of the panel ``A[i:, j:j+w]`` (summed onto every lab in
    lab order and factored on each, so all agree bitwise); my part of the panel
    becomes ``[R; 0]``."""
    gr = g.global_rows()
    pos, loc = _held(g, j, w)
    r = g.rows_before(i)
    mine = pos.size and r < a.shape[0]
    P = np.zeros((g.m - i, w), dtype=a.dtype)
    if mine:
        P[np.ix_(gr[r:] - i, pos)] = a[r:, loc]
    V, T, R = qr_factors(summed(P, g, what), what)
    if mine:
        P[...] = 0
        P[:R.shape[0]] = R
        a[np.ix_(np.arange(r, a.shape[0]), loc)] = P[np.ix_(gr[r:] - i, pos)]
    return V, T


def reduce_to_band(a: np.ndarray, g: ProcessGrid, what: str, b: int = BAND) -> None:
    """Reduce the Hermitian matrix whose local part (both triangles) is ``a`` in place
    to band form: below the diagonal, nothing outside ``b`` subdiagonals (the strictly
    upper triangle is left stale). Collective over the block's labs."""
    gr, gc = g.global_rows(), g.global_cols()
    mloc, nloc = a.shape
    w = b
    for j in panels(g.n, b):
        k = j + w
        V, T = panel_qr(a, g, k, j, w, what)
        r, c = g.rows_before(k), g.cols_before(k)
        if r >= mloc or c >= nloc:
            summed(np.zeros((g.n - k, V.shape[1]), dtype=a.dtype), g, what)
            continue
        X = np.zeros((g.n - k, V.shape[1]), dtype=a.dtype)
        X[gr[r:] - k] = a[r:, c:] @ V[gc[c:] - k]
        X = summed(X, g, what) @ T
        X -= 0.5 * (V @ (T.conj().T @ (V.conj().T @ X)))
        VX, XV = np.hstack([V, X]), np.hstack([X, V])
        gemm(-1.0, VX[gr[r:] - k], XV[gc[c:] - k].conj().T, 1.0, a[r:, c:])  # one rank-2b GEMM


def band_of(a: np.ndarray, g: ProcessGrid, b: int, what: str) -> np.ndarray:
    """The lower band of the distributed matrix in LAPACK's band storage,
    ``ab[d, c] = A[c + d, c]`` for ``d = 0..b``, on every lab."""
    n = g.n
    gr, gc = g.global_rows(), g.global_cols()
    ab = np.zeros((b + 1, n), dtype=a.dtype)
    for lc0 in range(0, gc.size, g.nb):
        lc1 = min(lc0 + g.nb, gc.size)
        g0, g1 = int(gc[lc0]), int(gc[lc1 - 1]) + 1
        r0, r1 = g.rows_before(g0), g.rows_before(min(g1 + b, n))
        sub = a[r0:r1, lc0:lc1]
        D = gr[r0:r1, None] - gc[None, lc0:lc1]
        m = (D >= 0) & (D <= b)
        ab[D[m], np.broadcast_to(gc[None, lc0:lc1], D.shape)[m]] = sub[m]
    return summed(ab, g, what)


def band_eigvalsh(a: np.ndarray, g: ProcessGrid, what: str, b: int = BAND) -> np.ndarray:
    """The eigenvalues (ascending, real, the same on every lab) of the Hermitian matrix
    whose local part (both triangles) is ``a``; ``a`` is overwritten."""
    if g.n == 0:
        return np.zeros(0, dtype=np.zeros(0, a.dtype).real.dtype)
    b = max(min(b, g.n - 1), 0)
    reduce_to_band(a, g, what, b)
    ab = band_of(a, g, b, what)
    if np.iscomplexobj(ab):
        ab[0] = ab[0].real
    return eigvals_banded(ab, lower=True, check_finite=False)

"""Singular values of a 2dbc matrix (m >= n) in two stages: a distributed reduction to
upper band form by BLAS-3 updates, then the band's bidiagonal form and singular values
by LAPACK on every lab.

The one-stage bidiagonal reduction (``bidiag.gebrd``, PDGEBRD) spends half its flops in
two matrix-vector products per column, each reading the whole trailing matrix: bound
by memory, which two labs on one machine share. As for ``band.py`` (Bischof, Lang and
Sun, "A framework for symmetric band reduction", ACM TOMS 26(4), 2000; the two-stage
SVD of Großer and Lang, "Efficient parallel reduction to bidiagonal form", Parallel
Comput. 25, 1999; PLASMA's and MAGMA's ``gesvd`` two-stage paths), panels of ``b``
columns move that work into GEMMs:

1. **dense to band** (PDGEBRD's panel loop with block reflectors): for the panel
   ``j..j+w-1``, the QR factors of ``A[j:, j:j+w]`` (``xGEQRF`` on every lab, the panel
   summed over the labs in lab order so V, T and R agree bitwise) make it ``[R; 0]``
   and reach the columns right of it: ``W = V^H A`` (local GEMMs summed over the labs),
   ``A -= V (T^H W)``; then the LQ factors of the row panel ``A[j:j+w, j+w:]`` (the QR
   of its conjugate transpose) make it ``[R2^H 0]`` and reach the rows below:
   ``X = A V2`` (summed), ``A -= (X T2) V2^H``. Every panel has ``b`` columns (the last
   fewer), so no row's band reaches a column the next right transform touches.
2. **band to singular values**: the upper band (``b`` superdiagonals) is summed onto
   every lab; LAPACK ``xGBBRD`` takes it to real bidiagonal form by Givens rotations
   and ``xLASQ1`` (dqds) gives the singular values, the same on every lab.
"""
from __future__ import annotations

import ctypes
from typing import Tuple

import numpy as np

from ..blas import gemm
from .band import BAND, panel_qr, qr_factors
from .bidiag import lapack_routine, lasq1
from .grid import ProcessGrid
from .qrbase import summed

__all__ = ["reduce_to_upper_band", "upper_band_of", "gbbrd", "band_svdvals"]


def _column_panel(a: np.ndarray, g: ProcessGrid, j: int, w: int, what: str) -> None:
    """``A[j:, j:j+w] -> [R; 0]`` and ``A[j:, j+w:] <- Q^H A[j:, j+w:]``."""
    gr, gc = g.global_rows(), g.global_cols()
    n, k = g.n, j + w
    V, T = panel_qr(a, g, j, j, w, what)
    r, c = g.rows_before(j), g.cols_before(k)
    W = np.zeros((V.shape[1], n - k), dtype=a.dtype)
    if r < a.shape[0] and c < a.shape[1]:
        W[:, gc[c:] - k] = V[gr[r:] - j].conj().T @ a[r:, c:]
    W = summed(W, g, what)
    if r < a.shape[0] and c < a.shape[1]:
        gemm(-1.0, V[gr[r:] - j], T.conj().T @ W[:, gc[c:] - k], 1.0, a[r:, c:])


def _row_panel(a: np.ndarray, g: ProcessGrid, j: int, w: int, what: str) -> None:
    """``A[j:j+w, j+w:] -> [L 0]`` and ``A[j+w:, j+w:] <- A[j+w:, j+w:] Q2``."""
    gr, gc = g.global_rows(), g.global_cols()
    m, n, k = g.m, g.n, j + w
    c = g.cols_before(k)
    rows = np.arange(j, k)
    mine = np.flatnonzero(g.row_owner(rows) == g.myrow)
    loc = g.local_row(rows[mine])[1]
    P = np.zeros((n - k, w), dtype=a.dtype)  # the row panel's conjugate transpose
    if mine.size and c < a.shape[1]:
        P[np.ix_(gc[c:] - k, mine)] = a[loc, c:].conj().T
    V, T, R = qr_factors(summed(P, g, what), what)
    if mine.size and c < a.shape[1]:
        full = np.zeros((n - k, w), dtype=a.dtype)
        full[:R.shape[0]] = R
        a[np.ix_(loc, np.arange(c, a.shape[1]))] = full[np.ix_(gc[c:] - k, mine)].conj().T
    r = g.rows_before(k)
    X = np.zeros((m - k, V.shape[1]), dtype=a.dtype)
    if r < a.shape[0] and c < a.shape[1]:
        X[gr[r:] - k] = a[r:, c:] @ V[gc[c:] - k]
    X = summed(X, g, what)
    if r < a.shape[0] and c < a.shape[1]:
        gemm(-1.0, X[gr[r:] - k] @ T, V[gc[c:] - k].conj().T, 1.0, a[r:, c:])


def reduce_to_upper_band(a: np.ndarray, g: ProcessGrid, what: str, b: int = BAND) -> None:
    """Reduce the m x n (m >= n) matrix with local part ``a`` in place to upper band form
    (nonzero only from the diagonal to ``b`` columns right of it). Collective."""
    n = g.n
    for j in range(0, n, max(b, 1)):
        w = min(b, n - j)
        _column_panel(a, g, j, w, what)
        if n - j - w > 1:
            _row_panel(a, g, j, w, what)


def upper_band_of(a: np.ndarray, g: ProcessGrid, b: int, what: str) -> np.ndarray:
    """The n x n upper band in LAPACK's band storage, as a C-order ``(n, b + 1)`` array
    whose row ``c`` is Fortran's column ``c``: ``[c, b + r - c] = A[r, c]`` for
    ``c - b <= r <= c``; on every lab."""
    n = g.n
    gr, gc = g.global_rows(), g.global_cols()
    ab = np.zeros((n, b + 1), dtype=a.dtype)
    for lc0 in range(0, gc.size, g.nb):
        lc1 = min(lc0 + g.nb, gc.size)
        g0, g1 = int(gc[lc0]), int(gc[lc1 - 1]) + 1
        r0, r1 = g.rows_before(max(g0 - b, 0)), g.rows_before(min(g1, n))
        D = gc[None, lc0:lc1] - gr[r0:r1, None]
        keep = (D >= 0) & (D <= b)
        cols = np.broadcast_to(gc[None, lc0:lc1], D.shape)[keep]
        ab[cols, b - D[keep]] = a[r0:r1, lc0:lc1][keep]
    return summed(ab, g, what)


def gbbrd(ab: np.ndarray, n: int, ku: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(d, e)``: the real upper bidiagonal form of the n x n upper band matrix ``ab``
    (as :func:`upper_band_of`; overwritten), LAPACK xGBBRD without vectors."""
    dt = ab.dtype
    real = np.zeros(0, dt).real.dtype
    d, e = np.zeros(max(n, 1), real), np.zeros(max(n, 1), real)
    work = np.zeros(2 * max(n, 1), dt)
    dummy, info = np.zeros(1, dt), ctypes.c_int(0)
    one, zero = ctypes.c_int(1), ctypes.c_int(0)
    ref = ctypes.byref
    args = [ref(ctypes.c_char(b"N")), ref(ctypes.c_int(n)), ref(ctypes.c_int(n)), ref(zero), ref(zero),
            ref(ctypes.c_int(ku)), ab.ctypes.data, ref(ctypes.c_int(ku + 1)), d.ctypes.data, e.ctypes.data,
            dummy.ctypes.data, ref(one), dummy.ctypes.data, ref(one), dummy.ctypes.data, ref(one),
            work.ctypes.data]
    prefix = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
              np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}[np.dtype(dt)]
    if prefix in "cz":
        rwork = np.zeros(max(n, 1), real)
        args.append(rwork.ctypes.data)
    args.append(ref(info))
    if n:
        lapack_routine(prefix + "gbbrd", len(args))(*args)
    if info.value:
        raise np.linalg.LinAlgError("SVD did not converge")
    return d[:n], e[:max(n - 1, 0)]


def band_svdvals(a: np.ndarray, g: ProcessGrid, what: str, b: int = BAND) -> np.ndarray:
    """The singular values (descending, real, the same on every lab) of the m x n
    (m >= n) matrix whose local part is ``a``; ``a`` is overwritten."""
    n = g.n
    b = max(min(b, n - 1), 0)
    reduce_to_upper_band(a, g, what, max(b, 1))
    ab = upper_band_of(a, g, b, what)
    d, e = gbbrd(ab, n, b)
    return lasq1(d, e)

"""Householder reduction of a 2dbc matrix (m >= n) to real upper bidiagonal form, and
applying its Q and P (ScaLAPACK PDGEBRD/PDLABRD, PDORMBR).

``A = Q B P^H`` with ``Q = H_0 H_1 ...`` (reflectors from the left, ``u`` stored
below the diagonal) and ``P = G_0 G_1 ...`` (from the right, ``v`` stored right of the
superdiagonal), blocked as LAPACK's xGEBRD (Dongarra, Sorensen, Hammarling, "Block
reduction of matrices to condensed forms for eigenvalue computations", J. Comput.
Appl. Math. 27, 1989), distributed as PDGEBRD (Choi et al., ScaLAPACK 1996): per panel
of ``nb`` columns, PDLABRD builds ``U, Y, X, V`` with the current matrix
``A0 - U Y^H - X V^H``, column by column; its two distributed steps per column are
``A0^H u`` and ``A0 v`` (each lab's local GEMV, partial vectors summed over the labs in
lab order together with the next column and row of ``A0``: two all-gathers of O(n)
numbers). The panel's ``U, Y, X, V`` are replicated (O(n nb) workspace), so the
trailing update ``A0 -= U Y^H + X V^H`` is two local GEMMs per lab. As in
``tridiag.py``, ScaLAPACK keeps these along grid rows/columns; for spmdlab's small
grids replicating them moves the same words.

The bidiagonal's singular values come from LAPACK ``xLASQ1`` (dqds, Fernando and
Parlett 1994: high relative accuracy), reached through scipy's ``cython_lapack``.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Tuple

import numpy as np
from scipy.linalg import get_lapack_funcs

from ..blas import gemm
from .grid import ProcessGrid
from .householder import larft, unit_lower
from .qrbase import combine_sum, real_dtype

__all__ = ["Bidiagonal", "gebrd", "apply_q", "apply_p", "lasq1", "bdsdc", "lapack_routine", "real_of"]


class Bidiagonal:
    """The reduction on one lab: ``d, e`` (real, replicated), the factored local part
    and the ``T`` of every panel's left and right reflectors."""

    def __init__(self, grid: ProcessGrid, local: np.ndarray, d: np.ndarray, e: np.ndarray,
                 Tq: List[np.ndarray], Tp: List[np.ndarray], what: str) -> None:
        self.grid, self.local, self.d, self.e = grid, local, d, e
        self.Tq, self.Tp, self.what = Tq, Tp, what


def _gather(parts: List[Tuple[np.ndarray, Any]], n_out: List[int], dt: Any,
            g: ProcessGrid, what: str) -> List[np.ndarray]:
    """Sum over the labs of zero-padded vectors: ``parts`` = (positions, values) per output."""
    offs = np.concatenate(([0], np.cumsum(n_out)))
    buf = np.zeros(int(offs[-1]), dtype=dt)
    for k, (pos, val) in enumerate(parts):
        if val is not None and pos.size:
            buf[offs[k] + pos] = val
    if g.numlabs > 1:
        buf = combine_sum(buf, what)
    return [buf[offs[k]:offs[k + 1]] for k in range(len(n_out))]


def _col_row(a: np.ndarray, g: ProcessGrid, gr: np.ndarray, gc: np.ndarray, j: int, k: int):
    """My entries of A0[j:, k] and A0[j, k+1:] as (positions, values)."""
    r, c = g.rows_before(j), g.cols_before(k + 1)
    col = row = None
    if k < g.n and g.col_owner(k) == g.mycol:
        col = a[r:, g.local_col(k)[1]]
    if j < g.m and g.row_owner(j) == g.myrow:
        row = a[g.local_row(j)[1], c:]
    return (gr[r:] - j, col), (gc[c:] - (k + 1), row)


def gebrd(a: np.ndarray, g: ProcessGrid, what: str, keep: bool = True) -> Bidiagonal:
    """Reduce the m x n (m >= n) matrix with local part ``a`` (in place) to upper
    bidiagonal form; collective over the block's labs."""
    m, n, nb, dt = g.m, g.n, g.nb, a.dtype
    d = np.zeros(n, dtype=real_dtype(dt))
    e = np.zeros(max(n - 1, 0), dtype=real_dtype(dt))
    Tq: List[np.ndarray] = []
    Tp: List[np.ndarray] = []
    larfg = get_lapack_funcs("larfg", dtype=dt)
    gr, gc = g.global_rows(), g.global_cols()
    cp, rp = _col_row(a, g, gr, gc, 0, 0)
    col, row = _gather([cp, rp], [m, max(n - 1, 0)], dt, g, what)
    for j0 in range(0, n, nb):
        jb = min(nb, n - j0)
        mt, nt = m - j0, n - j0
        U, X = np.zeros((mt, jb), dt), np.zeros((mt, jb), dt)
        Y, V = np.zeros((nt, jb), dt), np.zeros((nt, jb), dt)
        tq, tp = np.zeros(jb, dt), np.zeros(jb, dt)
        for i in range(jb):
            j = j0 + i
            x = col - U[i:, :i] @ Y[i, :i].conj() - X[i:, :i] @ V[i, :i].conj()
            beta, tail, tau = larfg(m - j, x[0], x[1:].copy())
            d[j] = beta.real
            u = np.empty(m - j, dt)
            u[0] = 1
            u[1:] = tail
            U[i:, i], tq[i] = u, tau
            # y = tau (A0^H u - Y U^H u - V X^H u) on columns j+1.., with A0's row j+1 and column j+1
            r, c = g.rows_before(j), g.cols_before(j + 1)
            mine = a[r:, c:].conj().T @ u[gr[r:] - j] if r < a.shape[0] and c < a.shape[1] else None
            cp, rp = _col_row(a, g, gr, gc, j + 1, j + 1)
            sizes = [n - j - 1, m - j - 1, max(n - j - 2, 0)]
            y, col, row1 = _gather([(gc[c:] - (j + 1), mine), cp, rp], sizes, dt, g, what)
            y -= Y[i + 1:, :i] @ (U[i:, :i].conj().T @ u) + V[i + 1:, :i] @ (X[i:, :i].conj().T @ u)
            y *= tau
            Y[i + 1:, i] = y
            if j == n - 1:
                break
            # the row j right of the diagonal, after this step's left reflector
            rr = row - U[i, :i + 1] @ Y[i + 1:, :i + 1].conj().T - X[i, :i] @ V[i + 1:, :i].conj().T
            rc = rr.conj()
            beta, tail, tau = larfg(n - j - 1, rc[0], rc[1:].copy())
            e[j] = beta.real
            v = np.empty(n - j - 1, dt)
            v[0] = 1
            v[1:] = tail
            V[i + 1:, i], tp[i] = v, tau
            # x = tau (A0 v - U Y^H v - X V^H v) on rows j+1..
            r, c = g.rows_before(j + 1), g.cols_before(j + 1)
            mine = a[r:, c:] @ v[gc[c:] - (j + 1)] if r < a.shape[0] and c < a.shape[1] else None
            (xs,) = _gather([(gr[r:] - (j + 1), mine)], [m - j - 1], dt, g, what)
            xs -= U[i + 1:, :i + 1] @ (Y[i + 1:, :i + 1].conj().T @ v) + X[i + 1:, :i] @ (V[i + 1:, :i].conj().T @ v)
            xs *= tau
            X[i + 1:, i] = xs
            row = row1
        # corrections of the next column and row by this panel; trailing update
        k = j0 + jb
        if k < n:
            col = col - U[jb:] @ Y[jb].conj() - X[jb:] @ V[jb].conj()
            row = row - U[jb] @ Y[jb + 1:].conj().T - X[jb] @ V[jb + 1:].conj().T
            r2, c2 = g.rows_before(k), g.cols_before(k)
            if r2 < a.shape[0] and c2 < a.shape[1]:
                At = a[r2:, c2:]
                Ur, Xr = U[gr[r2:] - j0], X[gr[r2:] - j0]
                Yc, Vc = Y[gc[c2:] - j0], V[gc[c2:] - j0]
                gemm(-1.0, Ur, Yc.conj().T, 1.0, At)
                gemm(-1.0, Xr, Vc.conj().T, 1.0, At)
        if keep:
            _store(a, g, gr, gc, j0, jb, U, V, Tq, Tp, tq, tp)
    return Bidiagonal(g, a, d, e, Tq, Tp, what)


def _store(a, g, gr, gc, j0, jb, U, V, Tq, Tp, tq, tp) -> None:
    """Keep the panel's reflectors in the factored local part (U in the panel's block
    column, V (rows j0.., shifted by one column) in the panel's block row) and their T."""
    Tq.append(larft(U, tq))
    Tp.append(larft(V[1:], tp))
    if g.col_owner(j0) == g.mycol:
        r, c0 = g.rows_before(j0), g.cols_before(j0)
        a[r:, c0:c0 + jb] = U[gr[r:] - j0]
    if g.row_owner(j0) == g.myrow:
        r0, c = g.local_row(j0)[1], g.cols_before(j0 + 1)
        off = gc[c:] - (j0 + 1)
        keep = off[None, :] > np.arange(jb)[:, None]  # right of the units: U's part stays
        block = a[r0:r0 + jb, c:]
        block[keep] = V[1:][off].T[keep]


def _panels(n: int, nb: int) -> List[Tuple[int, int]]:
    return [(j0, min(nb, n - j0)) for j0 in range(0, n, nb)]


def apply_q(bd: Bidiagonal, Z: np.ndarray) -> None:
    """``Z <- Q Z`` in place (``Z`` local part of an m x k matrix laid out like A's rows)."""
    g, a = bd.grid, bd.local
    for p, (j0, jb) in reversed(list(enumerate(_panels(g.n, g.nb)))):
        pc, r = g.col_owner(j0), g.rows_before(j0)
        Vb = np.empty((g.mloc - r, jb), dtype=a.dtype)
        if g.mycol == pc:
            c0 = g.cols_before(j0)
            Vb[...] = unit_lower(a[r:, c0:c0 + jb], g.global_rows()[r:] - j0)
        g.bcast_row(Vb, pc, bd.what)
        Zt = Z[r:]
        if Zt.shape[1]:
            W = Vb.conj().T @ Zt
            W = g.allreduce(W, "sum", bd.what, "col") if g.nprow > 1 else W
            gemm(-1.0, Vb, bd.Tq[p] @ W, 1.0, Zt)


def apply_p(bd: Bidiagonal, Z: np.ndarray, g2: ProcessGrid) -> None:
    """``Z <- P Z`` in place, ``Z`` the local part (grid ``g2``: rows laid out like A's
    columns) of an n x k matrix: the right reflectors (rows of the factored part) are
    sent along grid columns and transposed onto ``g2``'s rows."""
    g, a = bd.grid, bd.local
    for p, (j0, jb) in reversed(list(enumerate(_panels(g.n, g.nb)))):
        if j0 + 1 >= g.n:
            continue
        pr, c = g.row_owner(j0), g.cols_before(j0 + 1)
        Vrow = np.empty((jb, g.nloc - c), dtype=a.dtype)
        if g.myrow == pr:
            r0 = g.local_row(j0)[1]
            Vrow[...] = a[r0:r0 + jb, c:]
        g.bcast_col(Vrow, pr, bd.what)
        Vfull = _allgather_cols(Vrow, g, j0 + 1, bd.what)  # jb x (n - j0 - 1), replicated
        r = g2.rows_before(j0 + 1)
        gl = g2.global_rows()[r:] - (j0 + 1)
        Vb = unit_lower(np.ascontiguousarray(Vfull[:, gl].T), gl)
        Zt = Z[r:]
        if Zt.shape[1]:
            W = Vb.conj().T @ Zt
            W = g2.allreduce(W, "sum", bd.what, "col") if g2.nprow > 1 else W
            gemm(-1.0, Vb, bd.Tp[p] @ W, 1.0, Zt)


def _allgather_cols(Vrow: np.ndarray, g: ProcessGrid, k: int, what: str) -> np.ndarray:
    """The jb x (n - k) panel rows from the pieces of every grid column (replicated)."""
    pos = g.global_cols()[g.cols_before(k):] - k
    full = np.zeros((Vrow.shape[0], g.n - k), dtype=Vrow.dtype)
    if g.myrow == 0:
        full[:, pos] = Vrow
    return combine_sum(full, what) if g.numlabs > 1 else full


_LAPACK: dict = {}


def lapack_routine(name: str, nargs: int) -> Any:
    """LAPACK routine ``name`` from scipy's ``cython_lapack`` (pointer arguments only)."""
    if name not in _LAPACK:
        from scipy.linalg import cython_lapack

        cap = cython_lapack.__pyx_capi__[name]
        api = ctypes.pythonapi
        api.PyCapsule_GetName.restype = ctypes.c_char_p
        api.PyCapsule_GetName.argtypes = [ctypes.py_object]
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        ptr = api.PyCapsule_GetPointer(cap, api.PyCapsule_GetName(cap))
        _LAPACK[name] = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * nargs)(ptr)
    return _LAPACK[name]


def real_of(d: np.ndarray) -> np.dtype:
    return np.dtype(np.float32 if d.dtype == np.float32 else np.float64)


def lasq1(d: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Singular values (descending) of the upper bidiagonal (d, e), LAPACK xLASQ1."""
    n = d.size
    dt = real_of(d)
    s = np.array(d, dtype=dt, copy=True)
    ee = np.zeros(max(n, 1), dtype=dt)
    ee[:max(n - 1, 0)] = e
    work = np.zeros(max(4 * n, 1), dtype=dt)
    nn, info = ctypes.c_int(n), ctypes.c_int(0)
    if n:
        lapack_routine("slasq1" if dt == np.float32 else "dlasq1", 5)(
            ctypes.byref(nn), s.ctypes.data, ee.ctypes.data, work.ctypes.data, ctypes.byref(info))
    if info.value:
        raise np.linalg.LinAlgError("SVD did not converge")
    return s


def bdsdc(d: np.ndarray, e: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(s, U, Vt)`` of the upper bidiagonal (d, e) by divide and conquer (LAPACK
    xBDSDC, Gu and Eisenstat 1995): B = U diag(s) Vt, s descending, U and Vt n x n."""
    n = d.size
    dt = real_of(d)
    s = np.array(d, dtype=dt, copy=True)
    ee = np.zeros(max(n, 1), dtype=dt)
    ee[:max(n - 1, 0)] = e
    U = np.zeros((n, n), dtype=dt, order="F")
    Vt = np.zeros((n, n), dtype=dt, order="F")
    work = np.zeros(max(3 * n * n + 4 * n, 1), dtype=dt)
    iwork = np.zeros(max(8 * n, 1), dtype=np.int32)
    q, iq = np.zeros(1, dt), np.zeros(1, np.int32)
    nn, ld, info = ctypes.c_int(n), ctypes.c_int(max(n, 1)), ctypes.c_int(0)
    uplo, compq = ctypes.c_char(b"U"), ctypes.c_char(b"I")
    if n:
        lapack_routine("sbdsdc" if dt == np.float32 else "dbdsdc", 14)(
            ctypes.byref(uplo), ctypes.byref(compq), ctypes.byref(nn), s.ctypes.data, ee.ctypes.data,
            U.ctypes.data, ctypes.byref(ld), Vt.ctypes.data, ctypes.byref(ld), q.ctypes.data,
            iq.ctypes.data, work.ctypes.data, iwork.ctypes.data, ctypes.byref(info))
    if info.value:
        raise np.linalg.LinAlgError("SVD did not converge")
    return s, U, Vt

"""Householder reduction of a 2dbc matrix (m >= n) to real upper bidiagonal form, and
applying its Q and P (ScaLAPACK PDGEBRD/PDLABRD, PDORMBR).

``A = Q B P^H`` with ``Q = H_0 H_1 ...`` (reflectors from the left, ``u`` stored
below the diagonal) and ``P = G_0 G_1 ...`` (from the right, ``v`` stored right of the
superdiagonal), blocked as LAPACK's xGEBRD (Dongarra, Sorensen, Hammarling, "Block
reduction of matrices to condensed forms for eigenvalue computations", J. Comput.
Appl. Math. 27, 1989), distributed as PDGEBRD (Choi et al., ScaLAPACK 1996): per panel,
PDLABRD builds ``U, Y, X, V`` with the current matrix ``A0 - U Y^H - X V^H``, column
by column; its two distributed steps per column are ``A0^H u`` and ``A0 v`` (each lab's
local GEMV, partial vectors summed over the labs in lab order: two all-gathers of O(n)
numbers per column). The panel's vectors are replicated (O(n nb) workspace), so the
trailing update is a local GEMM per lab. As in ``tridiag.py``, ScaLAPACK keeps these
along grid rows/columns; for spmdlab's small grids replicating them moves the same
words.

What differs from a literal PDLABRD, for speed in Python (same arithmetic, the sums
associated differently):

- the panel's vectors are kept interleaved, ``UX = [u_0 x_0 u_1 x_1 ...]`` (rows j0..)
  and ``YV = [y_0 v_0 y_1 v_1 ...]`` (columns j0..), so the current matrix is
  ``A0 - UX YV^H``: each of PDLABRD's pairs of panel GEMVs is one, and the trailing
  update one GEMM of inner dimension twice the panel width;
- each of the two sums per column carries a second vector, the row j (with ``A0^H u``)
  and the column j+1 (with ``A0 v``) of the current matrix: their owners' pieces of
  ``A0`` less every lab's share of the panel's corrections (all linear in the sums),
  so the replicated panel work per column is the two small GEMVs ``UX^H u``, ``YV^H v``
  and a share of the rest;
- panels are PANEL columns wide inside the distribution blocks (LAPACK's xGEBRD takes
  its own panel width, ILAENV's 32, whatever the data layout): the replicated panel work
  grows with the width, the trailing GEMM wants it wide; the reflectors and their
  ``T`` are still kept per distribution block, for :func:`apply_q`/:func:`apply_p`.

The bidiagonal's singular values come from LAPACK ``xLASQ1`` (dqds, Fernando and
Parlett 1994: high relative accuracy), reached through scipy's ``cython_lapack``.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Tuple

import numpy as np
from scipy.linalg import get_lapack_funcs

from ..blas import gemm
from ..collectives import allgather
from .grid import ProcessGrid
from .householder import larft, unit_lower
from .qrbase import real_dtype, summed

__all__ = ["Bidiagonal", "gebrd", "apply_q", "apply_p", "lasq1", "bdsdc", "lapack_routine", "real_of"]

# Columns per PDLABRD panel, measured (benchmarks/profile_gebrd.py's method: gebrd alone,
# N = 2048, 2 labs on a 1 x 2 grid, nb 64, fastest of 4 runs in turns, 2026-11-28, load
# 2.2-2.6): 16 -> 1.65 s, 32 -> 1.78 s, 64 -> 2.06 s; one lab's own work without the sums,
# at load 2-4: 8 -> 1.53 s, 12 -> 1.79 s, 16 -> 1.41-1.46 s, 24 -> 1.43-1.45 s, 32 ->
# 1.48-1.49 s. The replicated per-column panel GEMVs grow with the width; the trailing
# GEMM (inner dimension twice the width) is as fast at 32 as at 64 and slows below.
PANEL = 16


class Bidiagonal:
    """The reduction on one lab: ``d, e`` (real, replicated), the factored local part
    and the ``T`` of every block's left and right reflectors."""

    def __init__(self, grid: ProcessGrid, local: np.ndarray, d: np.ndarray, e: np.ndarray,
                 Tq: List[np.ndarray], Tp: List[np.ndarray], what: str) -> None:
        self.grid, self.local, self.d, self.e = grid, local, d, e
        self.Tq, self.Tp, self.what = Tq, Tp, what


def _same(x: Any) -> Any:
    return x


def _share(lo: int, hi: int, k: int, p: int) -> slice:
    """Part ``k`` of ``p`` consecutive parts of ``lo..hi``: a lab's share of a replicated
    correction, added to its contribution before the sum over the labs."""
    size = hi - lo
    return slice(lo + k * size // p, lo + (k + 1) * size // p)


def _sum(buf: np.ndarray, p: int, what: str) -> np.ndarray:
    """The labs' zero-padded contributions summed, in lab order (bitwise the same on
    every lab: ``qrbase.combine_sum`` without its copy)."""
    if p == 1:
        return buf
    parts = allgather(buf, what)
    out = parts[0]
    for k in range(1, p):
        out += parts[k]
    return out


class _Axis:
    """One lab's indices along the rows (or columns) of a panel that starts at global
    index ``j0``, for k = 0 .. span: ``before[k]``, the local index where global
    ``j0 + k..`` starts (the local index of ``j0 + k`` if it is mine), and ``sel[k]``,
    the panel coordinates (global - j0) of those local entries: a slice where they are
    consecutive (a 1 x p grid's rows), else a view of one index array per panel (no
    index arithmetic per column)."""

    def __init__(self, glob: np.ndarray, j0: int, span: int) -> None:
        before = np.searchsorted(glob, np.arange(j0, j0 + span + 1))
        pos = glob[before[0]:] - j0
        size = pos.size
        offs = (before - before[0]).tolist()
        if size == 0 or int(pos[-1] - pos[0]) == size - 1:
            p0 = int(pos[0]) if size else 0
            self.sel: List[Any] = [slice(p0 + o, p0 + size) for o in offs]
        else:
            self.sel = [pos[o:] for o in offs]
        self.before: List[int] = before.tolist()

    def mine(self, k: int) -> bool:
        """Is global ``j0 + k`` one of my indices (k < span)?"""
        return self.before[k + 1] > self.before[k]


class _Reduction:
    """The state of one lab's reduction: the local part, the grid's global indices,
    ``d, e``, and the current column (rows j.., summed over the labs)."""

    def __init__(self, a: np.ndarray, g: ProcessGrid, what: str) -> None:
        self.a, self.g, self.what = a, g, what
        self.m, self.n, self.dt = g.m, g.n, a.dtype
        self.d = np.zeros(self.n, dtype=real_dtype(self.dt))
        self.e = np.zeros(max(self.n - 1, 0), dtype=real_dtype(self.dt))
        self.larfg = get_lapack_funcs("larfg", dtype=self.dt)
        self.cj = np.conj if self.dt.kind == "c" else _same
        self.gr, self.gc = g.global_rows(), g.global_cols()
        self.me, self.p = g.lab - 1, g.numlabs
        buf = np.zeros(self.m, dtype=self.dt)  # A0[0:, 0]
        if self.m and self.n and g.col_owner(0) == g.mycol:
            buf[self.gr] = a[:, 0]
        self.col = _sum(buf, self.p, what)

    def panel(self, j0: int, jb: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """PDLABRD on columns j0 .. j0+jb-1, then the trailing update; ``(UX, YV, tq, tp)``."""
        a, m, n, dt, cj, larfg, what = self.a, self.m, self.n, self.dt, self.cj, self.larfg, self.what
        me, p, d, e = self.me, self.p, self.d, self.e
        mt, nt = m - j0, n - j0
        R, C = _Axis(self.gr, j0, jb + 1), _Axis(self.gc, j0, jb + 1)
        UX = np.zeros((mt, 2 * jb), dt, order="F")
        YV = np.zeros((nt, 2 * jb), dt, order="F")
        tq, tp = np.zeros(jb, dt), np.zeros(jb, dt)
        col = self.col
        for i in range(jb):
            j = j0 + i
            beta, tail, tau = larfg(m - j, col[0], col[1:], overwrite_x=1)
            d[j], tq[i] = beta.real, tau
            UX[i, 2 * i] = 1
            UX[i + 1:, 2 * i] = tail
            if j == n - 1:
                break
            # y = tau (A0^H u - YV UX^H u) and the row j of A0 - UX YV^H (conjugated), columns j+1..
            buf = np.zeros((2, nt), dt)
            ys, rs = buf
            r, c = R.before[i], C.before[i + 1]
            if r < a.shape[0] and c < a.shape[1]:
                ys[C.sel[i + 1]] = cj(cj(UX[R.sel[i], 2 * i]) @ a[r:, c:])
                if R.mine(i):
                    rs[C.sel[i + 1]] = cj(a[r, c:])
            if i:
                sh = _share(i + 1, nt, me, p)  # my part of the panel's corrections
                w = np.stack((cj(cj(UX[i:, 2 * i]) @ UX[i:, :2 * i]), cj(UX[i, :2 * i])))
                buf[:, sh] -= w @ YV[sh, :2 * i].T
            rs -= tau * ys
            ys, rc = _sum(buf, p, what)[:, i + 1:]
            np.multiply(ys, tau, out=YV[i + 1:, 2 * i])
            beta, tail, tau = larfg(n - j - 1, rc[0], rc[1:], overwrite_x=1)
            e[j], tp[i] = beta.real, tau
            YV[i + 1, 2 * i + 1] = 1
            YV[i + 2:, 2 * i + 1] = tail
            # x = tau (A0 v - UX YV^H v) and the column j+1 of A0 - UX YV^H, rows j+1..
            buf = np.zeros((2, mt), dt)
            xs, cs = buf
            r, c = R.before[i + 1], C.before[i + 1]
            if r < a.shape[0] and c < a.shape[1]:
                xs[R.sel[i + 1]] = a[r:, c:] @ YV[C.sel[i + 1], 2 * i + 1]
                if C.mine(i + 1):
                    cs[R.sel[i + 1]] = a[r:, c]
            sh = _share(i + 1, mt, me, p)
            w = np.stack((cj(cj(YV[i + 1:, 2 * i + 1]) @ YV[i + 1:, :2 * i + 1]), cj(YV[i + 1, :2 * i + 1])))
            buf[:, sh] -= w @ UX[sh, :2 * i + 1].T
            cs -= tau * xs
            xs, col = _sum(buf, p, what)[:, i + 1:]
            np.multiply(xs, tau, out=UX[i + 1:, 2 * i + 1])
        self.col = col  # the next panel's first column arrived updated by this panel
        r2, c2 = R.before[jb], C.before[jb]
        if j0 + jb < n and r2 < a.shape[0] and c2 < a.shape[1]:
            gemm(-1.0, UX[R.sel[jb]], YV[C.sel[jb]].conj().T, 1.0, a[r2:, c2:])
        return UX, YV, tq, tp


def gebrd(a: np.ndarray, g: ProcessGrid, what: str, keep: bool = True) -> Bidiagonal:
    """Reduce the m x n (m >= n) matrix with local part ``a`` (in place) to upper
    bidiagonal form; collective over the block's labs. ``keep``: keep the reflectors
    (in ``a``) and their ``T`` per distribution block, for :func:`apply_q`/:func:`apply_p`."""
    red = _Reduction(a, g, what)
    m, n, dt = g.m, g.n, a.dtype
    Tq: List[np.ndarray] = []
    Tp: List[np.ndarray] = []
    for b0, bb in _panels(n, g.nb):
        if keep:
            U, V = np.zeros((m - b0, bb), dt), np.zeros((n - b0, bb), dt)
            tq, tp = np.zeros(bb, dt), np.zeros(bb, dt)
        for j0, jb in _panels(bb, PANEL):
            UX, YV, tqp, tpp = red.panel(b0 + j0, jb)
            if keep:
                U[j0:, j0:j0 + jb], V[j0:, j0:j0 + jb] = UX[:, 0::2], YV[:, 1::2]
                tq[j0:j0 + jb], tp[j0:j0 + jb] = tqp, tpp
        if keep:
            _store(a, g, red.gr, red.gc, b0, bb, U, V, Tq, Tp, tq, tp)
    return Bidiagonal(g, a, red.d, red.e, Tq, Tp, what)


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
    return summed(full, g, what)


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

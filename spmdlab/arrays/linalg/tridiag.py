"""Householder reduction of a Hermitian 2dbc matrix to real tridiagonal form, and the
back-transformation of eigenvectors (ScaLAPACK PDSYTRD/PDLATRD and PDORMTR).

Blocked as LAPACK's xSYTRD/xHETRD with ``uplo='L'`` (Dongarra, Sorensen, Hammarling,
"Block reduction of matrices to condensed forms for eigenvalue computations", J. Comput.
Appl. Math. 27, 1989), distributed as ScaLAPACK's PDSYTRD (Choi, Demmel, Dhillon,
Dongarra, Ostrouchov, Petitet, Stanley, Walker, Whaley, "ScaLAPACK: a portable linear
algebra library for distributed memory computers", Comput. Phys. Commun. 97, 1996).
For each panel of ``nb`` columns (one block column of the grid):

1. PDLATRD, column by column: the current column (the panel-start matrix's, corrected
   by the panel's earlier reflectors, ``a -= V W^H e + W V^H e``), LAPACK ``xLARFG``
   for the reflector, then ``w = tau (A v - W V^H v - V W^H v)`` and
   ``w += -tau/2 (w^H v) v``. ``A v`` is the one distributed step: every lab multiplies
   the lower triangle of its local part of the trailing matrix by ``v`` as PDSYMV
   does (a block below the diagonal serves both its rows and, transposed, its
   columns; a diagonal block by xSYMV), and the partial vectors, together with the next
   column's entries, are summed over the labs in lab order (one all-gather of
   ``2 (n - j)`` numbers per column; every lab then holds the same V, W, tau bitwise).
   ScaLAPACK keeps V and W distributed along the grid rows and columns; here the
   panel's V and W (``n x nb`` each, O(n nb) workspace) are replicated, which costs
   the same words moved for the small grids spmdlab runs on and lets every vector
   step run redundantly.
2. PDSYR2K: the trailing matrix ``A -= V W^H + W V^H``, one GEMM of rank 2 nb per
   local block column from its diagonal block down.

Only the lower triangle is read or updated; the local part is kept in Fortran order,
where the tall, ``nb``-wide blocks of the product stream by columns.
The reflectors are stored, as LAPACK does, below the
subdiagonal of the panel columns of the factored local part; ``T`` per panel (xLARFT)
is replicated. :func:`apply_q` multiplies ``Q = H_1 ... H_{n-1}`` into a matrix laid
out like A (PDORMTR: per panel, V broadcast along grid rows, ``V^H Z`` summed down
grid columns, ``Z -= V T (V^H Z)`` by GEMM).
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np
from scipy.linalg import get_lapack_funcs

from ..blas import gemm
from .grid import ProcessGrid
from .householder import larft
from .qrbase import real_dtype, summed

__all__ = ["Tridiagonal", "sytrd", "apply_q"]


class Tridiagonal:
    """The reduction on one lab: ``d, e`` (real, replicated), the factored local part
    (reflectors below the subdiagonal of every panel), one ``T`` per panel."""

    def __init__(self, grid: ProcessGrid, local: np.ndarray, d: np.ndarray, e: np.ndarray,
                 Ts: List[np.ndarray], what: str) -> None:
        self.grid, self.local, self.d, self.e, self.Ts, self.what = grid, local, d, e, Ts, what


class _Blocks:
    """My local block columns, once: ``(lc0, lc1, g0, rd, rs)`` each (its local
    columns, first global column, and the local rows where its diagonal block and the
    rows below that block start), with views of ``a`` from the diagonal block down and
    from below it."""

    def __init__(self, a: np.ndarray, g: ProcessGrid, gc: np.ndarray) -> None:
        self.items = []
        self.views = []
        for lc0 in range(0, gc.size, g.nb):
            lc1 = min(lc0 + g.nb, gc.size)
            g0 = int(gc[lc0])
            rd, rs = g.rows_before(g0), g.rows_before(g0 + lc1 - lc0)
            self.items.append((lc0, lc1, g0, rd, rs))
            self.views.append((a[rd:, lc0:lc1], a[rs:, lc0:lc1]))
            if rs > rd:  # the diagonal block, both triangles from the lower (kept so by the updates)
                Dg = a[rd:rs, lc0:lc1]
                Dg[...] = np.tril(Dg) + np.tril(Dg, -1).conj().T


def _lower_matvec(a: np.ndarray, g: ProcessGrid, j: int, v: np.ndarray, gr: np.ndarray,
                  gc: np.ndarray, blocks: _Blocks, out: np.ndarray) -> None:
    """``out[i - j] = (A[j:, j:] @ v)[i - j]`` for my rows and columns ``i`` (this lab's
    partial sums), reading each element of the lower triangle of my part once:
    PDSYMV's split, where a block ``B`` below the diagonal adds ``B v_cols`` to its rows
    and ``B^H v_rows`` to its columns, and a diagonal block (kept with both triangles)
    its own product; half the words of a product with both triangles (the product is
    bound by memory, which the labs share)."""
    r1, c1 = g.rows_before(j), g.cols_before(j)
    mloc, nloc = a.shape
    if r1 >= mloc or c1 >= nloc:
        return
    vr = v[gr[r1:] - j].conj()
    yr = np.zeros(mloc - r1, dtype=a.dtype)
    yc = np.zeros(nloc - c1, dtype=a.dtype)
    first = c1 // g.nb
    for (lc0, lc1, g0, rd, rs), (M, B) in zip(blocks.items[first:], blocks.views[first:]):
        if lc0 < c1:  # the block holding column j: from j on
            lc0, g0, rd = c1, j, r1
            M, B = a[rd:, lc0:lc1], a[rs:, lc0:lc1]
        vc = v[g0 - j:g0 - j + lc1 - lc0]
        yr[rd - r1:] += M @ vc
        if rs < mloc:
            yc[lc0 - c1:lc1 - c1] = vr[rs - r1:] @ B
    out[gr[r1:] - j] = yr
    out[gc[c1:] - j] += yc.conj()


def _matvec_and_column(a: np.ndarray, g: ProcessGrid, j: int, v: np.ndarray | None,
                       gr: np.ndarray, gc: np.ndarray, blocks: _Blocks,
                       what: str) -> Tuple[np.ndarray, np.ndarray]:
    """``A[j:, j:] @ v`` (``v`` None: skipped) and the column ``A[j:, j]`` of the
    distributed matrix, on every lab; only the lower triangle is read."""
    t = g.n - j
    buf = np.zeros((2, t), dtype=a.dtype)
    r1 = g.rows_before(j)
    rows = gr[r1:] - j
    if v is not None:
        _lower_matvec(a, g, j, v, gr, gc, blocks, buf[0])
    if t and g.col_owner(j) == g.mycol and rows.size:
        buf[1, rows] = a[r1:, g.local_col(j)[1]]
    buf = summed(buf, g, what)
    return buf[0], buf[1]


def _trailing_lower(a: np.ndarray, g: ProcessGrid, k: int, j0: int, F: np.ndarray,
                    G: np.ndarray, gr: np.ndarray, blocks: _Blocks) -> None:
    """PDSYR2K on the lower triangle: ``A[k:, k:] -= F G^H`` on each of my block columns
    from its diagonal block down (the strictly upper blocks are never read)."""
    c1 = g.cols_before(k)
    for lc0, lc1, g0, rd, _ in blocks.items:
        if lc1 <= c1:
            continue
        if lc0 < c1:
            lc0, g0, rd = c1, k, g.rows_before(k)
        if rd < a.shape[0]:
            gemm(-1.0, F[gr[rd:] - j0], G[g0 - j0:g0 - j0 + lc1 - lc0].conj().T, 1.0, a[rd:, lc0:lc1])


def sytrd(a: np.ndarray, g: ProcessGrid, what: str) -> Tridiagonal:
    """Reduce the Hermitian matrix whose local part's lower triangle is ``a`` (modified
    in place; Fortran order suits its narrow block products) to tridiagonal form;
    collective over the block's labs."""
    n, nb, dt = g.n, g.nb, a.dtype
    d = np.zeros(n, dtype=real_dtype(dt))
    e = np.zeros(max(n - 1, 0), dtype=real_dtype(dt))
    Ts: List[np.ndarray] = []
    if n == 0:
        return Tridiagonal(g, a, d, e, Ts, what)
    larfg = get_lapack_funcs("larfg", dtype=dt)
    gr, gc = g.global_rows(), g.global_cols()
    blocks = _Blocks(a, g, gc)
    _, col = _matvec_and_column(a, g, 0, None, gr, gc, blocks, what)
    for j0 in range(0, n - 1, nb):
        jb = min(nb, n - 1 - j0)
        t = n - j0
        # the panel's V and W interleaved: F[:, 2k] = V[:, k], F[:, 2k+1] = W[:, k], so
        # each pair of products V (W^H x) + W (V^H x) is one GEMV
        VW = np.zeros((t, jb, 2), dtype=dt)
        F = VW.reshape(t, 2 * jb)
        V, W = VW[:, :, 0], VW[:, :, 1]
        taus = np.zeros(jb, dtype=dt)
        for i in range(jb):
            j = j0 + i
            x = col.copy()  # A[j:, j] at the panel's start
            if i:
                x -= F[i:, :2 * i] @ VW[i, :i, ::-1].conj().reshape(2 * i)
            d[j] = x[0].real
            beta, tail, tau = larfg(n - j - 1, x[1], x[2:].copy())
            e[j] = beta.real
            v = np.empty(n - j - 1, dtype=dt)
            v[0] = 1
            v[1:] = tail
            y, col = _matvec_and_column(a, g, j + 1, v, gr, gc, blocks, what)
            if i:
                Fi = F[i + 1:, :2 * i]
                y -= Fi @ (Fi.conj().T @ v).reshape(i, 2)[:, ::-1].reshape(2 * i)
            y *= tau
            y += (-0.5 * tau * np.vdot(y, v)) * v
            V[i + 1:, i] = v
            W[i + 1:, i] = y
            taus[i] = tau
        # the next column, corrected by this panel; the trailing update (PDSYR2K) as
        # one GEMM of rank 2 jb: A -= [V W] [W V]^H
        G = VW[:, :, ::-1].reshape(t, 2 * jb)
        col -= F[jb:] @ G[jb].conj()
        _trailing_lower(a, g, j0 + jb, j0, F, G, gr, blocks)
        Vp = V[1:]
        Ts.append(larft(Vp, taus))
        if g.col_owner(j0) == g.mycol:
            rb, c0 = g.rows_before(j0 + 1), g.cols_before(j0)
            a[rb:, c0:c0 + jb] = Vp[gr[rb:] - (j0 + 1)]
    d[n - 1] = col[0].real
    return Tridiagonal(g, a, d, e, Ts, what)


def apply_q(tri: Tridiagonal, Z: np.ndarray) -> None:
    """``Z <- Q Z`` in place, ``Z`` this lab's local part of an n x k matrix whose rows
    are laid out as A's (PDORMTR: block reflectors applied last panel first)."""
    g, a = tri.grid, tri.local
    n, nb = g.n, g.nb
    panels = list(range(0, n - 1, nb))
    for p in reversed(range(len(panels))):
        j0 = panels[p]
        jb = min(nb, n - 1 - j0)
        pc = g.col_owner(j0)
        rb = g.rows_before(j0 + 1)
        V = np.empty((g.mloc - rb, jb), dtype=a.dtype)
        if g.mycol == pc:
            c0 = g.cols_before(j0)
            V[...] = a[rb:, c0:c0 + jb]
        g.bcast_row(V, pc, tri.what)
        Zt = Z[rb:]
        if Zt.shape[1] == 0:
            continue
        Wt = V.conj().T @ Zt
        if g.nprow > 1:
            Wt = g.allreduce(Wt, "sum", tri.what, "col")
        gemm(-1.0, V, tri.Ts[p] @ Wt, 1.0, Zt)

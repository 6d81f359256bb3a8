"""Distributed kernels on the 2dbc grid: LU with partial pivoting, Cholesky, triangular
solves. They work on a lab's local part (a C-order numpy array this module may
overwrite) and its :class:`~spmdlab.arrays.linalg.grid.ProcessGrid`; every lab of the
block calls them together. The public functions are in ``dense.py``.

LU is ScaLAPACK's PDGETRF, right-looking and blocked (Choi, Dongarra, Ostrouchov,
Petitet, Walker, Whaley: "The design and implementation of the ScaLAPACK LU, QR and
Cholesky factorization routines", Scientific Programming 5, 1996). For each panel of
``nb`` columns:

1. the panel's grid column gathers the panel's rows (a panel-sized ``(m-k) x nb``
   buffer) and factors it with LAPACK ``getrf``: the pivot search runs down the whole
   grid column, so the pivots are exactly PDGETRF's partial pivoting (PDGETF2 finds
   them one column at a time with a MAXLOC all-reduce per column; one all-gather per
   panel replaces ``nb`` latency-bound reductions);
2. the factored panel, its pivots and LAPACK's ``info`` are broadcast along every grid
   row, so every lab knows the pivots (and a zero pivot) at the same step;
3. the row swaps are applied across grid rows (one all-to-all in each grid column,
   only the rows that move);
4. the grid row holding the diagonal block solves the U block row (TRSM) and
   broadcasts it down the grid columns;
5. every lab updates its part of the trailing matrix with one local GEMM, in place
   (``blas.gemm``), the SUMMA step of the update.

The panel kernel is LAPACK's ``getrf`` from scipy, which OpenBLAS implements as a
recursive LU (Toledo's recursive partial pivoting, GEMM-rich); CALU's tournament
pivoting (Grigori, Demmel, Xiang 2011) would need fewer messages on a grid column but
chooses other pivots than partial pivoting, and the pivots here are kept exactly
LAPACK's. Look-ahead is one panel deep: on a 1 x q grid the next panel's owner
factors it while the others update, which hides the panel as long as a step's
update outlasts one panel factorization (all but the last few steps).

Cholesky is PDPOTRF's right-looking variant, lower (A = L L^H): the panel's grid
column gathers the panel, factors the diagonal block (``potrf``) and solves the rest
(``trsm``), the panel goes along the grid rows, and each lab updates only the blocks
of its trailing part on or below the diagonal (SYRK). A failing leading minor comes
back in ``info`` on every lab at the same step.

Triangular solves are PDTRSM's blocked substitution: diagonal-block solve on the
block's grid row, solution block broadcast down the grid columns, panel of T along
the grid rows, GEMM update.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np
from scipy.linalg import lapack
from scipy.linalg.blas import get_blas_funcs

from ..blas import gemm
from .grid import ProcessGrid, local_before, numroc

__all__ = ["getrf", "potrf", "trsm", "move_rows"]

# Cholesky's trailing update runs GEMMs over about this many local columns at once, each
# from the diagonal block of its first column down: bigger GEMMs for a few more flops
# (the garbage above the diagonal is zeroed at the end). The extra flops of a chunk of
# c local columns are about (c - nb) * npcol / (2 (n - k)) of its useful ones: 256 spent
# ~10% more at N = 4096 on a 1x2 grid, 128 (two blocks of 64) ~3%, and a GEMM of
# (n - k) x 128 x nb still runs at full speed. One GEMM per step (the whole trailing
# rectangle) would double the update's flops.
_CHOL_CHUNK = 128


def _panel_gather(a: np.ndarray, G: ProcessGrid, k0: int, w: int, lc0: int, what: str) -> np.ndarray:
    """On the panel's grid column: rows ``k0..m-1`` of the panel (local columns
    ``lc0:lc0+w``) in global order, from every lab of the grid column, as a
    Fortran-order array LAPACK can factor in place."""
    nb, p = G.nb, G.nprow
    lr0 = G.rows_before(k0)
    counts = [numroc(G.m, nb, q, p) - local_before(k0, nb, q, p) for q in range(p)]
    P = G.allgatherv_col(a[lr0:, lc0:lc0 + w], counts, what)
    out = np.empty(P.shape, dtype=P.dtype, order="F")
    if p == 1:
        out[...] = P
        return out
    gidx = np.concatenate([G.global_rows(q)[local_before(k0, nb, q, p):] for q in range(p)])
    np.take(P, np.argsort(gidx, kind="stable"), axis=0, out=out)
    return out


def move_rows(a: np.ndarray, G: ProcessGrid, dst: np.ndarray, src: np.ndarray, what: str) -> None:
    """Row ``dst[t]`` of the distributed matrix becomes old row ``src[t]`` (global rows;
    every lab of the block passes the same lists). Rows move inside each grid column:
    local copies, plus one all-to-all when some cross grid rows."""
    if dst.size == 0:
        return
    G.connect(what)  # collective: before any lab-dependent return
    if a.shape[1] == 0:  # the same for every lab of my grid column
        return
    pd, ld = G.local_row(dst)
    ps, ls = G.local_row(src)
    me = G.myrow
    here = (ps == me) & (pd == me)
    keep = a[ls[here]]  # copies taken before any row is overwritten
    cross = bool(np.any(ps != pd)) and G.nprow > 1
    chunks = None
    if cross:
        sends: list = [None] * G.nprow
        rbytes = [0] * G.nprow
        row_bytes = a.shape[1] * a.itemsize
        for q in range(G.nprow):
            if q == me:
                continue
            out = (ps == me) & (pd == q)
            if out.any():
                sends[q] = a[ls[out]]
            rbytes[q] = int(np.count_nonzero((pd == me) & (ps == q))) * row_bytes
        chunks = G.alltoallv(G.col_comm, G.nprow, sends, rbytes, what)
    a[ld[here]] = keep
    if chunks is not None:
        for q in range(G.nprow):
            sel = (pd == me) & (ps == q)
            if q != me and sel.any():
                a[ld[sel]] = chunks[q].view(a.dtype).reshape(-1, a.shape[1])


def getrf(a: np.ndarray, G: ProcessGrid, what: str) -> Tuple[np.ndarray, np.ndarray, int]:
    """LU with partial pivoting of the distributed ``m x n`` matrix whose local part is
    ``a`` (overwritten by L below the diagonal, unit diagonal implied, and U).

    Returns ``(perm, diag, info)`` on every lab: ``perm`` the row permutation
    (``(P A)[i] = A[perm[i]]``), ``diag`` U's diagonal, ``info`` 0 or the 1-based
    column of the first exactly zero pivot (LAPACK's convention; the factorization
    still completes)."""
    m, n, nb = G.m, G.n, G.nb
    kmax = min(m, n)
    dt = a.dtype
    getrf_ = lapack.get_lapack_funcs("getrf", dtype=dt)
    trsm_ = get_blas_funcs("trsm", dtype=dt)
    G.connect(what)
    myg = G.global_rows()
    perm = np.arange(m)
    diag = np.zeros(kmax, dtype=dt)
    info = 0

    def start_panel(k0: int) -> tuple:
        """Factor panel k0 on its grid column and start its broadcast along the rows."""
        w = min(nb, kmax - k0)
        pc = (k0 // nb) % G.npcol
        rows = m - k0
        buf = np.empty((rows + 2, w), dtype=dt)  # the panel, its pivots, info
        if G.mycol == pc:
            P = _panel_gather(a, G, k0, w, G.cols_before(k0), what)
            lu_, piv, inf = getrf_(P, overwrite_a=True)  # in place: P is Fortran-order
            buf[:rows] = lu_
            buf[rows] = piv[:w]
            buf[rows + 1] = inf
            del P, lu_
        return k0, w, buf, G.ibcast_row(buf, pc)

    pending = start_panel(0) if kmax else None
    while pending is not None:
        k0, w, buf, request = pending
        G.finish(request, what)
        K = k0 // nb
        pr_k, pc_k = K % G.nprow, K % G.npcol
        rows = m - k0
        panel = buf[:rows]
        piv = buf[rows].real.astype(np.int64)
        inf = int(buf[rows + 1, 0].real)
        if inf > 0 and info == 0:
            info = k0 + inf
        diag[k0:k0 + w] = panel[np.arange(w), np.arange(w)]
        # the swaps of this panel as one permutation of rows k0..m-1
        step = np.arange(k0, m)
        for i in range(w):
            j = piv[i]
            if j != i:
                step[i], step[j] = step[j], step[i]
        moved = np.flatnonzero(step != np.arange(k0, m))
        perm[k0:] = perm[k0:][step - k0]
        move_rows(a, G, k0 + moved, step[moved], what)
        lr0 = G.rows_before(k0)
        mine = panel if G.nprow == 1 else panel[myg[lr0:] - k0]  # L (and U11) rows of my rows >= k0
        if G.mycol == pc_k:
            lc0 = G.cols_before(k0)
            a[lr0:, lc0:lc0 + w] = mine
        tc0 = G.cols_before(k0 + w)
        ubuf = np.empty((w, G.nloc - tc0), dtype=dt)
        if G.myrow == pr_k and ubuf.size:
            U12 = trsm_(1.0, panel[:w, :w], np.asfortranarray(a[lr0:lr0 + w, tc0:]),
                        side=0, lower=1, trans_a=0, diag=1)
            a[lr0:lr0 + w, tc0:] = U12
            ubuf[...] = U12
        G.bcast_col(ubuf, pr_k, what)
        tr0 = G.rows_before(k0 + w)
        L21 = mine[tr0 - lr0:]
        # look-ahead: update the next panel's columns first, factor that panel and start
        # its broadcast, then update the rest of the trailing matrix while it travels
        k1 = k0 + w
        done = 0
        if k1 < kmax:
            if G.mycol == ((k1 // nb) % G.npcol):
                done = min(nb, kmax - k1)
                if tr0 < G.mloc:
                    gemm(-1.0, L21, ubuf[:, :done], 1.0, a[tr0:, tc0:tc0 + done])
            pending = start_panel(k1)
        else:
            pending = None
        if tr0 < G.mloc and ubuf.shape[1] > done:
            gemm(-1.0, L21, ubuf[:, done:], 1.0, a[tr0:, tc0 + done:])
    return perm, diag, info


def potrf(a: np.ndarray, G: ProcessGrid, what: str) -> int:
    """Cholesky A = L L^H of the distributed Hermitian ``n x n`` matrix whose local part
    is ``a``, from its lower triangle; L overwrites the lower triangle (the strict upper
    triangle is left as garbage: callers zero it). Returns 0, or the order of the first
    leading minor that is not positive definite (the same on every lab, at the step
    that found it; the factorization stops there)."""
    n, nb = G.n, G.nb
    dt = a.dtype
    potrf_ = lapack.get_lapack_funcs("potrf", dtype=dt)
    trsm_ = get_blas_funcs("trsm", dtype=dt)
    G.connect(what)
    myg, mygc = G.global_rows(), G.global_cols()

    def start_panel(k0: int) -> tuple:
        """Factor panel k0 on its grid column (potrf + trsm), start its row broadcast."""
        w = min(nb, n - k0)
        pc = (k0 // nb) % G.npcol
        rows = n - k0
        buf = np.empty((rows + 1, w), dtype=dt)
        if G.mycol == pc:
            P = _panel_gather(a, G, k0, w, G.cols_before(k0), what)
            L11, inf = potrf_(P[:w], lower=1, clean=1, overwrite_a=0)
            buf[rows] = inf
            if inf == 0:
                buf[:w] = L11
                if rows > w:  # L21 = A21 L11^-H
                    buf[w:rows] = trsm_(1.0, L11, P[w:], side=1, lower=1, trans_a=2, diag=0,
                                        overwrite_b=1)
            else:
                buf[:rows] = 0
            del P
        return k0, w, buf, G.ibcast_row(buf, pc)

    def update(Lr, colsH, tr0: int, tc0: int, c: int, stop: int) -> None:
        """A22 -= L21 L21^H on local columns c..stop, only from each column's diagonal
        block down (SYRK), in chunks of about _CHOL_CHUNK columns."""
        while c < stop:
            gj = mygc[c]
            e = min(stop, c + max(nb - gj % nb, _CHOL_CHUNK - _CHOL_CHUNK % nb))
            r = max(G.rows_before(gj - gj % nb), tr0)  # my rows from that block row down
            if r < G.mloc:
                gemm(-1.0, Lr[r - tr0:], colsH[:, c - tc0:e - tc0], 1.0, a[r:, c:e])
            c = e

    pending = start_panel(0) if n else None
    while pending is not None:
        k0, w, buf, request = pending
        G.finish(request, what)
        pending = None
        rows = n - k0
        inf = int(buf[rows, 0].real)
        if inf:
            return k0 + inf
        pc_k = (k0 // nb) % G.npcol
        panel = buf[:rows]
        lr0, lc = G.rows_before(k0), G.cols_before(k0)
        mine = panel if G.nprow == 1 else panel[myg[lr0:] - k0]
        if G.mycol == pc_k:
            a[lr0:, lc:lc + w] = mine
        tr0, tc0 = G.rows_before(k0 + w), G.cols_before(k0 + w)
        rowsL = panel[mygc[tc0:] - k0]  # L21's rows of my trailing columns (one copy)
        colsH = (np.conj(rowsL, out=rowsL) if np.iscomplexobj(rowsL) else rowsL).T  # (w, my cols), a view
        Lr = mine[tr0 - lr0:]
        k1 = k0 + w
        done = tc0
        if k1 < n:  # look-ahead: the next panel's columns first, then start that panel
            if G.mycol == (k1 // nb) % G.npcol:
                done = min(G.nloc, tc0 + min(nb, n - k1))
                update(Lr, colsH, tr0, tc0, tc0, done)
            pending = start_panel(k1)
        update(Lr, colsH, tr0, tc0, done, G.nloc)
    return 0


def trsm(T: np.ndarray, G: ProcessGrid, B: np.ndarray, GB: ProcessGrid, lower: bool,
         unit: bool, what: str) -> None:
    """Solve ``T X = B`` in place of ``B`` (PDTRSM, left side, no transpose): ``T`` the
    local part of an ``n x n`` triangular matrix (only its ``lower`` or upper triangle is
    read; ``unit`` diagonal implied if asked), ``B`` of an ``n x r`` matrix on the same
    grid and block size (``GB`` its grid)."""
    n, nb = G.n, G.nb
    dt = B.dtype
    trsm_ = get_blas_funcs("trsm", dtype=dt)
    G.connect(what)
    GB.connect(what)
    blocks = range(0, n, nb)
    with np.errstate(all="ignore"):  # a zero diagonal gives Inf/NaN, as MATLAB's (once: not per block)
        for k0 in (blocks if lower else reversed(blocks)):
            _trsm_step(T, G, B, GB, k0, lower, unit, trsm_, what)


def _trsm_step(T: np.ndarray, G: ProcessGrid, B: np.ndarray, GB: ProcessGrid, k0: int, lower: bool,
               unit: bool, trsm_: Any, what: str) -> None:
    """One block of PDTRSM's substitution: the diagonal block's solve, then the update."""
    n, nb, dt = G.n, G.nb, B.dtype
    w = min(nb, n - k0)
    K = k0 // nb
    pr, pc = K % G.nprow, K % G.npcol
    r0, r1 = G.rows_before(k0), G.rows_before(k0 + w)
    lo, hi = (r0, G.mloc) if lower else (0, r1)
    tb = np.empty((hi - lo, w), dtype=dt)
    if G.mycol == pc and tb.size:
        lc = G.cols_before(k0)
        tb[...] = T[lo:hi, lc:lc + w]
    G.bcast_row(tb, pc, what)
    xb = np.empty((w, GB.nloc), dtype=dt)
    if G.myrow == pr and xb.size:
        d = tb[0:w] if lower else tb[r0:r1]
        xb[...] = trsm_(1.0, d, np.asfortranarray(B[r0:r1]), side=0, lower=int(lower),
                        trans_a=0, diag=int(unit))
        B[r0:r1] = xb
    G.bcast_col(xb, pr, what)
    if xb.size:
        if lower and r1 < G.mloc:
            gemm(-1.0, tb[r1 - r0:], xb, 1.0, B[r1:])
        elif not lower and r0 > 0:
            gemm(-1.0, tb[:r0], xb, 1.0, B[:r0])

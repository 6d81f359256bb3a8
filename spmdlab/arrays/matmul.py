"""Matrix products of codistributed arrays: ``@``, ``np.dot``, matrix-vector.

1-D layouts multiply with a ring (A's rows stay, B's row panels travel around the labs);
2dbc layouts with SUMMA (van de Geijn and Watts, "SUMMA: Scalable Universal Matrix
Multiplication Algorithm", 1997): when the labs share one machine, the panels are read
straight from the block's staging window (``summa_shared``), else panels of A travel
along grid rows and of B along grid columns, one panel ahead. The local products are
in-place BLAS GEMMs (``C += A B`` with beta = 1, no temporary). Replicated operands need
no communication.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..lab import lazy_comm as comm
from ..layouts.codistributor import codistributor1d, codistributor2dbc
from .base import CodistArray, describe, here
from .blas import gemm, supported
from .collectives import Exchange, allgather
from .elementwise import elementwise, local_operand
from .grid import ProcessGrid
from .layout import is1d, labs_of, local_sel, replicated_result
from .reductions import combine
from .registry import implements
from .transfer import gather, redistribute

__all__ = ["matmul", "np_dot"]


_SUMMA_PANEL = 512  # k-columns per SUMMA step (rounded to whole blocks)
_SHARED = True  # SUMMA through the staging window when the labs share one machine


def _rows(D, what: str):
    """D laid out by rows (a 1-D layout along dimension 1; kept if it already is)."""
    c = D._codist
    if is1d(c) and c.Dimension == 1:
        return D
    return redistribute(D, codistributor1d(1))


def _cols(D, what: str):
    c = D._codist
    if is1d(c) and c.Dimension == 2:
        return D
    return redistribute(D, codistributor1d(2))


def matmul(a: Any, b: Any, what: str = "matmul") -> Any:
    if not isinstance(a, CodistArray):
        a = np.asarray(a)
    if not isinstance(b, CodistArray):
        b = np.asarray(b)
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not sa or not sb:
        raise ValueError(f"{what}: Input operand {0 if not sa else 1} does not have enough "
                         "dimensions (scalars are not allowed for @, use *)")
    if len(sa) > 2 or len(sb) > 2:
        raise NotImplementedError(f"{what}: stacks of matrices (operands of more than 2 "
                                  f"dimensions) are not supported: {describe(a)} @ {describe(b)}")
    ka = sa[-1]
    kb = sb[0] if len(sb) == 1 else sb[-2]
    if ka != kb:
        raise ValueError(f"{what}: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (n?,k),(k,m?)->(n?,m?) (size {kb} is "
                         f"different from {ka})")
    rdt = np.result_type(a.dtype, b.dtype)
    if rdt.kind not in "biufc":
        raise NotImplementedError(f"{what}: dtype {rdt} is not supported: {describe(a)} @ {describe(b)}")
    for x in (a, b):
        if isinstance(x, CodistArray):
            lab, n = labs_of(x, what)
    if len(sa) == 1 and len(sb) == 2:
        return matmul(b.T, a, what)  # x @ B == B.T @ x for a vector x
    if len(sa) == 1:
        return _dot(a, b, rdt, what)
    if len(sb) == 1:
        return _matvec(a, b, rdt, what)
    return _matmat(a, b, rdt, what)


def _dot(a, b, rdt, what: str):
    base = a if isinstance(a, CodistArray) else b
    lab, n = labs_of(base, what)
    G = tuple(base.shape)
    la = local_operand(a, base._codist, G, lab, n, what)
    lb = local_operand(b, base._codist, G, lab, n, what)
    part = np.asarray(np.matmul(la, lb), dtype=rdt)
    vals = allgather(part, what)
    return np.add.reduce(vals, dtype=rdt)


def _matvec(A, x, rdt, what: str):
    """Matrix (n, k) times vector (k,)."""
    nrows = A.shape[0]
    if not isinstance(A, CodistArray):  # replicated matrix, codistributed vector
        lab, n = labs_of(x, what)
        cols = local_sel(x._codist, lab, n)[0]
        part = np.asarray(A[:, cols] @ x._local, dtype=rdt)
        return replicated_result(x, combine(part, "sum", what))
    lab, n = labs_of(A, what)
    c = A._codist
    if is1d(c) and c.Dimension == 1:
        xf = gather(x) if isinstance(x, CodistArray) else x
        return type(A)._from_local(np.asarray(A._local @ xf, dtype=rdt),
                                   codistributor1d(1, c.Partition, (nrows,)))
    if is1d(c):  # by columns: partial products of each lab's column panel
        xl = local_operand(x, codistributor1d(1, c.Partition, (x.shape[0],)), tuple(x.shape),
                            lab, n, what)
        part = np.asarray(A._local @ xl, dtype=rdt)
        return replicated_result(A, combine(part, "sum", what))
    xf = gather(x) if isinstance(x, CodistArray) else x
    rows, cols = local_sel(c, lab, n)
    part = np.asarray(A._local @ xf[cols], dtype=rdt)
    full = np.zeros(nrows, dtype=rdt)
    full[rows] = part
    return replicated_result(A, combine(full, "sum", what))


def _matmat(A, B, rdt, what: str):
    n_, m_ = A.shape[0], B.shape[1]
    if not isinstance(A, CodistArray):
        Bc = _cols(B, what)
        c = Bc._codist
        return type(B)._from_local(np.asarray(A @ Bc._local, dtype=rdt),
                                   codistributor1d(2, c.Partition, (n_, m_)))
    if not isinstance(B, CodistArray):
        Ar = _rows(A, what)
        c = Ar._codist
        return type(A)._from_local(np.asarray(Ar._local @ B, dtype=rdt),
                                   codistributor1d(1, c.Partition, (n_, m_)))
    ca = A._codist
    if not is1d(ca):
        if ca.BlockSizes[0] != ca.BlockSizes[1]:  # SUMMA pairs A's column blocks with B's row blocks: square
            A = redistribute(A, codistributor2dbc(ca.LabGrid, ca.BlockSizes[0], ca.Orientation, tuple(A.shape)))
            ca = A._codist
        target = codistributor2dbc(ca.LabGrid, ca.BlockSize, ca.Orientation, tuple(B.shape))
        Bb = B if B._codist == target else redistribute(B, target)
        return _summa(A, Bb, rdt, what)
    return _ring(_rows(A, what), _rows(B, what), rdt, what)


def _ring(A, B, rdt, what: str):
    """Rows-distributed A (n, k) @ rows-distributed B (k, m): B's row panels travel
    around the labs (each step overlaps the next exchange with the local product)."""
    lab, n = here()
    m_ = B.shape[1]
    pB = B._codist.Partition
    starts = np.concatenate(([0], np.cumsum(pB))).astype(np.int64)
    Al = A._local
    C = np.zeros((Al.shape[0], m_), dtype=rdt)
    cur = np.ascontiguousarray(B._local)
    bdt = cur.dtype
    for step in range(n):
        q = (lab - 1 + step) % n  # the lab (0-based) whose panel this lab holds now
        ex = None
        if step < n - 1:
            nxt = (q + 1) % n
            sends: list = [None] * n
            sends[(lab - 2) % n] = cur
            rcounts = [0] * n
            rcounts[lab % n] = int(pB[nxt]) * m_ * bdt.itemsize
            ex = Exchange(sends, rcounts, what)
        if pB[q] and Al.shape[0]:
            C += Al[:, starts[q]:starts[q + 1]] @ cur
        if ex is not None:
            chunk = ex.finish()[lab % n]
            cur = chunk.view(bdt).reshape(int(pB[nxt]), m_) if chunk.size else np.empty((int(pB[nxt]), m_), bdt)
    return type(A)._from_local(C, codistributor1d(1, A._codist.Partition, (A.shape[0], m_)))


def _class_order(ks: np.ndarray, b: int, L: int) -> np.ndarray:
    """Positions of the increasing global k indices ``ks`` (whole blocks of b, the last
    maybe short) grouped by block class ``(k // b) % L``, each class in increasing k."""
    cls = (ks // b) % L
    return np.argsort(cls, kind="stable")


def summa_shared(A: CodistArray, B: CodistArray, rdt: Any, what: str) -> CodistArray | None:
    """SUMMA with the panels read straight from the labs' staging window (one machine):
    each lab copies its part of A (if its grid row has other labs) and of B (if its grid
    column has) into its segment once, its k blocks grouped by class ``K mod lcm(r, q)``;
    after one barrier every lab multiplies, class by class, the A columns of the lab in
    its grid row that owns the class with the B rows of the lab in its grid column that
    owns it, with one in-place BLAS GEMM per class on views of the window (no messages,
    no packing, no waiting while computing). None when there is no window (labs on
    several machines, parts above ``SPMDLAB_STAGING_MB``) or the dtypes need numpy."""
    lab, n = here()
    Al, Bl = A._local, B._local
    if not (supported(rdt) and Al.dtype == rdt and Bl.dtype == rdt):
        return None
    ca, cb = A._codist, B._codist
    g = ProcessGrid(ca, lab, n)
    r, q = g.nprow, g.npcol
    b = ca.BlockSize
    L = math.lcm(r, q)
    shapes_a = [ca.localShape(p, n) for p in range(1, n + 1)]
    shapes_b = [cb.localShape(p, n) for p in range(1, n + 1)]
    it = np.dtype(rdt).itemsize
    size_a = [math.prod(s) * it if q > 1 else 0 for s in shapes_a]
    size_b = [math.prod(s) * it if r > 1 else 0 for s in shapes_b]
    sizes = [sa + sb for sa, sb in zip(size_a, size_b)]
    st = comm.staging(sizes, what)  # collective: every lab gets the same answer
    if st is None:
        return None
    pr, pc = g.myrow, g.mycol
    kA = {j: ca.globalIndices(2, g.lab_at(0, j), n) for j in range(q)}
    kB = {i: cb.globalIndices(1, g.lab_at(i, 0), n) for i in range(r)}

    def grouped(ks: np.ndarray) -> tuple:
        order = _class_order(ks, b, L)
        counts = np.bincount((ks // b) % L, minlength=L)
        return order, np.concatenate(([0], np.cumsum(counts)))

    mine_a = grouped(kA[pc])
    mine_b = grouped(kB[pr])

    def regroup(x: np.ndarray, order: np.ndarray, axis: int, out: Any = None) -> np.ndarray:
        if np.array_equal(order, np.arange(order.size)):  # one class (e.g. r divides q)
            if out is None:
                return x
            np.copyto(out, x)
            return out
        out = np.empty(x.shape, dtype=rdt) if out is None else out
        np.take(x, order, axis=axis, out=out)
        return out

    seg = st.segment(lab - 1)
    if q > 1 and Al.size:
        regroup(Al, mine_a[0], 1, seg[:Al.nbytes].view(rdt).reshape(Al.shape))
    if r > 1 and Bl.size:
        off = size_a[lab - 1]
        regroup(Bl, mine_b[0], 0, seg[off:off + Bl.nbytes].view(rdt).reshape(Bl.shape))
    st.sync(what)
    nl, ml = Al.shape[0], Bl.shape[1]
    C = np.zeros((nl, ml), dtype=rdt)
    own_a = None if q > 1 else regroup(Al, mine_a[0], 1)
    own_b = None if r > 1 else regroup(Bl, mine_b[0], 0)
    if nl and ml:
        for c in range(L):
            ja, ib = c % q, c % r
            la, lb = g.lab_at(pr, ja), g.lab_at(ib, pc)
            if q > 1:
                sa = shapes_a[la - 1]
                Apart = st.segment(la - 1)[:size_a[la - 1]].view(rdt).reshape(sa)
            else:
                Apart = own_a
            if r > 1:
                sb = shapes_b[lb - 1]
                o = size_a[lb - 1]
                Bpart = st.segment(lb - 1)[o:o + size_b[lb - 1]].view(rdt).reshape(sb)
            else:
                Bpart = own_b
            offs_a = mine_a[1] if ja == pc else grouped(kA[ja])[1]
            offs_b = mine_b[1] if ib == pr else grouped(kB[ib])[1]
            a0, a1 = offs_a[c], offs_a[c + 1]
            b0, b1 = offs_b[c], offs_b[c + 1]
            if a1 > a0:
                gemm(1.0, Apart[:, a0:a1], Bpart[b0:b1, :], 1.0, C)
    st.sync(what)  # no lab writes its segment again while another still reads it
    return type(A)._from_local(C, codistributor2dbc(ca.LabGrid, b, ca.Orientation, (A.shape[0], B.shape[1])))


def _summa(A, B, rdt, what: str):
    """SUMMA for A (n, k) and B (k, m) on the same 2dbc lab grid and block size."""
    if here()[1] > 1 and _SHARED:
        C = summa_shared(A, B, rdt, what)
        if C is not None:
            return C
    lab, n = here()
    ca, cb = A._codist, B._codist
    g = ProcessGrid(ca, lab, n)
    r, q, pr, pc = g.nprow, g.npcol, g.myrow, g.mycol
    row_peers = [g.lab_at(pr, j) for j in range(q)]  # labs in my grid row, by grid column
    col_peers = [g.lab_at(i, pc) for i in range(r)]  # labs in my grid column, by grid row
    kA = [ca.globalIndices(2, g.lab_at(0, j), n) for j in range(q)]  # k's held per grid column
    kB = [cb.globalIndices(1, g.lab_at(i, 0), n) for i in range(r)]  # k's held per grid row
    Al, Bl = A._local, B._local
    adt, bdt = Al.dtype, Bl.dtype
    nl, ml = Al.shape[0], Bl.shape[1]
    k = A.shape[1]
    C = np.zeros((nl, ml), dtype=rdt)
    b = ca.BlockSize
    width = b * max(1, _SUMMA_PANEL // b)
    panels = list(range(0, k, width))

    def bounds(ks: np.ndarray, K0: int, K1: int) -> tuple:
        return int(np.searchsorted(ks, K0)), int(np.searchsorted(ks, K1))

    def start(K0: int):
        K1 = min(K0 + width, k)
        a0, a1 = bounds(kA[pc], K0, K1)
        b0, b1 = bounds(kB[pr], K0, K1)
        a_send = np.ascontiguousarray(Al[:, a0:a1])
        b_send = np.ascontiguousarray(Bl[b0:b1, :])
        ex = None
        if n > 1:
            sends: list = [None] * n
            rcounts = [0] * n
            for j, peer in enumerate(row_peers):
                if peer != lab:
                    sends[peer - 1] = a_send
                    lo, hi = bounds(kA[j], K0, K1)
                    rcounts[peer - 1] += nl * (hi - lo) * adt.itemsize
            for i, peer in enumerate(col_peers):
                if peer != lab:
                    sends[peer - 1] = b_send
                    lo, hi = bounds(kB[i], K0, K1)
                    rcounts[peer - 1] += (hi - lo) * ml * bdt.itemsize
            ex = Exchange(sends, rcounts, what)
        return K0, K1, a_send, b_send, ex

    def finish(h):
        """The step's products as (A part, matching B rows) pairs: each A part is used as
        it arrived (no assembly copy); B's panel rows are laid out in the same k order."""
        K0, K1, a_send, b_send, ex = h
        chunks = ex.finish() if ex is not None else None
        w = K1 - K0
        parts, order = [], []
        for j, peer in enumerate(row_peers):
            lo, hi = bounds(kA[j], K0, K1)
            if hi == lo:
                continue
            parts.append(a_send if peer == lab else chunks[peer - 1].view(adt).reshape(nl, hi - lo))
            order.append(kA[j][lo:hi] - K0)
        pos = np.empty(w, dtype=np.int64)  # k (in the panel) -> row in Bp
        pos[np.concatenate(order)] = np.arange(w)
        Bp = np.empty((w, ml), dtype=bdt)
        for i, peer in enumerate(col_peers):
            lo, hi = bounds(kB[i], K0, K1)
            if hi == lo:
                continue
            part = b_send if peer == lab else chunks[peer - 1].view(bdt).reshape(hi - lo, ml)
            rows = pos[kB[i][lo:hi] - K0]
            if rows.size and rows[-1] - rows[0] == rows.size - 1 and np.all(np.diff(rows) == 1):
                Bp[rows[0]:rows[-1] + 1] = part
            else:
                Bp[rows, :] = part
        out, off = [], 0
        for Ap in parts:
            out.append((Ap, Bp[off:off + Ap.shape[1]]))
            off += Ap.shape[1]
        return out

    pending = start(panels[0]) if panels else None
    for t in range(len(panels)):
        current = pending
        pending = start(panels[t + 1]) if t + 1 < len(panels) else None
        for Ap, Bp in finish(current):
            if nl and ml:
                accumulate(C, Ap, Bp)
    gsize = (A.shape[0], B.shape[1])
    return type(A)._from_local(C, codistributor2dbc(ca.LabGrid, b, ca.Orientation, gsize))


def accumulate(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> None:
    """``C += A @ B`` in place: BLAS GEMM with beta = 1 (no temporary of C's size and no
    second pass over C) when the dtypes allow, numpy otherwise."""
    if supported(C.dtype) and A.dtype == C.dtype and B.dtype == C.dtype:
        gemm(1.0, A, B, 1.0, C)
    else:
        C += A @ B


@implements(np.dot)
def np_dot(a: Any, b: Any, out: Any = None) -> Any:
    if out is not None:
        raise NotImplementedError(f"numpy.dot: out= is not supported for codistributed arrays "
                                  f"({describe(a)}, {describe(b)})")
    if np.ndim(a) == 0 and not isinstance(a, CodistArray) or np.ndim(b) == 0 and not isinstance(b, CodistArray):
        return elementwise("numpy.dot", np.multiply, [a, b])
    return matmul(a, b, "numpy.dot")


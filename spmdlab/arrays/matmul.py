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
from .transfer import distributed_along, gather, redistribute

__all__ = ["matmul", "np_dot"]


_SUMMA_PANEL = 512  # k-columns per SUMMA step (rounded to whole blocks)
_SHARED = True  # SUMMA through the staging window when the labs share one machine


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
        Bc = distributed_along(B, 2)
        c = Bc._codist
        return type(B)._from_local(np.asarray(A @ Bc._local, dtype=rdt),
                                   codistributor1d(2, c.Partition, (n_, m_)))
    if not isinstance(B, CodistArray):
        Ar = distributed_along(A, 1)
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
    return _ring(distributed_along(A, 1), distributed_along(B, 1), rdt, what)


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


def _regroup(x: np.ndarray, order: np.ndarray, axis: int, out: np.ndarray | None = None) -> np.ndarray:
    """``x`` with its k positions (along ``axis``) taken in ``order``, into ``out`` if given."""
    if np.array_equal(order, np.arange(order.size)):  # one class (e.g. r divides q)
        if out is None:
            return x
        np.copyto(out, x)
        return out
    out = np.empty(x.shape, dtype=x.dtype) if out is None else out
    np.take(x, order, axis=axis, out=out)
    return out


class _SharedSumma:
    """The labs' parts of A and B in the staging window, each lab's k blocks grouped by
    class ``K mod lcm(r, q)`` (see ``summa_shared``)."""

    def __init__(self, A: CodistArray, B: CodistArray, rdt: np.dtype, lab: int, n: int) -> None:
        self.A, self.B, self.rdt, self.lab, self.n = A, B, rdt, lab, n
        ca, cb = A._codist, B._codist
        self.g = g = ProcessGrid(ca, lab, n)
        self.b = ca.BlockSize
        self.L = math.lcm(g.nprow, g.npcol)
        self.shapes_a = [ca.localShape(p, n) for p in range(1, n + 1)]
        self.shapes_b = [cb.localShape(p, n) for p in range(1, n + 1)]
        it = np.dtype(rdt).itemsize
        self.size_a = [math.prod(s) * it if g.npcol > 1 else 0 for s in self.shapes_a]  # A travels along grid rows
        self.size_b = [math.prod(s) * it if g.nprow > 1 else 0 for s in self.shapes_b]
        self.kA = {j: ca.globalIndices(2, g.lab_at(0, j), n) for j in range(g.npcol)}  # k's per grid column
        self.kB = {i: cb.globalIndices(1, g.lab_at(i, 0), n) for i in range(g.nprow)}  # k's per grid row
        self.mine_a = self.grouped(self.kA[g.mycol])
        self.mine_b = self.grouped(self.kB[g.myrow])

    def grouped(self, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The order that groups ``ks`` by class, and where each class starts in it."""
        counts = np.bincount((ks // self.b) % self.L, minlength=self.L)
        return _class_order(ks, self.b, self.L), np.concatenate(([0], np.cumsum(counts)))

    def stage(self, st: Any) -> None:
        """Copy this lab's parts (grouped by class) into its segment of the window, where
        the other labs of its grid row (A) and column (B) read them."""
        Al, Bl, rdt = self.A._local, self.B._local, self.rdt
        seg = st.segment(self.lab - 1)
        if self.g.npcol > 1 and Al.size:
            _regroup(Al, self.mine_a[0], 1, seg[:Al.nbytes].view(rdt).reshape(Al.shape))
        if self.g.nprow > 1 and Bl.size:
            off = self.size_a[self.lab - 1]
            _regroup(Bl, self.mine_b[0], 0, seg[off:off + Bl.nbytes].view(rdt).reshape(Bl.shape))

    def parts_a(self, st: Any) -> dict[int, np.ndarray]:
        """The parts of A of the labs in this lab's grid row, by lab, as the window holds
        them (this lab's own, regrouped, when A does not travel)."""
        g = self.g
        if g.npcol == 1:
            return {self.lab: _regroup(self.A._local, self.mine_a[0], 1)}
        labs = [g.lab_at(g.myrow, j) for j in range(g.npcol)]
        return {la: st.segment(la - 1)[:self.size_a[la - 1]].view(self.rdt).reshape(self.shapes_a[la - 1])
                for la in labs}

    def parts_b(self, st: Any) -> dict[int, np.ndarray]:
        """The parts of B of the labs in this lab's grid column, by lab (see ``parts_a``)."""
        g = self.g
        if g.nprow == 1:
            return {self.lab: _regroup(self.B._local, self.mine_b[0], 0)}
        parts = {}
        for lb in (g.lab_at(i, g.mycol) for i in range(g.nprow)):
            o = self.size_a[lb - 1]
            parts[lb] = st.segment(lb - 1)[o:o + self.size_b[lb - 1]].view(self.rdt).reshape(self.shapes_b[lb - 1])
        return parts

    def multiply(self, st: Any, own: bool) -> np.ndarray:
        """This lab's block of C: class by class, one in-place GEMM of the A columns of
        the lab in its grid row that owns the class with the B rows of the lab in its
        grid column that owns it. ``own``: only the classes whose A and B parts are this
        lab's own (its own segment or local parts, before the window is synchronized);
        else the others, accumulated into ``self.C``. The first GEMM writes C with
        beta = 0 (no zero fill)."""
        g = self.g
        pr, pc, r, q = g.myrow, g.mycol, g.nprow, g.npcol
        if own:  # views of the window (a lab's own segment is readable at once)
            self.C = np.empty((self.A._local.shape[0], self.B._local.shape[1]), dtype=self.rdt)
            self.beta = 0.0
            self.parts = (self.parts_a(st), self.parts_b(st)) if self.C.size else ({}, {})
        C = self.C
        if not C.size:
            return C
        parts_a, parts_b = self.parts
        for c in range(self.L):
            ja, ib = c % q, c % r
            if (ja == pc and ib == pr) != own:
                continue
            offs_a = self.mine_a[1] if ja == pc else self.grouped(self.kA[ja])[1]
            offs_b = self.mine_b[1] if ib == pr else self.grouped(self.kB[ib])[1]
            a0, a1 = offs_a[c], offs_a[c + 1]
            b0, b1 = offs_b[c], offs_b[c + 1]
            if a1 > a0:
                Apart, Bpart = parts_a[g.lab_at(pr, ja)], parts_b[g.lab_at(ib, pc)]
                gemm(1.0, Apart[:, a0:a1], Bpart[b0:b1, :], self.beta, C)
                self.beta = 1.0
        if not own and self.beta == 0.0:  # no k at all: C is zero
            C[...] = 0
        return C


def summa_shared(A: CodistArray, B: CodistArray, rdt: Any, what: str) -> CodistArray | None:
    """SUMMA with the panels read straight from the labs' staging window (one machine):
    each lab copies its part of A (if its grid row has other labs) and of B (if its grid
    column has) into its segment once, its k blocks grouped by class ``K mod lcm(r, q)``;
    every lab multiplies its own class (its A and B parts) at once, and after one barrier,
    class by class, the A columns of the lab in
    its grid row that owns the class with the B rows of the lab in its grid column that
    owns it, with one in-place BLAS GEMM per class on views of the window (no messages,
    no packing, no waiting while computing). None when there is no window (labs on
    several machines, parts above ``SPMDLAB_STAGING_MB``) or the dtypes need numpy."""
    lab, n = here()
    if not (supported(rdt) and A._local.dtype == rdt and B._local.dtype == rdt):
        return None
    plan = _SharedSumma(A, B, np.dtype(rdt), lab, n)
    st = comm.staging([sa + sb for sa, sb in zip(plan.size_a, plan.size_b)], what)  # collective: the same answer
    if st is None:
        return None
    plan.stage(st)
    plan.multiply(st, own=True)  # this lab's own class while the others stage theirs
    st.sync(what)
    C = plan.multiply(st, own=False)
    st.sync(what)  # no lab writes its segment again while another still reads it
    ca = A._codist
    return type(A)._from_local(C, codistributor2dbc(ca.LabGrid, ca.BlockSize, ca.Orientation,
                                                    (A.shape[0], B.shape[1])))


class _PanelSumma:
    """SUMMA by messages: panels of A travel along grid rows and of B along grid
    columns, one panel (``_SUMMA_PANEL`` k's, whole blocks) ahead of the products."""

    def __init__(self, A: CodistArray, B: CodistArray, what: str, lab: int, n: int) -> None:
        ca, cb = A._codist, B._codist
        self.g = g = ProcessGrid(ca, lab, n)
        self.what, self.lab, self.n = what, lab, n
        self.row_peers = [g.lab_at(g.myrow, j) for j in range(g.npcol)]  # labs in my grid row, by grid column
        self.col_peers = [g.lab_at(i, g.mycol) for i in range(g.nprow)]  # labs in my grid column, by grid row
        self.kA = [ca.globalIndices(2, g.lab_at(0, j), n) for j in range(g.npcol)]  # k's held per grid column
        self.kB = [cb.globalIndices(1, g.lab_at(i, 0), n) for i in range(g.nprow)]  # k's held per grid row
        self.Al, self.Bl = A._local, B._local
        self.nl, self.ml = self.Al.shape[0], self.Bl.shape[1]
        self.k = A.shape[1]
        b = ca.BlockSize
        self.width = b * max(1, _SUMMA_PANEL // b)

    @staticmethod
    def bounds(ks: np.ndarray, K0: int, K1: int) -> tuple[int, int]:
        return int(np.searchsorted(ks, K0)), int(np.searchsorted(ks, K1))

    def start(self, K0: int) -> tuple:
        """Send this lab's pieces of the panel from ``K0`` and post the receives."""
        K1 = min(K0 + self.width, self.k)
        a0, a1 = self.bounds(self.kA[self.g.mycol], K0, K1)
        b0, b1 = self.bounds(self.kB[self.g.myrow], K0, K1)
        a_send = np.ascontiguousarray(self.Al[:, a0:a1])
        b_send = np.ascontiguousarray(self.Bl[b0:b1, :])
        ex = None
        if self.n > 1:
            sends: list = [None] * self.n
            rcounts = [0] * self.n
            for j, peer in enumerate(self.row_peers):
                if peer != self.lab:
                    sends[peer - 1] = a_send
                    lo, hi = self.bounds(self.kA[j], K0, K1)
                    rcounts[peer - 1] += self.nl * (hi - lo) * self.Al.dtype.itemsize
            for i, peer in enumerate(self.col_peers):
                if peer != self.lab:
                    sends[peer - 1] = b_send
                    lo, hi = self.bounds(self.kB[i], K0, K1)
                    rcounts[peer - 1] += (hi - lo) * self.ml * self.Bl.dtype.itemsize
            ex = Exchange(sends, rcounts, self.what)
        return K0, K1, a_send, b_send, ex

    def finish(self, h: tuple) -> list[tuple[np.ndarray, np.ndarray]]:
        """The step's products as (A part, matching B rows) pairs: each A part is used as
        it arrived (no assembly copy); B's panel rows are laid out in the same k order."""
        K0, K1, a_send, b_send, ex = h
        chunks = ex.finish() if ex is not None else []  # (one lab: every piece is its own)
        parts, order = [], []
        for j, peer in enumerate(self.row_peers):
            lo, hi = self.bounds(self.kA[j], K0, K1)
            if hi == lo:
                continue
            parts.append(a_send if peer == self.lab else chunks[peer - 1].view(self.Al.dtype).reshape(self.nl, hi - lo))
            order.append(self.kA[j][lo:hi] - K0)
        Bp = self.b_panel(K0, K1, b_send, chunks, np.concatenate(order))
        out, off = [], 0
        for Ap in parts:
            out.append((Ap, Bp[off:off + Ap.shape[1]]))
            off += Ap.shape[1]
        return out

    def b_panel(self, K0: int, K1: int, b_send: np.ndarray, chunks: Any, order: np.ndarray) -> np.ndarray:
        """B's rows of the panel, in the k ``order`` of the A parts."""
        w, bdt = K1 - K0, self.Bl.dtype
        pos = np.empty(w, dtype=np.int64)  # k (in the panel) -> row in Bp
        pos[order] = np.arange(w)
        Bp = np.empty((w, self.ml), dtype=bdt)
        for i, peer in enumerate(self.col_peers):
            lo, hi = self.bounds(self.kB[i], K0, K1)
            if hi == lo:
                continue
            part = b_send if peer == self.lab else chunks[peer - 1].view(bdt).reshape(hi - lo, self.ml)
            rows = pos[self.kB[i][lo:hi] - K0]
            if rows.size and rows[-1] - rows[0] == rows.size - 1 and np.all(np.diff(rows) == 1):
                Bp[rows[0]:rows[-1] + 1] = part
            else:
                Bp[rows, :] = part
        return Bp

    def run(self, rdt: np.dtype) -> np.ndarray:
        """This lab's block of C, each panel's exchange overlapping the previous products."""
        C = np.zeros((self.nl, self.ml), dtype=rdt)
        panels = list(range(0, self.k, self.width))
        pending = self.start(panels[0]) if panels else None
        for t in range(len(panels)):
            current = pending
            pending = self.start(panels[t + 1]) if t + 1 < len(panels) else None
            for Ap, Bp in self.finish(current):
                if self.nl and self.ml:
                    accumulate(C, Ap, Bp)
        return C


def _summa(A, B, rdt, what: str):
    """SUMMA for A (n, k) and B (k, m) on the same 2dbc lab grid and block size: through
    the staging window when the labs share one machine, else by messages."""
    lab, n = here()
    if n > 1 and _SHARED:
        C = summa_shared(A, B, rdt, what)
        if C is not None:
            return C
    ca = A._codist
    C = _PanelSumma(A, B, what, lab, n).run(rdt)
    return type(A)._from_local(C, codistributor2dbc(ca.LabGrid, ca.BlockSize, ca.Orientation,
                                                    (A.shape[0], B.shape[1])))


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


"""Matrix products of codistributed arrays: ``@``, ``np.dot``, matrix-vector.

1-D layouts multiply with a ring (A's rows stay, B's row panels travel around the labs);
2dbc layouts with SUMMA (panels of A along grid rows, of B along grid columns, one panel
ahead); replicated operands need no communication.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .codist_comm import (_Exchange, _allgather, _cls, _describe, _from_local, _gather, _here,
                          _is1d, _labs_of, _local_sel, _redistribute, _replicated_result)
from .codist_elementwise import _elementwise, _local_operand
from .codist_reductions import _combine
from .codistributor import codistributor1d, codistributor2dbc


_SUMMA_PANEL = 512  # k-columns per SUMMA step (rounded to whole blocks)


def _rows(D, what: str):
    """D laid out by rows (a 1-D layout along dimension 1; kept if it already is)."""
    c = D._codist
    if _is1d(c) and c.Dimension == 1:
        return D
    return _redistribute(D, codistributor1d(1))


def _cols(D, what: str):
    c = D._codist
    if _is1d(c) and c.Dimension == 2:
        return D
    return _redistribute(D, codistributor1d(2))


def _matmul(a: Any, b: Any, what: str = "matmul"):
    CD = _cls()
    if not isinstance(a, CD):
        a = np.asarray(a)
    if not isinstance(b, CD):
        b = np.asarray(b)
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not sa or not sb:
        raise ValueError(f"{what}: Input operand {0 if not sa else 1} does not have enough "
                         "dimensions (scalars are not allowed for @, use *)")
    if len(sa) > 2 or len(sb) > 2:
        raise NotImplementedError(f"{what}: stacks of matrices (operands of more than 2 "
                                  f"dimensions) are not supported: {_describe(a)} @ {_describe(b)}")
    ka = sa[-1]
    kb = sb[0] if len(sb) == 1 else sb[-2]
    if ka != kb:
        raise ValueError(f"{what}: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (n?,k),(k,m?)->(n?,m?) (size {kb} is "
                         f"different from {ka})")
    rdt = np.result_type(a.dtype, b.dtype)
    if rdt.kind not in "biufc":
        raise NotImplementedError(f"{what}: dtype {rdt} is not supported: {_describe(a)} @ {_describe(b)}")
    for x in (a, b):
        if isinstance(x, CD):
            lab, n = _labs_of(x, what)
    if len(sa) == 1 and len(sb) == 2:
        return _matmul(b.T, a, what)  # x @ B == B.T @ x for a vector x
    if len(sa) == 1:
        return _dot(a, b, rdt, what)
    if len(sb) == 1:
        return _matvec(a, b, rdt, what)
    return _matmat(a, b, rdt, what)


def _dot(a, b, rdt, what: str):
    CD = _cls()
    base = a if isinstance(a, CD) else b
    lab, n = _labs_of(base, what)
    G = tuple(base.shape)
    la = _local_operand(a, base._codist, G, lab, n, what)
    lb = _local_operand(b, base._codist, G, lab, n, what)
    part = np.asarray(np.matmul(la, lb), dtype=rdt)
    vals = _allgather(part, what)
    return np.add.reduce(vals, dtype=rdt)


def _matvec(A, x, rdt, what: str):
    """Matrix (n, k) times vector (k,)."""
    CD = _cls()
    nrows = A.shape[0]
    if not isinstance(A, CD):  # replicated matrix, codistributed vector
        lab, n = _labs_of(x, what)
        cols = _local_sel(x._codist, lab, n)[0]
        part = np.asarray(A[:, cols] @ x._local, dtype=rdt)
        return _replicated_result(_combine(part, "sum", what))
    lab, n = _labs_of(A, what)
    c = A._codist
    if _is1d(c) and c.Dimension == 1:
        xf = _gather(x) if isinstance(x, CD) else x
        return _from_local(np.asarray(A._local @ xf, dtype=rdt),
                           codistributor1d(1, c.Partition, (nrows,)))
    if _is1d(c):  # by columns: partial products of each lab's column panel
        xl = _local_operand(x, codistributor1d(1, c.Partition, (x.shape[0],)), tuple(x.shape),
                            lab, n, what)
        part = np.asarray(A._local @ xl, dtype=rdt)
        return _replicated_result(_combine(part, "sum", what))
    xf = _gather(x) if isinstance(x, CD) else x
    rows, cols = _local_sel(c, lab, n)
    part = np.asarray(A._local @ xf[cols], dtype=rdt)
    full = np.zeros(nrows, dtype=rdt)
    full[rows] = part
    return _replicated_result(_combine(full, "sum", what))


def _matmat(A, B, rdt, what: str):
    CD = _cls()
    n_, m_ = A.shape[0], B.shape[1]
    if not isinstance(A, CD):
        Bc = _cols(B, what)
        c = Bc._codist
        return _from_local(np.asarray(A @ Bc._local, dtype=rdt),
                           codistributor1d(2, c.Partition, (n_, m_)))
    if not isinstance(B, CD):
        Ar = _rows(A, what)
        c = Ar._codist
        return _from_local(np.asarray(Ar._local @ B, dtype=rdt),
                           codistributor1d(1, c.Partition, (n_, m_)))
    ca = A._codist
    if not _is1d(ca):
        target = codistributor2dbc(ca.LabGrid, ca.BlockSize, ca.Orientation, tuple(B.shape))
        Bb = B if B._codist == target else _redistribute(B, target)
        return _summa(A, Bb, rdt, what)
    return _ring(_rows(A, what), _rows(B, what), rdt, what)


def _ring(A, B, rdt, what: str):
    """Rows-distributed A (n, k) @ rows-distributed B (k, m): B's row panels travel
    around the labs (each step overlaps the next exchange with the local product)."""
    lab, n = _here()
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
            ex = _Exchange(sends, rcounts, what)
        if pB[q] and Al.shape[0]:
            C += Al[:, starts[q]:starts[q + 1]] @ cur
        if ex is not None:
            chunk = ex.finish()[lab % n]
            cur = chunk.view(bdt).reshape(int(pB[nxt]), m_) if chunk.size else np.empty((int(pB[nxt]), m_), bdt)
    return _from_local(C, codistributor1d(1, A._codist.Partition, (A.shape[0], m_)))


def _summa(A, B, rdt, what: str):
    """SUMMA for A (n, k) and B (k, m) on the same 2dbc lab grid and block size."""
    lab, n = _here()
    ca, cb = A._codist, B._codist
    r, q = ca.LabGrid
    pr, pc = ca.gridCoords(lab, n)
    coords = {L: ca.gridCoords(L, n) for L in range(1, n + 1)}
    at = {v: L for L, v in coords.items()}
    row_peers = [at[(pr, j)] for j in range(q)]  # labs in my grid row, by grid column
    col_peers = [at[(i, pc)] for i in range(r)]  # labs in my grid column, by grid row
    kA = [ca.globalIndices(2, at[(0, j)], n) for j in range(q)]  # k's held per grid column
    kB = [cb.globalIndices(1, at[(i, 0)], n) for i in range(r)]  # k's held per grid row
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
            ex = _Exchange(sends, rcounts, what)
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
                _accumulate(C, Ap, Bp)
    gsize = (A.shape[0], B.shape[1])
    return _from_local(C, codistributor2dbc(ca.LabGrid, b, ca.Orientation, gsize))


def _accumulate(C: np.ndarray, A: np.ndarray, B: np.ndarray) -> None:
    """``C += A @ B`` in place: BLAS GEMM with beta = 1 (no temporary of C's size and no
    second pass over C) when the dtypes allow, numpy otherwise."""
    from .codist.linalg.blas import gemm, supported

    if supported(C.dtype) and A.dtype == C.dtype and B.dtype == C.dtype:
        gemm(1.0, A, B, 1.0, C)
    else:
        C += A @ B


def _np_dot(a, b, out=None):
    if out is not None:
        raise NotImplementedError(f"numpy.dot: out= is not supported for codistributed arrays "
                                  f"({_describe(a)}, {_describe(b)})")
    CD = _cls()
    if np.ndim(a) == 0 and not isinstance(a, CD) or np.ndim(b) == 0 and not isinstance(b, CD):
        return _elementwise("numpy.dot", np.multiply, [a, b])
    return _matmul(a, b, "numpy.dot")

"""Products with a sparse codistributed matrix: ``S @ x``, ``x @ S``, ``S @ S``.

``S @ x`` by rows is PETSc's MatMult for MPIAIJ matrices: the local rows are split into
a diagonal block (the columns whose ``x`` entries this lab owns) and an off-diagonal
block (the ghost columns); the ghost exchange (``exchange.GhostPlan``) is posted, the
diagonal block's product computed while it travels, then the off-diagonal block's
product added. The local kernels are scipy's compiled ``csr_matvec``/``csr_matvecs``,
accumulating into the result in place. By columns, each lab multiplies its columns by
its part of ``x`` and one allreduce sums the partial vectors (MatMultTranspose's form).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...layouts.codistributor import codistributor1d
from ..array import codistributed
from ..base import CodistArray, here
from ..collectives import allgather, allreduce
from ..transfer import redistribute
from .exchange import ghost_plan
from .matrix import SparseBase, offsets, transposed
from .move import exchange, to_layout, to_rows

# scipy's compiled kernels, y += A @ x in place (private, so optional, with the public
# ``A @ x`` as the fallback). Kept for a measured win: on 2 labs, 1024x1024 Laplacian, a
# lab's diagonal block (524k rows) took 2.0 ms into a reused buffer against 2.9 ms for
# ``diag @ x`` (which allocates its result and adds the off-diagonal part in a second pass).
try:
    from scipy.sparse._sparsetools import csr_matvec, csr_matvecs
except ImportError:  # pragma: no cover
    csr_matvec = csr_matvecs = None

__all__ = ["matvec_local", "vector_local", "wrap_rows", "matmul", "rmatmul", "spmatmul", "result_dtype"]


def result_dtype(*dtypes: Any) -> np.dtype:
    return np.result_type(*dtypes)


def _accumulate(A: Any, x: np.ndarray, y: np.ndarray) -> None:
    """``y += A @ x`` for a csr block ``A`` (x, y of A's dtype; y C-contiguous)."""
    m, n = A.shape
    if m == 0 or n == 0 or A.nnz == 0:
        return
    if csr_matvec is None:
        y += A @ x
    elif x.ndim == 1:
        csr_matvec(m, n, A.indptr, A.indices, A.data, x, y)
    else:
        csr_matvecs(m, n, x.shape[1], A.indptr, A.indices, A.data, np.ascontiguousarray(x).ravel(), y.ravel())


def matvec_local(S: SparseBase, xloc: np.ndarray, xoff: np.ndarray, what: str,
                 out: np.ndarray | None = None) -> np.ndarray:
    """This lab's rows of ``S @ x`` for row-distributed ``S`` and ``x`` partitioned by
    ``xoff`` (``xloc`` this lab's part, 1-D or 2-D). ``out`` (zeroed here) is reused."""
    plan = ghost_plan(S, xoff, what)
    dtype = result_dtype(S.dtype, xloc.dtype)
    diag, off = plan.blocks(dtype)
    x = xloc if xloc.dtype == dtype else xloc.astype(dtype)
    if out is None:
        y = np.zeros((diag.shape[0],) + x.shape[1:], dtype)
    else:
        y = out
        y.fill(0)
    requests, sendbuf, ghost = plan.start(x)
    _accumulate(diag, x, y)
    plan.finish(requests, sendbuf, ghost, what)
    rows, block = plan.compressed(off)
    if rows is None:
        _accumulate(off, ghost, y)
    elif rows.size:
        part = np.zeros((rows.size,) + y.shape[1:], dtype)
        _accumulate(block, ghost, part)
        y[rows] += part
    return y


def vector_local(x: Any, part: list, what: str) -> np.ndarray:
    """This lab's rows of the dense vector or matrix ``x`` (codistributed in any layout,
    or replicated) in the row partition ``part``."""
    lab, n = here()
    o = offsets(part)
    if isinstance(x, CodistArray):
        c = x._codist
        if not (isinstance(c, codistributor1d) and c.Dimension == 1 and not c.Halo
                and c.Partition == list(part)):
            x = redistribute(x, codistributor1d(1, list(part), x.shape))
        return x._local
    x = np.asarray(x)
    return x[o[lab - 1]:o[lab]]


def wrap_rows(yloc: np.ndarray, part: list, nrows: int) -> Any:
    """A codistributed vector/matrix of the rows ``yloc`` (row partition ``part``)."""
    shape = (nrows,) + yloc.shape[1:]
    codist = codistributor1d(1, list(part), shape).complete(shape, here()[1])
    return codistributed.from_parts(yloc, codist)


def _check_inner(S: SparseBase, x: Any, what: str) -> None:
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) not in (1, 2):
        raise ValueError(f"{what}: the right operand must be a vector or a matrix, got {type(x).__name__}")
    if shape[0] != S.shape[1]:
        raise ValueError(f"{what}: inner dimensions differ: S is {S.shape[0]}x{S.shape[1]}, "
                         f"x has {shape[0]} rows")


def matmul(S: SparseBase, x: Any) -> Any:
    """``S @ x`` for a dense codistributed or replicated vector/matrix ``x``: a
    codistributed result distributed by rows (as ``S``'s rows, or the default partition)."""
    what = "S @ x"
    if isinstance(x, SparseBase):
        return spmatmul(S, x)
    if not isinstance(x, CodistArray):
        x = np.asarray(x)
    S.check_labs(what)
    _check_inner(S, x, what)
    m, k = S.shape
    _, n = here()
    if S.by_rows:
        xpart = S.partition if m == k else codistributor1d.defaultPartition(k, n)
        y = matvec_local(S, vector_local(x, xpart, what), offsets(xpart), what)
        return wrap_rows(y, S.partition, m)
    xloc = vector_local(x, S.partition, what)
    dtype = result_dtype(S.dtype, xloc.dtype)
    partial = np.asarray(S._local @ xloc, dtype=dtype)
    total = allreduce(partial, "sum", what)
    part = codistributor1d.defaultPartition(m, n)
    o = offsets(part)
    lab = here()[0]
    return wrap_rows(np.ascontiguousarray(total[o[lab - 1]:o[lab]]), part, m)


def rmatmul(x: Any, S: SparseBase) -> Any:
    """``x @ S`` (``(S.T @ x.T).T``; the transpose moves no data)."""
    from_t = transposed(S)
    if getattr(x, "ndim", 1) == 1:
        return matmul(from_t, x)
    return matmul(from_t, x.T).T


def spmatmul(A: SparseBase, B: SparseBase) -> Any:
    """``A @ B`` of two sparse codistributed matrices, distributed by rows like ``A``
    (PETSc's MatMatMult for MPIAIJ): each lab fetches the rows of B its columns touch
    (one all-to-all of row numbers, one of the rows' entries) and multiplies locally."""
    what = "S @ S"
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"{what}: inner dimensions differ: {A.shape[0]}x{A.shape[1]} and "
                         f"{B.shape[0]}x{B.shape[1]}")
    lab, n = here()
    A = to_rows(A, what)
    k = A.shape[1]
    bpart = codistributor1d.defaultPartition(k, n)
    B = to_layout(B, codistributor1d(1, bpart, B.shape).complete(B.shape, n), what)
    bo = offsets(bpart)
    need = np.unique(A._local.indices).astype(np.int64)
    owner = np.searchsorted(bo, need, side="right")
    counts = np.bincount(owner, minlength=n + 1)[1:].astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)))
    table = allgather(counts, what)
    asked = exchange([need[starts[q]:starts[q + 1]] for q in range(n)],
                     [int(table[p, lab - 1]) * 8 for p in range(n)], what)
    blo = int(bo[lab - 1])
    rows_for = [B._local[c.view(np.int64) - blo] for c in asked]
    parts = _swap_rows(rows_for, [int(c) for c in counts], B, what)
    got = sp.vstack(parts, format="csr") if parts else sp.csr_array((0, B.shape[1]), dtype=B.dtype)
    local = A._local[:, need] @ got if need.size else sp.csr_array((A._local.shape[0], B.shape[1]),
                                                                   dtype=result_dtype(A.dtype, B.dtype))
    return type(A)._from_local(local, codistributor1d(1, A.partition, (A.shape[0], B.shape[1]))
                               .complete((A.shape[0], B.shape[1]), n))


def _swap_rows(rows_for: list, nrows_from: list, B: SparseBase, what: str) -> list:
    """Send ``rows_for[q]`` (csr rows) to lab q+1; receive ``nrows_from[p]`` rows from
    lab p+1 (three all-to-alls: row lengths, column indices, values)."""
    _, n = here()
    lens = [np.diff(r.indptr).astype(np.int64) for r in rows_for]
    got_lens = exchange(lens, [c * 8 for c in nrows_from], what)
    got_lens = [g.view(np.int64) for g in got_lens]
    sizes = [int(g.sum()) for g in got_lens]
    cols = exchange([r.indices.astype(np.int64) for r in rows_for], [s * 8 for s in sizes], what)
    dt = B.dtype
    vals = exchange([np.ascontiguousarray(r.data, dtype=dt) for r in rows_for],
                    [s * dt.itemsize for s in sizes], what)
    parts = []
    for p in range(n):
        indptr = np.concatenate(([0], np.cumsum(got_lens[p])))
        parts.append(sp.csr_array((vals[p].view(dt), cols[p].view(np.int64), indptr),
                                  shape=(nrows_from[p], B.shape[1])))
    return parts

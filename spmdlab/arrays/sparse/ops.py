"""Operations on sparse codistributed matrices that keep to each lab's part, with at
most one collective: elementwise (scalars, ``S ± S``, ``S .* dense``), ``transpose``
(rows become columns: no data moves), ``sum``, ``diag``, ``tril``/``triu``, ``norm``,
``nnz``, ``find``, ``nonzeros``, ``full`` and ``gather``.

The local kernels are scipy.sparse's. Results are sparse where scipy's are (elementwise,
transpose, tril/triu) and dense codistributed vectors where scipy's are dense (sum, diag,
find). Reductions combine the labs' partial values with one allreduce, like the dense
package's (``reductions``).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...checks import check_lab
from ...lab import lazy_comm as comm
from ...layouts.codistributor import codistributor1d
from ..array import codistributed
from ..base import CodistArray, here
from ..collectives import allgather, allgatherv, allreduce, as_bytes
from ..transfer import redistribute
from .matrix import SparseBase, offsets, transposed
from .move import to_layout

__all__ = ["transpose", "map_local", "add", "multiply", "ssum", "diagonal", "tril", "triu", "norm",
           "nnz", "find", "nonzeros", "full", "gather_sparse", "coords"]


def _codist(dim: int, part: list, shape: tuple[int, ...]) -> codistributor1d:
    return codistributor1d(dim, list(part), shape).complete(shape, here()[1])


def _vector(local: np.ndarray, counts: list, what: str) -> Any:
    """A codistributed 1-D array of the labs' ``local`` pieces (``counts`` every lab's length)."""
    total = int(sum(counts))
    return codistributed.from_parts(np.ascontiguousarray(local), _codist(1, counts, (total,)))


def coords(S: SparseBase) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This lab's entries as global ``(rows, cols, values)``, in its format's order
    (row-major by rows, column-major by columns)."""
    lo, _ = S.range_of()
    A = S._local
    major = np.repeat(np.arange(A.indptr.size - 1, dtype=np.int64) + lo, np.diff(A.indptr))
    minor = A.indices.astype(np.int64)
    return (major, minor, A.data) if S.by_rows else (minor, major, A.data)


def transpose(S: SparseBase, conjugate: bool = False) -> Any:
    """``S.T`` (``S.H`` with ``conjugate``): ``matrix.transposed``; nothing moves."""
    return transposed(S, conjugate)


def map_local(S: SparseBase, fn: Any) -> Any:
    """``fn`` applied to the local part (zeros must stay zeros: scalar ``*``, ``/``, abs)."""
    return type(S)._from_local(fn(S._local), S._codist)


def add(A: SparseBase, B: Any, sign: int = 1) -> Any:
    """``A + B`` (``A - B`` with ``sign=-1``) of two sparse matrices of one shape, in A's layout."""
    if not isinstance(B, SparseBase):
        raise TypeError(f"S ± X needs two sparse codistributed matrices; got {type(B).__name__} "
                        "(use full(S) + X for a dense result)")
    if A.shape != B.shape:
        raise ValueError(f"S ± S: the shapes differ, {A.shape} and {B.shape}")
    B = to_layout(B, A._codist, "S ± S")
    return type(A)._from_local(A._local + B._local if sign > 0 else A._local - B._local, A._codist)


def multiply(S: SparseBase, X: Any) -> Any:
    """``S .* X`` (elementwise): X a scalar, a sparse matrix or a dense array of S's
    shape (codistributed or replicated); sparse result as scipy's ``multiply``."""
    what = "S .* X"
    if np.isscalar(X):
        return map_local(S, lambda a: a * X)
    if isinstance(X, SparseBase):
        if X.shape != S.shape:
            raise ValueError(f"{what}: the shapes differ, {S.shape} and {X.shape}")
        X = to_layout(X, S._codist, what)
        return type(S)._from_local(S._local.multiply(X._local), S._codist)
    if tuple(getattr(X, "shape", ())) != S.shape:
        raise ValueError(f"{what}: X must be a scalar or have S's shape {S.shape}, got "
                         f"{getattr(X, 'shape', type(X).__name__)}")
    lo, hi = S.range_of()
    if isinstance(X, CodistArray):
        X = redistribute(X, S._codist)._local
    else:
        X = np.asarray(X)
        X = X[lo:hi] if S.by_rows else X[:, lo:hi]
    return type(S)._from_local(S._local.multiply(X), S._codist)


def ssum(S: SparseBase, axis: int | None = None, dtype: Any = None) -> Any:
    """``S.sum(axis)``: a replicated scalar (``axis=None``) or a dense codistributed
    vector, as scipy's sum (along the distributed dimension: one allreduce)."""
    what = "sum(S)"
    _, n = here()
    A = S._local
    if axis is None:
        return allreduce(np.asarray(A.sum(dtype=dtype)), "sum", what)[()]
    if axis not in (0, 1, -1, -2):
        raise ValueError(f"{what}: axis must be 0 or 1 (or None), got {axis}")
    axis %= 2
    local = np.asarray(A.sum(axis=axis, dtype=dtype)).ravel()
    along_parts = (axis == 1) == S.by_rows  # each lab sums whole rows (columns) of its own
    if along_parts:
        return _vector(local, S.partition, what)
    total = allreduce(local, "sum", what)
    part = codistributor1d.defaultPartition(total.size, n)
    o = offsets(part)
    lab = here()[0]
    return _vector(total[o[lab - 1]:o[lab]], part, what)


def diagonal(S: SparseBase, k: int = 0) -> Any:
    """The k-th diagonal as a dense codistributed vector, partitioned by what each lab holds."""
    m, n = S.shape
    length = max(0, min(m, n - k) if k >= 0 else min(m + k, n))
    shift = max(-k, 0) if S.by_rows else max(k, 0)  # diagonal t sits at major index t + shift
    lo, hi = S.range_of()
    t0, t1 = min(max(lo - shift, 0), length), min(max(hi - shift, 0), length)
    i, j, v = coords(S)
    keep = (j - i) == k
    t = (i if S.by_rows else j)[keep] - shift
    out = np.zeros(t1 - t0, dtype=S.dtype)
    np.add.at(out, t - t0, v[keep])
    counts = [int(c) for c in allgather(np.array([t1 - t0], dtype=np.int64), "diag(S)")[:, 0]]
    return _vector(out, counts, "diag(S)")


def _band(S: SparseBase, k: int, lower: bool) -> Any:
    i, j, _ = coords(S)
    keep = (j - i <= k) if lower else (j - i >= k)
    A = S._local.copy()
    A.data[~keep] = 0
    A.eliminate_zeros()
    return type(S)._from_local(A, S._codist)


def tril(S: SparseBase, k: int = 0) -> Any:
    return _band(S, k, True)


def triu(S: SparseBase, k: int = 0) -> Any:
    return _band(S, k, False)


def norm(S: SparseBase, ord: Any = None) -> float:
    """``norm(S, ord)`` for ord 1 (largest column sum), inf (largest row sum), 'fro'
    (None) as scipy.sparse.linalg.norm; one or two allreduces."""
    what = "norm(S)"
    if ord in (None, "fro", "f"):
        a = S._local.data
        return float(np.sqrt(allreduce(np.asarray(np.vdot(a, a).real), "sum", what)))
    if ord in (1, np.inf, float("inf"), -1, -np.inf):
        axis = 0 if abs(ord) == 1 else 1
        sums = ssum(map_local(S, abs), axis=axis)._local
        how = "max" if ord > 0 else "min"
        big = np.inf if ord > 0 else -np.inf
        local = np.asarray(sums.max() if ord > 0 else sums.min()) if sums.size else np.asarray(-big)
        return float(allreduce(local.astype(np.float64), how, what))
    raise ValueError(f"{what}: ord must be 1, inf or 'fro' for a sparse matrix (MATLAB's norm(S, 2) "
                     f"is svds); got {ord!r}")


def nnz(S: SparseBase) -> int:
    """The number of stored nonzeros (one allreduce)."""
    return int(allreduce(np.asarray(S.local_nnz(), dtype=np.int64), "sum", "nnz(S)"))


def find(S: SparseBase) -> tuple[Any, Any, Any]:
    """``i, j, v`` of the nonzeros as codistributed vectors (0-based indices), each lab's
    in its format's order (row-major by rows; by columns column-major, MATLAB's order)."""
    i, j, v = coords(S)
    keep = v != 0
    counts = [int(c) for c in allgather(np.array([int(keep.sum())], dtype=np.int64), "find(S)")[:, 0]]
    return _vector(i[keep], counts, "find"), _vector(j[keep], counts, "find"), _vector(v[keep], counts, "find")


def nonzeros(S: SparseBase) -> Any:
    """The nonzero values as a codistributed vector (MATLAB's ``nonzeros``)."""
    return find(S)[2]


def full(S: SparseBase) -> Any:
    """The dense codistributed matrix, in the same layout (rows or columns, partition)."""
    return codistributed.from_parts(S._local.toarray(), S._codist)


def gather_sparse(S: SparseBase, lab: int | None = None) -> Any:
    """The whole matrix as a scipy.sparse array (csr by rows, csc by columns) on every
    lab, or on ``lab`` only (the others get an empty 0x0 one of S's format and dtype):
    one allgather of counts, then one (all)gatherv per array of coordinates."""
    what = "gather(S)" if lab is None else f"gather(S, {lab})"
    S.check_labs(what)
    me, n = here()
    root = None if lab is None else check_lab(lab, n, "lab") - 1
    i, j, v = coords(S)
    if n > 1:
        counts = allgather(np.array([i.size], dtype=np.int64), what)[:, 0]
        i, j, v = (_gatherv(a, counts, root, what) for a in (i, j, np.ascontiguousarray(v)))
    if root is not None and root != me - 1:
        empty = sp.csr_array((0, 0), dtype=S.dtype)
        return empty if S.by_rows else sp.csc_array(empty)
    A = sp.coo_array((v, (i, j)), shape=S.shape)
    return A.tocsr() if S.by_rows else A.tocsc()


def _gatherv(x: np.ndarray, counts: np.ndarray, root: int | None, what: str) -> np.ndarray:
    """``allgatherv``, or MPI's Igatherv to ``root`` (0-based; the others get nothing)."""
    if root is None:
        return allgatherv(x, counts, what)
    x = np.ascontiguousarray(x)
    c = np.asarray(counts, dtype=np.int64) * x.dtype.itemsize
    d = np.concatenate(([0], np.cumsum(c)[:-1])).astype(np.int64)
    out = np.empty(int(np.sum(counts)) if here()[0] - 1 == root else 0, dtype=x.dtype)
    send, recv = as_bytes(x), out.view(np.uint8)
    MPI = comm.MPI
    spec = [recv, (c, d), MPI.BYTE] if here()[0] - 1 == root else None
    comm.wait(comm.block().Igatherv([send, MPI.BYTE], spec, root), what, keep=(send, out, c, d))
    return out

"""Moving nonzeros between labs: routing (row, column, value) triples to their owners,
and so redistributing a sparse matrix between rows and columns or partitions.

Each lab sorts its entries by owner and sends each owner its run with one all-to-all
per array (rows, columns, values; the counts travel first in one allgather), as a
sparse transpose in PETSc (``MatTranspose_MPIAIJ``) or a COO assembly
(``MatSetValues`` with off-process entries, ``MatAssemblyBegin/End``) moves them.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...layouts.codistributor import codistributor1d
from ..base import here
from ..collectives import Exchange, allgather, as_bytes
from .matrix import SparseBase, offsets

__all__ = ["exchange", "route", "assemble", "to_layout", "to_rows"]


def exchange(sends: list, rcounts: list, what: str) -> list:
    """``collectives.Exchange`` (one all-to-all of byte chunks), or, on one lab, the chunk itself."""
    if here()[1] == 1:
        return [as_bytes(np.ascontiguousarray(sends[0]))]
    return Exchange(sends, rcounts, what).finish()


def route(i: np.ndarray, j: np.ndarray, v: np.ndarray, owner: np.ndarray, what: str) -> tuple[Any, Any, Any]:
    """Send entry k (``i[k], j[k], v[k]``) to lab ``owner[k]`` (1-based); returns the
    entries this lab receives, in lab order (its own among them)."""
    lab, n = here()
    if n == 1:
        return i, j, v
    order = np.argsort(owner, kind="stable")
    i, j, v, owner = i[order], j[order], v[order], owner[order]
    counts = np.bincount(owner, minlength=n + 1)[1:].astype(np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)))
    table = allgather(counts, what)  # table[k, q]: lab k+1 sends to lab q+1
    got = table[:, lab - 1]
    out = []
    for arr in (i.astype(np.int64), j.astype(np.int64), np.ascontiguousarray(v)):
        sends = [arr[starts[q]:starts[q + 1]] for q in range(n)]
        chunks = Exchange(sends, [int(c) * arr.dtype.itemsize for c in got], what).finish()
        out.append(np.concatenate([c.view(arr.dtype) for c in chunks]) if chunks else arr[:0])
    return out[0], out[1], out[2]


def assemble(i: Any, j: Any, v: Any, shape: tuple[int, int], codist: codistributor1d, what: str) -> Any:
    """This lab's local part, in ``codist``'s format, of the matrix whose entries (from
    every lab, duplicates summed as scipy's COO) are ``(i, j, v)``."""
    lab, _ = here()
    o = offsets(codist.Partition)
    by_rows = codist.Dimension == 1
    key = np.asarray(i if by_rows else j, dtype=np.int64)
    owner = np.searchsorted(o, key, side="right")
    i, j, v = route(np.asarray(i, np.int64), np.asarray(j, np.int64), np.asarray(v), owner, what)
    lo, hi = int(o[lab - 1]), int(o[lab])
    m, n = shape
    if by_rows:
        part = sp.coo_array((v, (i - lo, j)), shape=(hi - lo, n)).tocsr()
    else:
        part = sp.coo_array((v, (i, j - lo)), shape=(m, hi - lo)).tocsc()
    part.sum_duplicates()
    return part


def to_layout(S: SparseBase, codist: codistributor1d, what: str) -> Any:
    """``S`` in the complete layout ``codist`` (rows or columns, any partition)."""
    if codist == S._codist:
        return S
    lab, _ = here()
    lo, _hi = S.range_of(lab)
    coo = S._local.tocoo()
    i, j = coo.row.astype(np.int64), coo.col.astype(np.int64)
    if S.by_rows:
        i = i + lo
    else:
        j = j + lo
    local = assemble(i, j, coo.data, S.shape, codist, what)
    return type(S)._from_local(local, codist)


def to_rows(S: SparseBase, what: str, partition: Any = None) -> Any:
    """``S`` distributed by rows (``partition``, default: S's own when S is by rows, else
    the default partition); itself when it already is, the conversion cached on S."""
    if S.by_rows and (partition is None or list(partition) == S.partition):
        return S
    key = ("rows", None if partition is None else tuple(partition))
    found = S._cache.get(key)
    if found is None:
        shape = S.shape
        target = codistributor1d(1, None if partition is None else list(partition), shape).complete(shape, here()[1])
        found = to_layout(S, target, what)
        S._cache[key] = found
    return found

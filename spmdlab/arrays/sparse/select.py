"""Row and column slices of a sparse codistributed matrix (``S[a:b, :]``, ``S[:, c:d]``,
``S[i, :]``, ``S[a:b, c:d]``, steps included).

Along the distributed dimension each lab keeps what it holds of the selection (the
result's partition is what each lab selected, one small allgather of counts); along the
other dimension the selection is local (scipy's slicing). An integer index keeps the
dimension (MATLAB's ``S(i, :)`` is 1 x n), as scipy's ``S[[i], :]``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts.codistributor import codistributor1d
from ..base import here
from ..collectives import allgather
from .matrix import SparseBase

__all__ = ["getitem"]


def _positions(index: Any, size: int, what: str) -> np.ndarray:
    if isinstance(index, slice):
        return np.arange(size)[index]
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
        if not -size <= index < size:
            raise IndexError(f"{what}: index {index} is out of bounds for size {size}")
        return np.array([index % size])
    arr = np.asarray(index)
    if arr.dtype == bool and arr.shape == (size,):
        return np.flatnonzero(arr)
    if arr.dtype.kind in "iu" and arr.ndim == 1:
        if arr.size and (arr.min() < -size or arr.max() >= size):
            raise IndexError(f"{what}: an index is out of bounds for size {size}")
        return arr % size
    raise IndexError(f"{what}: use slices, integers, integer arrays or masks; got {index!r}")


def getitem(S: SparseBase, index: Any) -> Any:
    what = "S[i, j]"
    if not isinstance(index, tuple):
        index = (index, slice(None))
    if len(index) != 2:
        raise IndexError(f"{what}: a sparse matrix takes two indices, got {len(index)}")
    rows = _positions(index[0], S.shape[0], what)
    cols = _positions(index[1], S.shape[1], what)
    along, other = (rows, cols) if S.by_rows else (cols, rows)
    if along.size > 1 and not np.all(np.diff(along) > 0):
        raise IndexError(f"{what}: along the distributed dimension ({'rows' if S.by_rows else 'columns'}) "
                         "the indices must increase (a slice with a positive step, or sorted indices)")
    lo, hi = S.range_of()
    mine = (along >= lo) & (along < hi)
    local_idx = along[mine] - lo
    A = S._local
    part = A[local_idx][:, other] if S.by_rows else A[:, local_idx][other]
    counts = [int(c) for c in allgather(np.array([local_idx.size], dtype=np.int64), what)[:, 0]]
    shape = (rows.size, cols.size)
    codist = codistributor1d(1 if S.by_rows else 2, counts, shape).complete(shape, here()[1])
    return type(S)._from_local(part, codist)


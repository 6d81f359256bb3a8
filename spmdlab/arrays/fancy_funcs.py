"""numpy's selection functions on codistributed arrays, built on ``fancy`` and ``nonzero``:
``np.take`` (with ``axis`` and ``mode``), ``np.flatnonzero``, ``np.argwhere``, and
MATLAB's ``find`` for dense arrays (``numerics.find`` takes sparse ones too).

Layouts: ``take`` as ``D[..., idx]`` (``fancy``'s rule); ``flatnonzero`` and ``find``
give 1-D arrays partitioned by what each lab found (as ``nonzero``), ``argwhere`` the
same rows, all its columns on each lab. ``find`` keeps MATLAB's order (column-major
linear indices, the first nonzero of the first column first) with numpy's 0-based
numbering: ``find(D)`` is MATLAB's ``find(D) - 1``.
"""
from __future__ import annotations

import math
import operator
from typing import Any, cast

import numpy as np

from ..layouts.codistributor import codistributor1d
from .base import CodistArray, layout_text
from .collectives import allgather_objects
from .fancy import fancy_get
from .layout import labs_of, replicated_result
from .registry import implements
from .reshape import nonzero_of, transpose_axes

__all__ = ["take", "flatnonzero", "argwhere", "find"]


def _flat_index(indices: Any, size: int, mode: str, what: str) -> Any:
    """``indices`` into the flattened array, wrapped or clipped as ``mode`` asks, checked
    (numpy's IndexError on every lab) for ``mode='raise'``."""
    if mode != "raise" and size == 0 and int(np.prod(indices.shape)):
        raise IndexError("cannot do a non-empty take from an empty axes.")
    if mode == "wrap":
        return np.mod(indices, size) if size else indices
    if mode == "clip":
        return np.clip(indices, 0, max(size - 1, 0))
    if isinstance(indices, CodistArray):
        lab, n = labs_of(indices, what)
        part = np.asarray(indices._local)
        bad = part[(part < -size) | (part >= size)]
        first = int(bad[0]) if bad.size else None
        found = [f for f in (allgather_objects(first, what) if n > 1 else [first]) if f is not None]
        if found:
            raise IndexError(f"index {found[0]} is out of bounds for axis 0 with size {size}")
        return indices
    a = np.asarray(indices)
    bad = a[(a < -size) | (a >= size)]
    if bad.size:
        raise IndexError(f"index {int(bad.reshape(-1)[0])} is out of bounds for axis 0 with size {size}")
    return a


@implements(np.take)
def take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    """``np.take``: ``a[..., indices]`` along ``axis``, or into the flattened array."""
    what = "numpy.take"
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays "
                                  f"({layout_text(a._codist)})")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    G = tuple(a.shape)
    if axis is None:
        size = int(np.prod(G))
        idx = _flat_index(indices if isinstance(indices, CodistArray) else np.asarray(indices, dtype=np.intp),
                          size, mode, what)
        if np.ndim(idx) == 0:
            return a[np.unravel_index(int(idx) % size, G)]
        if isinstance(idx, CodistArray):
            parts = np.unravel_index(np.mod(np.asarray(idx._local, dtype=np.int64), size), G)
            key = tuple(type(idx)._from_local(p.astype(np.int64), idx._codist) for p in parts)
        elif idx.size == 0:
            key = tuple(idx.astype(np.int64) for _ in G)
        else:
            key = np.unravel_index(np.mod(idx, size), G)
        return fancy_get(a, key) if len(G) > 1 else fancy_get(a, key[0])
    ax = operator.index(axis)
    if not -len(G) <= ax < len(G):
        raise np.exceptions.AxisError(ax, len(G))
    ax %= len(G)
    if mode != "raise":
        indices = _flat_index(indices if isinstance(indices, CodistArray) else np.asarray(indices), G[ax], mode, what)
    elif math.prod(G[:ax]) == 0:  # numpy takes nothing, so checks nothing
        if not G[ax]:  # not even index 0 exists: the empty result directly
            shape = tuple(indices.shape) if isinstance(indices, CodistArray) else np.shape(indices)
            return replicated_result(a, np.empty(G[:ax] + shape + G[ax + 1:], a.dtype))
        indices = cast(Any, indices) * 0 if isinstance(indices, CodistArray) else np.zeros(np.shape(indices), np.intp)
    key = (slice(None),) * ax + (indices,)
    if np.ndim(indices) == 0 and not isinstance(indices, CodistArray):
        return a[key]
    return fancy_get(a, key)


@implements(np.flatnonzero)
def flatnonzero(a: CodistArray) -> Any:
    """Flat C-order indices of the nonzero elements (partitioned as ``nonzero``)."""
    nz = nonzero_of(a)
    G = tuple(a.shape)
    flat = np.ravel_multi_index(tuple(np.asarray(p._local) for p in nz), G) if nz[0]._local.size \
        else np.empty(0, dtype=np.intp)
    return type(a)._from_local(flat.astype(np.intp), nz[0]._codist)


@implements(np.argwhere)
def argwhere(a: CodistArray) -> Any:
    """``(N, a.ndim)`` indices of the nonzero elements, by rows as ``nonzero``."""
    nz = nonzero_of(a)
    c = nz[0]._codist
    local = np.stack([np.asarray(p._local) for p in nz], axis=1).astype(np.intp)
    return type(a)._from_local(local, codistributor1d(1, list(c.Partition), (int(c.GlobalSize[0]), len(nz))))


def find(D: CodistArray, n: int | None = None, direction: str = "first", *, nargout: int = 1) -> Any:
    """MATLAB's ``find`` for a dense codistributed array, 0-based: the linear indices of
    the nonzeros in MATLAB's column-major order (``k = find(D)`` is MATLAB's ``k - 1``);
    ``n``: only the first (or, ``direction='last'``, the last) n; ``nargout=2``: the row
    and column indices ``(i, j)`` in the same order, ``nargout=3``: ``(i, j, v)``."""
    if direction not in ("first", "last"):
        raise ValueError(f"find: direction must be 'first' or 'last', got {direction!r}")
    if nargout not in (1, 2, 3):
        raise ValueError(f"find: nargout must be 1, 2 or 3, got {nargout!r}")
    if nargout > 1 and D.ndim != 2:
        raise ValueError(f"find: nargout={nargout} needs a matrix; D has {D.ndim} dimensions")
    T = transpose_axes(D, None) if D.ndim > 1 else D
    if nargout == 1:
        out: tuple = (flatnonzero(T),)
    else:
        j, i = nonzero_of(T)
        out = (i, j) if nargout == 2 else (i, j, fancy_get(D, (i, j)))
    if n is not None:
        if n < 0 or int(n) != n:
            raise ValueError(f"find: n must be a nonnegative integer, got {n!r}")
        k = int(n)
        out = tuple(x[:k] if direction == "first" else x[max(x.shape[0] - k, 0):] for x in out)
    return out[0] if nargout == 1 else out

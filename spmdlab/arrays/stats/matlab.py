"""MATLAB's names for sorting and statistics: ``sort``, ``unique``, ``median``, ``prctile``,
``histcounts``, ``cumsum``, ``cumprod``, ``diff`` (``spmdlab.numerics`` exports them).

As MATLAB, they work along the first dimension whose size is not 1 unless ``dim``
(1-based) is given; indices they return are 0-based, as everywhere in spmdlab (``find``,
``lu``'s ``p``, ``globalIndices``). Where MATLAB and numpy differ, MATLAB's meaning is
kept and said in each docstring. They take codistributed arrays (and numpy arrays).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...checks import dim_to_axis
from ...layouts.codistributor import codistributor1d
from ..base import CodistArray
from ..collectives import Exchange
from ..layout import labs_of
from ..sorting.samplesort import sample_sort
from ..sorting.sort import flat_1d, off_axes

__all__ = ["sort", "unique", "median", "prctile", "histcounts", "cumsum", "cumprod", "diff"]


def _axis(A: Any, dim: Any, what: str) -> int:
    """0-based axis of MATLAB's ``dim`` (1-based), default the first dimension not of size 1."""
    shape = np.shape(A) if not isinstance(A, CodistArray) else A.shape
    if dim is None:
        return next((e for e, s in enumerate(shape) if s != 1), 0)
    return dim_to_axis(dim, None, len(shape), what=what)


def _reverse_1d(D: CodistArray, what: str) -> CodistArray:
    """A 1-D codistributed array reversed: lab k's part, reversed, moves to lab n+1-k."""
    lab, n = labs_of(D, what)
    c: Any = D._codist
    part = c.Partition
    mine = np.ascontiguousarray(D._local[::-1])
    if n == 1:
        return type(D)._from_local(mine, D._codist)
    to, frm = n - lab, n - lab  # 0-based partner: lab n+1-k
    sends: list = [None] * n
    rcounts = [0] * n
    if to != lab - 1:  # the middle lab of an odd number keeps its part (but joins the exchange)
        sends[to] = mine
        rcounts[frm] = int(part[frm]) * D.dtype.itemsize
    got = Exchange(sends, rcounts, what).finish()
    if to != lab - 1:
        mine = got[frm].view(D.dtype).copy()
    return type(D)._from_local(mine, codistributor1d(1, list(part)[::-1], D.shape))


def _sorted_pair(A: Any, axis: int, what: str) -> tuple:
    """Ascending values and their stable 0-based indices along ``axis``."""
    if not isinstance(A, CodistArray):
        idx = np.argsort(A, axis=axis, kind="stable")
        return np.take_along_axis(A, idx, axis=axis), idx
    if A.ndim > 1:
        E = off_axes(A, (axis,))
        idx = np.argsort(E._local, axis=axis, kind="stable")
        return (type(E)._from_local(np.take_along_axis(E._local, idx, axis=axis), E._codist),
                type(E)._from_local(idx, E._codist))
    F = flat_1d(A, what)
    lab, n = labs_of(F, what)
    sel: Any = F._codist.localSelection(lab, n)[0]
    start = sel.start
    parts = sample_sort(F._local, what, (np.arange(start, start + F._local.size, dtype=np.intp),), stable=True)
    codist = codistributor1d(1, [int(k) for k in parts.counts], (F.size,))
    return type(F)._from_local(parts.keys, codist), type(F)._from_local(parts.payloads[0], codist)


def _flip(A: Any, axis: int, what: str) -> Any:
    if not isinstance(A, CodistArray):
        return np.flip(A, axis=axis)
    if A.ndim == 1:
        return _reverse_1d(A, what)
    E = off_axes(A, (axis,))
    return type(E)._from_local(np.flip(E._local, axis=axis).copy(), E._codist)


def sort(A: Any, dim: Any = None, direction: str = "ascend", *, nargout: int = 1) -> Any:
    """MATLAB's ``B = sort(A)``, ``sort(A, dim)``, ``sort(A, dim, 'descend')``;
    ``B, I = sort(A, nargout=2)``. Stable (equal elements keep their order, also when
    descending); NaNs last ascending, first descending (MATLAB's 'auto' placement);
    ``I`` 0-based along ``dim``. A 1-D codistributed array is sample sorted."""
    what = "sort"
    if direction not in ("ascend", "descend"):
        raise ValueError(f"{what}: direction must be 'ascend' or 'descend', got {direction!r}")
    axis = _axis(A, dim, what)
    if direction == "ascend":
        B, I = _sorted_pair(A, axis, what)
    else:
        length = (A.shape if isinstance(A, CodistArray) else np.shape(A))[axis]
        B, J = _sorted_pair(_flip(A, axis, what), axis, what)
        B, I = _flip(B, axis, what), _flip(length - 1 - J, axis, what)
    return B if nargout == 1 else (B, I)


def unique(A: Any, *, nargout: int = 1) -> Any:
    """MATLAB's ``C = unique(A)``; ``C, ia, ic = unique(A, nargout=3)``: sorted distinct
    values of all elements, ``ia`` the first occurrence of each and ``ic`` the position of
    each element in ``C``. As MATLAB, every NaN is distinct. Unlike MATLAB, ``ia`` and
    ``ic`` index ``A`` in numpy's C order, 0-based (MATLAB: ``A(:)``, column-major, 1-based),
    and ``ic`` has ``A``'s shape."""
    flags: Any = {"return_index": nargout > 1, "return_inverse": nargout > 2}
    return np.unique(A, **flags, equal_nan=False)


def median(A: Any, dim: Any = None) -> Any:
    """MATLAB's ``median(A)``, ``median(A, dim)``: NaN where a NaN is present (MATLAB's
    'includenan'); the dimension is removed (numpy's shape)."""
    return np.median(A, axis=_axis(A, dim, "median"))


def prctile(A: Any, p: Any, dim: Any = None) -> Any:
    """MATLAB's ``prctile(A, p)``, ``prctile(A, p, dim)``: percentiles ``p`` (0-100) by
    MATLAB's method - the sorted values are the 100*(i-0.5)/n percentiles, linear in
    between, the extremes beyond - which is numpy's ``method='hazen'`` (not numpy's
    default 'linear'); NaNs are ignored, as MATLAB does."""
    return np.nanpercentile(A, p, axis=_axis(A, dim, "prctile"), method="hazen")


def histcounts(X: Any, bins: Any = None, *, nargout: int = 1) -> Any:
    """MATLAB's ``N = histcounts(X, edges)`` or ``histcounts(X, nbins)``;
    ``N, edges = histcounts(..., nargout=2)``. Bins are ``[e_k, e_k+1)``, the last closed,
    as MATLAB. Unlike MATLAB, ``nbins`` gives numpy's equal bins from the minimum to the
    maximum (MATLAB rounds the edges), and no ``bins`` is numpy's 'auto' rule."""
    counts, edges = np.histogram(X, bins="auto" if bins is None else bins)
    return counts if nargout == 1 else (counts, edges)


def cumsum(A: Any, dim: Any = None) -> Any:
    """MATLAB's ``cumsum(A)``, ``cumsum(A, dim)``."""
    return np.cumsum(A, axis=_axis(A, dim, "cumsum"))


def cumprod(A: Any, dim: Any = None) -> Any:
    """MATLAB's ``cumprod(A)``, ``cumprod(A, dim)``."""
    return np.cumprod(A, axis=_axis(A, dim, "cumprod"))


def diff(A: Any, n: int = 1, dim: Any = None) -> Any:
    """MATLAB's ``diff(A)``, ``diff(A, n)``, ``diff(A, n, dim)``."""
    return np.diff(A, n=n, axis=_axis(A, dim, "diff"))


"""``np.sort``, ``argsort``, ``partition`` and ``argpartition`` of codistributed arrays.

Along an axis that is not distributed, each lab sorts its own part (numpy's kernel, the
layout kept). Along the distributed axis of an array of two or more dimensions, the array
is first moved (one redistribution) to be distributed along another axis, after which the
sort is local. A 1-D array, and ``axis=None`` (the array flattened in C order), is sorted
by a parallel sample sort (``samplesort``: Shi & Schaeffer 1992); the result is 1-D with
the partition the sample sort ends with (about ``N / numlabs`` a lab), never gathered.

``argsort`` gives global 0-based indices (C-order flat indices for ``axis=None``) and is
always stable (ties in index order), which is one of the orders numpy's unstable kinds may
give and the one ``kind='stable'`` asks for. ``partition`` is a full sort (a sorted array
is a valid partition for every ``kth``), ``argpartition`` a stable argsort.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ...layouts.codistributor import codistributor1d
from ..base import CodistArray, layout_text
from ..layout import is1d, labs_of, local_sel, replicated_result
from ..reductions import axes_of
from ..registry import implements
from ..reshape import reshape_to
from ..transfer import redistribute
from .samplesort import sample_sort

__all__ = ["flat_1d", "off_axes", "sort_of", "check_kth"]


def flat_1d(D: CodistArray, what: str) -> CodistArray:
    """``D`` as a 1-D array in C order whose labs hold consecutive ranges."""
    return D if D.ndim == 1 else reshape_to(D, (-1,), what=what)


def off_axes(D: CodistArray, axes: tuple) -> CodistArray:
    """``D`` distributed along an axis not in ``axes`` (moved there if it is not), so that
    work along ``axes`` is local; the longest such axis is chosen."""
    c: Any = D._codist
    if is1d(c) and c.Dimension - 1 not in axes:
        return D
    G = D.shape
    others = [e for e in range(len(G)) if e not in axes]
    k = max(others, key=lambda e: G[e])
    return redistribute(D, codistributor1d(k + 1))


def _sort_1d(D: CodistArray, arg: bool, stable: bool, what: str) -> CodistArray:
    lab, n = labs_of(D, what)
    x = D._local
    if x.dtype.kind == "c" and n > 1:
        raise NotImplementedError(f"{what} of a distributed complex array is not supported "
                                  f"({layout_text(D._codist)})")
    if arg:
        start = local_sel(D._codist, lab, n)[0].start
        parts = sample_sort(x, what, (np.arange(start, start + x.size, dtype=np.intp),), stable=True)
        out = parts.payloads[0]
    else:
        parts = sample_sort(x, what, stable=stable)
        out = parts.keys
    codist = codistributor1d(1, [int(k) for k in parts.counts], (D.size,))
    return type(D)._from_local(out, codist)


def sort_of(D: CodistArray, axis: Any, kind: Any, order: Any, stable: Any, arg: bool) -> CodistArray:
    """``np.sort`` (``arg`` False) or ``np.argsort`` (True) of ``D``."""
    what = "argsort" if arg else "sort"
    fn = np.argsort if arg else np.sort
    fn(np.zeros((1,) * D.ndim, D.dtype), axis=axis, kind=kind, order=order, stable=stable)  # numpy's errors
    if order is not None:
        raise NotImplementedError(f"{what}: order= is not supported for codistributed arrays "
                                  f"({layout_text(D._codist)})")
    is_stable = bool(stable) or kind in ("stable", "mergesort")
    if D.size == 0:
        return replicated_result(D, fn(np.empty(D.shape, D.dtype), axis=axis, kind=kind, stable=stable))
    if axis is None or D.ndim == 1:
        return _sort_1d(flat_1d(D, what), arg, is_stable, what)
    given = axes_of(D.ndim, axis, None, what)
    assert given is not None
    E = off_axes(D, given)
    return type(E)._from_local(fn(E._local, axis=given[0], kind=kind, stable=stable), E._codist)


def check_kth(kth: Any, length: int) -> None:
    """numpy's errors for a bad ``kth`` of ``partition`` along an axis of ``length``."""
    ks = np.atleast_1d(np.asarray(kth))
    if ks.dtype.kind not in "iu":
        raise TypeError("Partition index must be integer")
    if ks.ndim > 1:
        raise ValueError("kth array must have dimension <= 1")
    for k in ks.tolist() if length else ():  # numpy checks nothing for an empty axis
        if not -length <= operator.index(k) < length:
            raise ValueError(f"kth(={k}) out of bounds ({length})")


def _partition(D: CodistArray, kth: Any, axis: Any, kind: Any, order: Any, arg: bool) -> CodistArray:
    what = "argpartition" if arg else "partition"
    if kind != "introselect":
        raise ValueError(f"{what}: partition kind must be 'introselect' (got {kind!r})")
    if axis is None:
        length = D.size
    else:
        given = axes_of(D.ndim, axis, None, what)
        assert given is not None
        length = D.shape[given[0]]
    check_kth(kth, length)
    return sort_of(D, axis, None, order, True if arg else None, arg)


@implements(np.sort)
def _np_sort(a: CodistArray, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    return sort_of(a, axis, kind, order, stable, False)


@implements(np.argsort)
def _np_argsort(a: CodistArray, axis: Any = -1, kind: Any = None, order: Any = None, *,
                stable: Any = None) -> Any:
    return sort_of(a, axis, kind, order, stable, True)


@implements(np.partition)
def _np_partition(a: CodistArray, kth: Any, axis: Any = -1, kind: Any = "introselect", order: Any = None) -> Any:
    return _partition(a, kth, axis, kind, order, False)


@implements(np.argpartition)
def _np_argpartition(a: CodistArray, kth: Any, axis: Any = -1, kind: Any = "introselect",
                     order: Any = None) -> Any:
    return _partition(a, kth, axis, kind, order, True)

"""``np.unique`` and ``np.isin`` of codistributed arrays.

``unique`` reduces first, then sorts what is left: each lab finds the distinct values of
its own part by one local sort (with first indices and counts), the labs' distinct values are sample
sorted with equal values kept on one lab (``samplesort``, Shi & Schaeffer 1992), and each
lab merges the runs of equal values it received (counts summed, first indices the least).
With ``return_inverse`` the global number of each distinct value is sent back along the
same route, and each lab maps its elements through it: the inverse keeps ``ar``'s layout
and shape (numpy >= 2.0.1's shape for ``axis=None``). The distinct values, first indices
(global, C-order flat) and counts are 1-D, each lab holding the runs it merged.

``isin`` is local against a replicated ``test_elements``; a distributed
``test_elements`` is first reduced to its distinct values, which every lab then holds.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...layouts.codistributor import codistributor1d
from ..base import CodistArray, layout_text
from ..collectives import allgather, allgatherv
from ..layout import labs_of, local_sel, replicated_result, sel_global
from ..registry import implements
from .samplesort import sample_sort

__all__ = ["unique_of", "distinct_values", "isin_of"]


def _global_flat(D: CodistArray, pos: np.ndarray, lab: int, n: int) -> np.ndarray:
    """Global C-order flat indices of the local C-order positions ``pos`` of ``D``."""
    L = D._local
    if pos.size == 0:
        return np.zeros(0, dtype=np.intp)
    coords = np.unravel_index(pos, L.shape)
    ix = local_sel(D._codist, lab, n)
    glob = tuple(sel_global(ix[e], coords[e]) for e in range(L.ndim))
    return np.ravel_multi_index(glob, D.shape).astype(np.intp)


def _new_runs(k: np.ndarray, equal_nan: bool) -> np.ndarray:
    new = np.ones(k.size, dtype=bool)
    if k.size > 1:
        np.not_equal(k[1:], k[:-1], out=new[1:])
        if equal_nan and k.dtype.kind in "fc":
            nan = np.isnan(k)
            new[1:] &= ~(nan[1:] & nan[:-1])
    return new


def _local_unique(x: np.ndarray, index: bool, inverse: bool, equal_nan: bool) -> tuple:
    """numpy's ``unique`` of this lab's elements (values, first positions, inverse,
    counts) by one sort (numpy's own ``unique`` is several times slower on integers)."""
    if index or inverse:
        perm = np.argsort(x, kind="stable")
        s = x[perm]
    else:
        perm, s = None, np.sort(x)
    new = _new_runs(s, equal_nan)
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, s.size)).astype(np.intp)
    first = perm[starts] if perm is not None and index else None
    inv = None
    if perm is not None and inverse:
        inv = np.empty(s.size, dtype=np.intp)
        inv[perm] = np.cumsum(new) - 1
    return s[starts], first, inv, counts


def unique_of(ar: CodistArray, return_index: bool = False, return_inverse: bool = False,
              return_counts: bool = False, axis: Any = None, equal_nan: bool = True, sorted: bool = True) -> Any:
    what = "unique"
    flags: Any = {"return_index": return_index, "return_inverse": return_inverse, "return_counts": return_counts}
    np.unique(np.zeros((1,) * ar.ndim, ar.dtype), **flags, axis=axis, equal_nan=equal_nan)  # numpy's errors
    if axis is not None:
        raise NotImplementedError(f"{what}: axis= is not supported for codistributed arrays "
                                  f"({layout_text(ar._codist)}); use axis=None")
    lab, n = labs_of(ar, what)
    if ar.size == 0 or (ar.dtype.kind == "c" and n > 1):
        if ar.size:
            raise NotImplementedError(f"{what} of a distributed complex array is not supported "
                                      f"({layout_text(ar._codist)})")
        r = np.unique(np.empty(ar.shape, ar.dtype), **flags, equal_nan=equal_nan)
        return tuple(replicated_result(ar, x) for x in r) if isinstance(r, tuple) else replicated_result(ar, r)
    L = ar._local
    u, first, inv, cnt = _local_unique(L.reshape(-1), return_index, return_inverse, equal_nan)
    payloads = []  # only what is asked for travels with the distinct values
    if return_index:
        payloads.append(_global_flat(ar, first, lab, n))
    if return_counts:
        payloads.append(cnt)
    parts = sample_sort(u, what, tuple(payloads), stable=True, by_value=True)
    keys = parts.keys
    new = _new_runs(keys, equal_nan)
    starts = np.flatnonzero(new)
    runs = allgather(np.array(starts.size, dtype=np.int64), what)
    codist = codistributor1d(1, [int(r) for r in runs], (int(runs.sum()),))
    out = [type(ar)._from_local(keys[starts], codist)]
    if return_index:
        first_g = np.minimum.reduceat(parts.payloads[0], starts) if starts.size else starts.astype(np.intp)
        out.append(type(ar)._from_local(first_g.astype(np.intp), codist))
    if return_inverse:
        ids = (np.cumsum(new) - 1 + int(runs[:lab - 1].sum())).astype(np.intp)
        mine = parts.send_back(ids, what)
        out.append(type(ar)._from_local(mine[inv].reshape(L.shape), ar._codist))
    if return_counts:
        counts = np.add.reduceat(parts.payloads[-1], starts) if starts.size else starts.astype(np.intp)
        out.append(type(ar)._from_local(counts.astype(np.intp), codist))
    return out[0] if len(out) == 1 else tuple(out)


def distinct_values(D: CodistArray, what: str) -> np.ndarray:
    """The distinct values of ``D``, sorted, on every lab (each lab's reduced first)."""
    labs_of(D, what)
    mine = np.unique(D._local.reshape(-1))
    counts = allgather(np.array(mine.size, dtype=np.int64), what)
    return np.unique(allgatherv(mine, counts, what))


def isin_of(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
            kind: Any = None) -> Any:
    what = "isin"
    edt = element.dtype if isinstance(element, CodistArray) else np.asarray(element).dtype
    tdt = test_elements.dtype if isinstance(test_elements, CodistArray) else np.asarray(test_elements).dtype
    np.isin(np.zeros(1, edt), np.zeros(1, tdt), assume_unique=assume_unique, invert=invert, kind=kind)
    test = distinct_values(test_elements, what) if isinstance(test_elements, CodistArray) else test_elements
    kw = {"assume_unique": assume_unique, "invert": invert, "kind": kind}
    if isinstance(element, CodistArray):
        return element._map_local(lambda x: np.isin(x, test, **kw))
    like = test_elements
    return replicated_result(like, np.isin(element, test, **kw))


@implements(np.unique)
def _np_unique(ar: CodistArray, return_index: bool = False, return_inverse: bool = False,
               return_counts: bool = False, axis: Any = None, *, equal_nan: bool = True, sorted: bool = True) -> Any:
    return unique_of(ar, return_index, return_inverse, return_counts, axis, equal_nan, sorted)


@implements(np.isin)
def _np_isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False, *,
             kind: Any = None) -> Any:
    return isin_of(element, test_elements, assume_unique, invert, kind)

"""``np.searchsorted`` against a distributed sorted 1-D array.

When ``a`` is sorted, so is each lab's part, and every element of lab q precedes every
element of lab q+1; the insertion point of ``v`` in ``a`` is therefore the sum over the
labs of its insertion point in their parts: each lab runs numpy's ``searchsorted`` on
its own part and ONE allreduce adds the counts. A distributed ``v`` is first made known
to every lab (its values only; the result keeps ``v``'s layout).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import CodistArray, layout_text
from ..collectives import allgather, allgatherv, allreduce
from ..layout import labs_of, replicated_result
from ..registry import implements

__all__ = ["searchsorted_of"]


def _counts(a: CodistArray, v: np.ndarray, side: Any, what: str) -> np.ndarray:
    local = np.searchsorted(a._local, v, side=side)
    return allreduce(np.asarray(local, dtype=np.int64), "sum", what).astype(np.intp)


def searchsorted_of(a: Any, v: Any, side: Any = "left", sorter: Any = None) -> Any:
    what = "searchsorted"
    if not isinstance(a, CodistArray):  # a replicated, v distributed: local
        return v._map_local(lambda x: np.searchsorted(a, x, side=side, sorter=sorter))
    vdt = v.dtype if isinstance(v, CodistArray) else np.asarray(v).dtype
    np.searchsorted(np.zeros((1,) * a.ndim, a.dtype), np.zeros(1, vdt), side=side)  # numpy's errors
    if sorter is not None:
        raise NotImplementedError(f"{what}: sorter= is not supported for a codistributed array "
                                  f"({layout_text(a._codist)}); sort it first (np.sort)")
    labs_of(a, what)
    if not isinstance(v, CodistArray):
        r = _counts(a, np.asarray(v), side, what)
        return r[()] if r.ndim == 0 else replicated_result(a, r)
    labs_of(v, what)
    mine = v._local.reshape(-1)
    sizes = allgather(np.array(mine.size, dtype=np.int64), what)
    everything = allgatherv(np.ascontiguousarray(mine), sizes, what)
    r = _counts(a, everything, side, what)
    lab = labs_of(v, what)[0]
    start = int(sizes[:lab - 1].sum())
    return type(v)._from_local(r[start:start + mine.size].reshape(v._local.shape), v._codist)


@implements(np.searchsorted)
def _np_searchsorted(a: Any, v: Any, side: Any = "left", sorter: Any = None) -> Any:
    return searchsorted_of(a, v, side, sorter)

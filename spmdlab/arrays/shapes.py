"""Shape operations that move no data, or move it once: ``*_like`` constructors (the
layout kept, halos, blocks and chunk maps included), ``copyto``, ``swapaxes``,
``moveaxis``, ``expand_dims`` and ``diagonal``.

Arguments are checked by numpy itself, on zero-stride stand-ins of the real shapes
(``proxy``: no memory), so errors are numpy's own, raised alike on every lab. Axis
permutations and new axes are local: the layout is permuted with the local part (as
``transpose``). ``diagonal`` of a 1d layout along one of its two axes is local too: each
lab's rows (or columns) meet a contiguous run of the diagonal, so the result is 1d along
its last axis with those run lengths as the partition; ScaLAPACK's PxLAPRNT walk of
the diagonal blocks, without moving anything.
"""
from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np

from ..layouts.codistributor import codistributor1d
from .base import CodistArray
from .layout import default_layout, is1d, labs_of
from .registry import implements
from .reshape import transpose_axes
from .transfer import redistribute

__all__ = ["proxy", "any_layout", "bounds", "expand_axes", "move_axes", "to_1d"]


def proxy(x: Any) -> np.ndarray:
    """A read-only stand-in of ``x``'s shape and dtype that holds no memory, for numpy's
    own argument checks."""
    return np.broadcast_to(np.zeros((), dtype=x.dtype), tuple(x.shape))


def bounds(partition: Any) -> np.ndarray:
    """``[0, p1, p1 + p2, ...]``: where each lab's part of a 1d layout starts (and the end)."""
    return np.concatenate(([0], np.cumsum(np.asarray(partition, dtype=np.intp)))).astype(np.intp)


def any_layout(fn: Any) -> Any:
    """Mark ``fn`` as taking arrays in every layout as they are (``ops.__array_function__``
    skips ``adapt.on_plain`` for it)."""
    fn._spmdlab_any_layout = True
    return fn


def to_1d(D: CodistArray, avoid: tuple = ()) -> CodistArray:
    """``D`` in a 1d layout, moved (once) only when it is not one: along the first
    dimension not in ``avoid`` (default partition)."""
    if is1d(D._codist):
        return D
    _, n = labs_of(D, "redistribute")
    dims = [e for e in range(D.ndim) if e not in avoid] or [0]
    return redistribute(D, codistributor1d(dims[0] + 1).complete(tuple(D.shape), n))


def move_axes(D: CodistArray, perm: tuple) -> CodistArray:
    """``D`` with its axes permuted (``perm`` as numpy's transpose): local, a copy."""
    R = transpose_axes(D, perm)
    return type(R)._from_local(np.array(R._local, copy=True), R._codist)


def expand_axes(D: CodistArray, axis: Any) -> CodistArray:
    """numpy's ``expand_dims``: length-1 axes inserted; local for a 1d layout (the
    distributed dimension is renumbered)."""
    shape = np.expand_dims(proxy(D), axis).shape  # numpy's checks and errors
    D = to_1d(D)
    lab, n = labs_of(D, "expand_dims")
    c: Any = D._codist
    ndim = len(shape)
    given = axis if isinstance(axis, (tuple, list)) else (axis,)
    new = {operator.index(a) % ndim for a in given}
    old = [e for e in range(ndim) if e not in new]
    k = old[c.Dimension - 1]
    local = D._local.reshape(tuple(1 if e in new else D._local.shape[old.index(e)] for e in range(ndim)))
    return type(D)._from_local(local.copy(), codistributor1d(k + 1, c.Partition, shape))


@implements(np.expand_dims)
def _np_expand_dims(a: Any, axis: Any) -> CodistArray:
    return expand_axes(a, axis)


@implements(np.swapaxes)
def _np_swapaxes(a: Any, axis1: Any, axis2: Any) -> CodistArray:
    perm = np.swapaxes(np.broadcast_to(np.zeros(()), tuple(range(a.ndim))), axis1, axis2).shape
    return move_axes(a, tuple(perm))


@implements(np.moveaxis)
def _np_moveaxis(a: Any, source: Any, destination: Any) -> CodistArray:
    perm = np.moveaxis(np.broadcast_to(np.zeros(()), tuple(range(a.ndim))), source, destination).shape
    return move_axes(a, tuple(perm))


def _diag_run(s: int, e: int, lo: int, hi: int) -> tuple:
    """The part ``[max(s, lo), min(e, hi))`` of ``[s, e)``, as a start and a length >= 0."""
    a, b = max(s, lo), min(e, hi)
    return a, max(0, b - a)


@implements(np.diagonal)
def _np_diagonal(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> CodistArray:
    """Local per lab (see the module's docstring); a 2dbc array is first moved to 1d."""
    shape = np.diagonal(proxy(a), offset, axis1, axis2).shape  # numpy's checks
    offset = operator.index(offset)
    ax1, ax2 = (operator.index(x) % a.ndim for x in (axis1, axis2))
    D = to_1d(a)
    lab, n = labs_of(D, "diagonal")
    c: Any = D._codist
    k = c.Dimension - 1
    local = np.diagonal(D._local, offset, ax1, ax2)
    if k not in (ax1, ax2):
        newk = k - sum(1 for x in (ax1, ax2) if x < k)
        return type(D)._from_local(local.copy(), codistributor1d(newk + 1, c.Partition, shape))
    N1, N2 = D.shape[ax1], D.shape[ax2]
    lo, hi = max(0, -offset), min(N1, N2 - offset)  # the rows (along axis1) the diagonal meets
    starts = bounds(c.Partition)
    counts = []
    for p in range(n):
        s, e = int(starts[p]), int(starts[p + 1])
        if k == ax2:
            s, e = s - offset, e - offset
        counts.append(_diag_run(s, e, lo, hi)[1])
    s = int(starts[lab - 1])
    local = np.diagonal(D._local, offset + s if k == ax1 else offset - s, ax1, ax2)
    local = local[..., :counts[lab - 1]]  # an empty part: numpy's diagonal of it may be longer
    return type(D)._from_local(local.copy(), codistributor1d(len(shape), counts, shape))


# --------------------------------------------------------------------------- *_like, copyto
def _like_shape(shape: Any) -> tuple | None:
    if shape is None:
        return None
    if isinstance(shape, (numbers.Integral, np.integer)):
        return (operator.index(shape),)
    return tuple(operator.index(s) for s in shape)


def _like(a: CodistArray, make: Any, dtype: Any, shape: Any, what: str) -> Any:
    """``make(part, dtype)`` on each stored array: the layout (halos, blocks, chunks) kept;
    a new ``shape=`` takes the default layout of that shape."""
    probe = make(np.zeros(1, a.dtype), dtype)  # numpy's dtype rules and errors
    S = _like_shape(shape)
    if S is not None and S != tuple(a.shape):
        if not S:
            return make(np.zeros((), a.dtype), dtype)  # 0-d, as numpy: replicated
        lab, n = labs_of(a, what)
        codist = default_layout(S, n)
        return type(a)._from_local(make(np.zeros(codist.localShape(lab, n), a.dtype), dtype), codist)
    R = a._map_local(lambda x: make(x, dtype))
    if R._mode != "replica":
        del R._mode
    assert R.dtype == probe.dtype
    return R


@implements(np.empty_like)
@any_layout
def _np_empty_like(prototype: Any, dtype: Any = None, order: Any = "K", subok: Any = True, shape: Any = None,
                   **kw: Any) -> Any:
    return _like(prototype, lambda x, t: np.empty_like(x, t), dtype, shape, "empty_like")


@implements(np.zeros_like)
@any_layout
def _np_zeros_like(a: Any, dtype: Any = None, order: Any = "K", subok: Any = True, shape: Any = None,
                   **kw: Any) -> Any:
    return _like(a, lambda x, t: np.zeros_like(x, t), dtype, shape, "zeros_like")


@implements(np.ones_like)
@any_layout
def _np_ones_like(a: Any, dtype: Any = None, order: Any = "K", subok: Any = True, shape: Any = None,
                  **kw: Any) -> Any:
    return _like(a, lambda x, t: np.ones_like(x, t), dtype, shape, "ones_like")


@implements(np.full_like)
@any_layout
def _np_full_like(a: Any, fill_value: Any, dtype: Any = None, order: Any = "K", subok: Any = True,
                  shape: Any = None, **kw: Any) -> Any:
    if isinstance(fill_value, CodistArray):
        raise NotImplementedError("full_like: fill_value must be a scalar or a replicated array for "
                                  "codistributed arrays")
    return _like(a, lambda x, t: np.full_like(x, fill_value, t), dtype, shape, "full_like")


def _stand_in(x: Any) -> Any:
    """A one-element array of ``x``'s dtype and number of dimensions (a Python scalar as
    it is): numpy's casting checks see the same dtypes."""
    if isinstance(x, (CodistArray, np.ndarray)):
        return np.zeros((1,) * x.ndim, dtype=x.dtype)
    return x


@implements(np.copyto)
@any_layout
def _np_copyto(dst: Any, src: Any, casting: Any = "same_kind", where: Any = True) -> None:
    """``dst[...] = src`` (or ``where(where, src, dst)``) through ``D[...] = v``, which writes
    into ``dst``'s own arrays in any layout; numpy's casting and shape checks first."""
    if not isinstance(dst, CodistArray):
        raise TypeError("copyto: a codistributed src needs a codistributed dst "
                        "(gather(src) for a numpy array)")
    if not isinstance(src, (CodistArray, np.ndarray)) and not np.isscalar(src):
        src = np.asarray(src)
    if not (isinstance(where, bool) or isinstance(where, CodistArray)):
        where = np.asarray(where)
    one = np.zeros((1,) * dst.ndim, dtype=dst.dtype)
    np.copyto(one, _stand_in(src), casting=casting, where=_stand_in(where))  # numpy's casting errors
    for x, name in ((src, "input array"), (where, "where")):
        shape = np.shape(x) if not isinstance(x, CodistArray) else tuple(x.shape)
        try:
            ok = np.broadcast_shapes(shape, tuple(dst.shape)) == tuple(dst.shape)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"could not broadcast {name} from shape {shape} into shape {tuple(dst.shape)}")
    if where is True or (isinstance(where, np.ndarray) and where.ndim == 0 and bool(where)):
        value = src
    elif isinstance(where, np.ndarray) and where.ndim == 0:
        return
    else:
        value = np.where(where, src, dst)  # type: ignore[call-overload]
    if isinstance(value, CodistArray) and value.dtype != dst.dtype:
        value = value.astype(dst.dtype)
    elif not isinstance(value, CodistArray):
        value = np.asarray(value).astype(dst.dtype, copy=False)
    dst[...] = value  # type: ignore[index]  # a codistributed array: ops.__setitem__

"""Shape operations of codistributed arrays: transpose, reshape/ravel/squeeze, cumsum/cumprod, nonzero.

Transpose is local (a view, as in numpy). C-order reshapes go through the layout where
every lab holds a contiguous range of flat indices (``layout.flat_layout``): at most one
redistribution, then one all-to-all of contiguous ranges.
"""
from __future__ import annotations

import math
import numbers
import operator
from typing import Any

import numpy as np

from ..layouts.codistributor import codistributor1d, codistributor2dbc
from .base import CodistArray, layout_text
from .collectives import Exchange, allgather
from .layout import (
    concatenates,
    flat_layout,
    flat_ranges,
    is1d,
    labs_of,
    local_sel,
    replicated_result,
    sel_global,
)
from .reductions import COMBINE_UFUNC, axes_of, check_numeric, squeeze_shape, wrap_local
from .registry import implements
from .transfer import redistribute

__all__ = ["transpose_axes", "reshape_to", "squeeze_axes", "cumulative", "nonzero_of"]


def transpose_axes(D: Any, axes: tuple | None) -> Any:
    G = tuple(D.shape)
    ndim = len(G)
    if axes is None or axes == (None,) or len(axes) == 0:
        axes = tuple(range(ndim))[::-1]
    elif len(axes) == 1 and isinstance(axes[0], (tuple, list, np.ndarray)):
        axes = tuple(axes[0])
    try:
        axes = tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(f"transpose: axes must be integers, got {axes!r}") from None
    if len(axes) != ndim:
        raise ValueError("transpose: axes don't match array")
    axes = tuple(a % ndim if -ndim <= a < ndim else a for a in axes)
    if sorted(axes) != list(range(ndim)):
        raise ValueError(f"transpose: axes {axes} are not a permutation of 0..{ndim - 1}")
    c = D._codist
    newG = tuple(G[a] for a in axes)
    local = D._local.transpose(axes)
    if is1d(c):
        k = c.Dimension - 1
        return type(D)._from_local(local, codistributor1d(axes.index(k) + 1, c.Partition, newG))
    if axes == (0, 1):
        return type(D)._from_local(local, c)
    r, q = c.LabGrid
    orient = "col" if c.Orientation == "row" else "row"
    return type(D)._from_local(local, codistributor2dbc([q, r], c.BlockSize, orient, newG))


def _new_shape(D, size: int, shape: Any, what: str) -> tuple:
    if isinstance(shape, (numbers.Integral, np.integer)):
        shape = (shape,)
    shape = tuple(operator.index(s) for s in shape)
    unknown = [e for e, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError(f"{what}: can only specify one unknown dimension")
    if any(s < -1 for s in shape):
        raise ValueError(f"{what}: negative dimensions not allowed")
    if unknown:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"{what}: cannot reshape array of size {size} into shape "
                             f"{tuple(s if s != -1 else -1 for s in shape)}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if math.prod(shape) != size:
        raise ValueError(f"{what}: cannot reshape array of size {size} into shape {shape}")
    if not shape:
        raise NotImplementedError(f"{what}: a codistributed array cannot be reshaped to 0-d "
                                  f"({layout_text(D._codist)}); use D.item() for its single element")
    return shape


def reshape_to(D: Any, shape: Any, order: str = "C", what: str = "reshape") -> Any:
    """C-order reshape: at most one redistribution to a flat-range layout, then one
    all-to-all of contiguous ranges into the flat-range layout of the new shape. 'F'
    order (column-major, MATLAB's): the same on the transposes (local views); 'A' and
    'K' read a codistributed array in C order."""
    if order in ("F", "f"):  # column-major (MATLAB's D(:)): the C-order reshape of the transposes
        S = (shape,) if isinstance(shape, (numbers.Integral, np.integer)) else tuple(shape)
        return transpose_axes(reshape_to(transpose_axes(D, None), S[::-1], "C", what), None)
    if order not in ("C", "A", "K", "c", "a", "k", None) or (order in ("K", "k") and what == "reshape"):
        raise ValueError(f"{what}: order must be one of 'C', 'F', 'A'" + (", 'K'" if what != "reshape" else "")
                         + f", got {order!r}")
    G = tuple(D.shape)
    S = _new_shape(D, math.prod(G), shape, what)
    lab, n = labs_of(D, what)
    if S == G:
        return type(D)._from_local(np.array(D._local, copy=True), D._codist)
    if math.prod(S) == 0:  # nothing moves (flat ranges assume every element exists)
        dst = flat_layout(S, n)
        return type(D)._from_local(np.empty(dst.localShape(lab, n), dtype=D.dtype), dst)
    src = D if concatenates(D._codist, G) else redistribute(D, flat_layout(G, n))
    dst = flat_layout(S, n)
    sr, dr = flat_ranges(src._codist, G), flat_ranges(dst, S)
    flat = np.ascontiguousarray(src._local).reshape(-1)
    out = np.empty(dst.localShape(lab, n), dtype=D.dtype)
    out_flat = out.reshape(-1)
    a, b = sr[lab - 1]
    sends: list = [None] * n
    for q in range(1, n + 1):
        lo, hi = max(a, dr[q - 1][0]), min(b, dr[q - 1][1])
        if hi > lo:
            chunk = flat[lo - a:hi - a]
            if q == lab:
                out_flat[lo - dr[lab - 1][0]:hi - dr[lab - 1][0]] = chunk
            else:
                sends[q - 1] = chunk
    c0, c1 = dr[lab - 1]
    spans = [(max(sr[p][0], c0), min(sr[p][1], c1)) for p in range(n)]
    rcounts = [max(0, int(hi - lo)) * D.dtype.itemsize if p != lab - 1 else 0
               for p, (lo, hi) in enumerate(spans)]
    if n > 1:
        chunks = Exchange(sends, rcounts, what).finish()
        for p, (lo, hi) in enumerate(spans):
            if rcounts[p]:
                out_flat[lo - c0:hi - c0] = chunks[p].view(D.dtype)
    return type(D)._from_local(out, dst)


def squeeze_axes(D: Any, axis: Any = None) -> Any:
    what = "squeeze"
    G = tuple(D.shape)
    if axis is None:
        axes = tuple(e for e, s in enumerate(G) if s == 1)
    else:
        given = axes_of(len(G), axis, None, what)
        assert given is not None  # axis is not None
        axes = given
        if any(G[a] != 1 for a in axes):
            raise ValueError(f"{what}: cannot select an axis to squeeze out which has size not "
                             "equal to one")
    if not axes:
        return type(D)._from_local(np.array(D._local, copy=True), D._codist)
    R = squeeze_shape(G, axes)
    if not R:  # as numpy, a 0-d array: replicated, as codistributed arrays are never 0-d
        out = np.empty((), dtype=D.dtype)
        out[()] = D[(0,) * len(G)]
        return out
    c = D._codist
    if is1d(c) and c.Dimension - 1 not in axes:
        return wrap_local(D, np.array(D._local, copy=True), axes, False)
    return reshape_to(D, R, what=what)


def cumulative(D: Any, how: str, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    what = "cumsum" if how == "sum" else "cumprod"
    fn = np.cumsum if how == "sum" else np.cumprod
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays "
                                  f"({layout_text(D._codist)})")
    if axis is None:
        D = reshape_to(D, (-1,), what=what) if D.ndim != 1 else D
        axis = 0
    G = tuple(D.shape)
    given = axes_of(len(G), axis, None, what)
    assert given is not None  # axis is not None
    axis = given[0]
    if math.prod(G) == 0:
        return replicated_result(D, fn(np.empty(G, D.dtype), axis=axis, dtype=dtype))
    check_numeric(D, what)
    lab, n = labs_of(D, what)
    c = D._codist
    if not is1d(c):  # 2dbc: make the scanned dimension local
        D = redistribute(D, codistributor1d(2 - axis))
        c = D._codist
    r = fn(D._local, axis=axis, dtype=dtype)
    if c.Dimension - 1 != axis:
        return type(D)._from_local(r, c)
    F = tuple(1 if e == axis else s for e, s in enumerate(r.shape))
    last = np.take(r, [-1], axis=axis) if r.shape[axis] else np.full(F, 0 if how == "sum" else 1, r.dtype)
    totals = allgather(last, what)
    if lab > 1:
        offset = COMBINE_UFUNC[how].reduce(totals[:lab - 1], axis=0, dtype=r.dtype)
        if how == "sum":
            r += offset
        else:
            r *= offset
    return type(D)._from_local(r, c)


def nonzero_of(D: Any) -> Any:
    what = "nonzero"
    G = tuple(D.shape)
    lab, n = labs_of(D, what)
    src = D if concatenates(D._codist, G) else redistribute(D, flat_layout(G, n))
    ix = local_sel(src._codist, lab, n)
    nz = np.nonzero(src._local)
    counts = allgather(np.array(nz[0].size if nz else 0, dtype=np.int64), what)
    total = int(counts.sum())
    codist = codistributor1d(1, [int(x) for x in counts], (total,))
    return tuple(type(D)._from_local(sel_global(ix[e], nz[e]).astype(np.intp), codist) for e in range(len(G)))


@implements(np.reshape)
def _np_reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    return reshape_to(a, shape, order)



@implements(np.transpose)
def _np_transpose(a: CodistArray, axes: Any = None) -> CodistArray:
    return transpose_axes(a, axes if axes is None else (axes,))


@implements(np.ravel)
def _np_ravel(a: CodistArray, order: str = "C") -> CodistArray:
    return reshape_to(a, (-1,), order, "ravel")


@implements(np.squeeze)
def _np_squeeze(a: CodistArray, axis: Any = None) -> Any:
    return squeeze_axes(a, axis)


@implements(np.cumsum)
def _np_cumsum(a: CodistArray, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    return cumulative(a, "sum", axis, dtype, out)


@implements(np.cumprod)
def _np_cumprod(a: CodistArray, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    return cumulative(a, "prod", axis, dtype, out)


@implements(np.nonzero)
def _np_nonzero(a: CodistArray) -> tuple:
    return nonzero_of(a)

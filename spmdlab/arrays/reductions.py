"""Reductions of codistributed arrays: sum prod min max any all, mean var std, argmax argmin.

Whole reductions give a numpy scalar that is bitwise the same on every lab (partials
combined in lab order); along axes, a codistributed array (local when the reduced axes
are not distributed, else one allreduce of the partials).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..checks import dim_to_axis
from ..layouts.codistributor import codistributor1d
from ..layouts.regions import product_index, sel_len, take
from . import threads
from .base import NOVALUE, CodistArray, here, layout_text
from .collectives import allgather, allreduce, contig
from .layout import is1d, labs_of, local_sel, replicated_result, sel_global

__all__ = ["COMBINE_UFUNC", "axes_of", "check_numeric", "no_extras", "combine_plain", "combine",
           "squeeze_shape", "wrap_local", "reduce_along", "mean_of", "var_of", "arg_reduce"]


_MPI_CODES = frozenset("bhilqBHILQfdgFDG")  # dtypes MPI reduces natively (not float16, bool)


_BIG = np.iinfo(np.int64).max


_LOCAL_FN = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "any": np.any, "all": np.all}


COMBINE_UFUNC = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
                  "any": np.logical_or, "all": np.logical_and}


def _identity(how: str, dtype: np.dtype):
    if how in ("sum", "any"):
        return dtype.type(0) if how == "sum" else False
    if how in ("prod", "all"):
        return dtype.type(1) if how == "prod" else True
    kind = dtype.kind
    big = how == "min"
    if kind == "f":
        return np.inf if big else -np.inf
    if kind == "c":
        return complex(np.inf, np.inf) if big else complex(-np.inf, -np.inf)
    if kind in "iu":
        info = np.iinfo(dtype)
        return info.max if big else info.min
    if kind == "b":
        return big
    raise NotImplementedError(f"{how} of a codistributed array of dtype {dtype}")



def axes_of(ndim: int, axis: Any, dim: Any, what: str) -> tuple | None:
    """Sorted 0-based axes from ``axis=`` (numpy; an int or a tuple) or ``dim=`` (1-based,
    MATLAB; an int or a tuple); None (all axes) when neither is given."""
    if dim is not None and axis is not None:
        dim_to_axis(dim, axis, ndim, what=what)  # raises: not both
    if dim is not None:
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        out = [dim_to_axis(d, None, ndim, what=what) for d in dims]
    elif axis is None:
        return None
    else:
        ax = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        out = [dim_to_axis(None, a, ndim, what=what) for a in ax]
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: duplicate value in 'axis'")
    return tuple(sorted(out))


def check_numeric(D: Any, what: str) -> None:
    if D.dtype.kind not in "biufc":
        raise NotImplementedError(f"{what} of a codistributed array of dtype {D.dtype} is not "
                                  f"supported ({layout_text(D._codist)})")


def no_extras(what: str, initial: Any = NOVALUE, where: Any = True, layout: Any = None, **others: Any) -> None:
    if others:
        raise TypeError(f"{what}() got an unexpected keyword argument {next(iter(others))!r}")
    on = f" ({layout_text(layout)})" if layout is not None else ""
    if initial is not NOVALUE:
        raise NotImplementedError(f"{what}: initial= is not supported for codistributed arrays{on}")
    if where is not True:
        raise NotImplementedError(f"{what}: where= is not supported for codistributed arrays{on}")


def combine_plain(p: np.ndarray, how: str, what: str) -> np.ndarray:
    """Elementwise combination over the labs of same-shaped partials (replicated result)."""
    dt = p.dtype
    if dt.kind == "b":
        u = contig(p).view(np.uint8)
        op = "max" if how in ("any", "max", "sum") else "min"
        return allreduce(u, op, what).view(np.bool_)
    if dt.char in _MPI_CODES and not (dt.kind == "c" and how in ("min", "max")):
        return allreduce(p, how, what)
    stack = allgather(p, what)
    return COMBINE_UFUNC[how].reduce(stack, axis=0, dtype=dt)


def combine(p: np.ndarray, how: str, what: str) -> np.ndarray:
    _, n = here()
    if n == 1:
        return p
    if how in ("min", "max") and p.dtype.kind in "fc":
        nan = np.isnan(p)
        anynan = combine_plain(nan, "any", what)
        r = combine_plain(np.where(nan, p.dtype.type(_identity(how, p.dtype)), p), how, what)
        return np.where(anynan, p.dtype.type(np.nan), r)
    return combine_plain(p, how, what)


def _embed(part: np.ndarray, F: tuple, c, lab: int, n: int, axes: tuple, fill) -> np.ndarray:
    """A lab's keepdims partial placed into the full keepdims shape ``F`` (``fill`` elsewhere)."""
    ix = local_sel(c, lab, n)
    if all(e in axes or sel_len(ix[e]) == F[e] for e in range(len(F))):
        return contig(part)
    full = np.full(F, fill, dtype=part.dtype)
    sel = [slice(None) if e in axes else ix[e] for e in range(len(F))]
    full[product_index(sel)] = part
    return full


def squeeze_shape(G: tuple, axes: tuple) -> tuple:
    return tuple(s for e, s in enumerate(G) if e not in axes)


def wrap_local(D: CodistArray, r: np.ndarray, axes: tuple, keepdims: bool) -> CodistArray:
    """A local keepdims result of a reduction along non-distributed axes of ``D``'s 1-D layout."""
    c, G = D._codist, tuple(D.shape)
    k = c.Dimension - 1
    if keepdims:
        F = tuple(1 if e in axes else s for e, s in enumerate(G))
        return type(D)._from_local(r, codistributor1d(k + 1, c.Partition, F))
    R = squeeze_shape(G, axes)
    newk = k - sum(1 for a in axes if a < k)
    return type(D)._from_local(np.squeeze(r, axis=axes), codistributor1d(newk + 1, c.Partition, R))


def _whole(D, how: str, kw: dict, what: str):
    """Whole-array reduction: a numpy scalar, bitwise the same on every lab."""
    lab, n = labs_of(D, what)
    L = D._local
    fn = _LOCAL_FN[how]
    if L.size:
        part = np.asarray(threads.reduce(fn, L, None, kw, COMBINE_UFUNC[how]))  # threads when large
    else:
        part = np.zeros((), dtype=np.asarray(fn(np.zeros(1, L.dtype), **kw)).dtype)
    vals = allgather(part, what)
    valid = [math.prod(D._codist.localShape(k, n)) > 0 for k in range(1, n + 1)]
    return COMBINE_UFUNC[how].reduce(vals[np.array(valid)], dtype=vals.dtype)


def reduce_along(D: Any, how: str, axis: Any = None, dim: Any = None, kw: dict | None = None, keepdims: Any = False,
            what: str | None = None) -> Any:
    what = what or how
    kw = kw or {}
    G = tuple(D.shape)
    ndim = len(G)
    axes = axes_of(ndim, axis, dim, what)
    if math.prod(G) == 0:  # every lab sees the same empty array: numpy decides
        return replicated_result(D, _LOCAL_FN[how](np.empty(G, D.dtype), axis=axes,
                                                 keepdims=bool(keepdims), **kw))
    check_numeric(D, what)
    if axes is None or len(axes) == ndim:
        r = _whole(D, how, kw, what)
        return replicated_result(D, np.reshape(r, (1,) * ndim)) if keepdims else r
    lab, n = labs_of(D, what)
    c = D._codist
    L = D._local
    fn = _LOCAL_FN[how]
    if is1d(c) and c.Dimension - 1 not in axes:
        return wrap_local(D, threads.reduce(fn, L, axes, kw, COMBINE_UFUNC[how]), axes, bool(keepdims))
    F = tuple(1 if e in axes else s for e, s in enumerate(G))
    if any(L.shape[e] == 0 for e in axes):
        rdt = np.asarray(fn(np.zeros((1,) * ndim, L.dtype), **kw)).dtype
        local_F = tuple(1 if e in axes else s for e, s in enumerate(L.shape))
        part = np.full(local_F, _identity(how, rdt), dtype=rdt)
    else:
        part = threads.reduce(fn, L, axes, kw, COMBINE_UFUNC[how])
    full = combine(_embed(part, F, c, lab, n, axes, _identity(how, part.dtype)), how, what)
    return replicated_result(D, full if keepdims else full.reshape(squeeze_shape(G, axes)))


def _divide(r, count, what: str):
    """numpy's ``ret / rcount`` step of mean/var (keeping the sum's dtype)."""
    if isinstance(r, CodistArray):
        np.true_divide(r._local, count, out=r._local, casting="unsafe")
        return r
    return r.dtype.type(r / count)


def mean_of(D: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: Any = False, *, dim: Any = None,
            where: Any = True) -> Any:
    what = "mean"
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays "
                                  f"({layout_text(D._codist)})")
    no_extras(what, where=where, layout=D._codist)
    G = tuple(D.shape)
    axes = axes_of(len(G), axis, dim, what)
    if math.prod(G) == 0:
        return replicated_result(D, np.mean(np.empty(G, D.dtype), axis=axes, dtype=dtype,
                                          keepdims=bool(keepdims)))
    check_numeric(D, what)
    acc, f16 = dtype, False
    if dtype is None:
        if D.dtype.kind in "biu":
            acc = np.dtype(np.float64)
        elif D.dtype == np.float16:
            acc, f16 = np.dtype(np.float32), True
    count = math.prod(G) if axes is None else math.prod(G[a] for a in axes)
    s = reduce_along(D, "sum", axes, None, {"dtype": acc} if acc is not None else {}, keepdims, what)
    r = _divide(s, count, what)
    if f16:
        return r.astype(np.float16) if isinstance(r, CodistArray) else np.float16(r)
    return r


def var_of(D: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = False, *,
           dim: Any = None, where: Any = True,
         mean: Any = NOVALUE, correction: Any = NOVALUE, what: Any = "var", root: Any = False) -> Any:
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays "
                                  f"({layout_text(D._codist)})")
    no_extras(what, where=where, layout=D._codist)
    if mean is not NOVALUE:
        raise NotImplementedError(f"{what}: mean= is not supported for codistributed arrays "
                                  f"({layout_text(D._codist)})")
    if correction is not NOVALUE:
        if ddof != 0:
            raise ValueError(f"{what}: ddof and correction can't be provided simultaneously.")
        ddof = correction
    G = tuple(D.shape)
    ndim = len(G)
    axes = axes_of(ndim, axis, dim, what)
    if math.prod(G) == 0:
        f = np.std if root else np.var
        return replicated_result(D, f(np.empty(G, D.dtype), axis=axes, dtype=dtype, ddof=ddof,
                                    keepdims=bool(keepdims)))
    check_numeric(D, what)
    lab, n = labs_of(D, what)
    acc = dtype
    if dtype is None and D.dtype.kind in "biu":
        acc = np.dtype(np.float64)
    kw = {"dtype": acc} if acc is not None else {}
    full_axes = axes is None or len(axes) == ndim
    count = math.prod(G) if full_axes else math.prod(G[a] for a in axes)
    c, L = D._codist, D._local
    # the mean, shaped to broadcast against this lab's local part
    if full_axes:
        m = _divide(_whole(D, "sum", kw, what), count, what)
    elif is1d(c) and c.Dimension - 1 not in axes:
        m = np.sum(L, axis=axes, keepdims=True, **kw)
        m = np.true_divide(m, count, out=m, casting="unsafe")
    else:
        F = tuple(1 if e in axes else s for e, s in enumerate(G))
        if any(L.shape[e] == 0 for e in axes):
            rdt = np.sum(np.zeros(1, L.dtype), **kw).dtype
            part = np.zeros(tuple(1 if e in axes else s for e, s in enumerate(L.shape)), dtype=rdt)
        else:
            part = np.sum(L, axis=axes, keepdims=True, **kw)
        full = combine(_embed(part, F, c, lab, n, axes, 0), "sum", what)
        full = np.true_divide(full, count, out=full, casting="unsafe")
        sel = local_sel(c, lab, n)
        m = take(full, [slice(None) if e in axes else s for e, s in enumerate(sel)])
    x = np.asarray(L - m)
    if D.dtype.kind in "iuf":
        x = np.multiply(x, x, out=x)
    elif D.dtype.kind == "c":
        x = x.real * x.real + x.imag * x.imag
    else:
        x = np.multiply(x, np.conjugate(x), out=x).real
    r = reduce_along(type(D)._from_local(x, c), "sum", axes, None, kw, keepdims, what)
    r = _divide(r, max(count - ddof, 0), what)
    if root:
        if isinstance(r, CodistArray):
            np.sqrt(r._local, out=r._local)
            return r
        return r.dtype.type(np.sqrt(r))
    return r


def arg_reduce(D: Any, how: str, axis: Any = None, out: Any = None, *, keepdims: Any = False, dim: Any = None) -> Any:
    what = f"arg{how}"
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays "
                                  f"({layout_text(D._codist)})")
    G = tuple(D.shape)
    ndim = len(G)
    if dim is not None or axis is not None:
        if isinstance(axis, (tuple, list)) or isinstance(dim, (tuple, list)):
            raise TypeError(f"{what}: axis must be an integer")
        axis = axes_of(ndim, axis, dim, what)[0]
    if math.prod(G) == 0:
        f = np.argmax if how == "max" else np.argmin
        return replicated_result(D, f(np.empty(G, D.dtype), axis=axis, keepdims=bool(keepdims)))
    check_numeric(D, what)
    lab, n = labs_of(D, what)
    c, L = D._codist, D._local
    ix = local_sel(c, lab, n)
    larg = np.argmax if how == "max" else np.argmin
    fc = D.dtype.kind in "fc"
    if axis is None or ndim == 1:
        if L.size:
            i = int(larg(L))
            v = L.reshape(-1)[i]
            where = np.unravel_index(i, L.shape)
            gi = int(np.ravel_multi_index(tuple(int(sel_global(ix[e], j)) for e, j in enumerate(where)), G))
        else:
            v, gi = np.zeros((), L.dtype), -1
        rec = np.zeros((), dtype=[("v", L.dtype), ("i", np.int64)])
        rec["v"], rec["i"] = v, gi
        allr = allgather(rec, what)
        valid = np.array([math.prod(c.localShape(k, n)) > 0 for k in range(1, n + 1)])
        vals, idx = allr["v"][valid], allr["i"][valid]
        if fc and np.isnan(vals).any():
            cand = np.isnan(vals)
        else:
            cand = vals == (vals.max() if how == "max" else vals.min())
        r = np.intp(idx[cand].min())
        return replicated_result(D, np.reshape(r, (1,) * ndim)) if keepdims else r
    if is1d(c) and c.Dimension - 1 != axis:
        return wrap_local(D, larg(L, axis=axis, keepdims=True), (axis,), bool(keepdims))
    axes = (axis,)
    F = tuple(1 if e == axis else s for e, s in enumerate(G))
    ident = _identity(how, D.dtype)
    if L.shape[axis] == 0:
        local_F = tuple(1 if e == axis else s for e, s in enumerate(L.shape))
        v = np.full(local_F, ident, dtype=L.dtype)
        gi = np.full(local_F, _BIG, dtype=np.int64)
        valid = np.zeros(local_F, dtype=bool)
    else:
        li = larg(L, axis=axis, keepdims=True)
        v = np.take_along_axis(L, li, axis=axis)
        gi = sel_global(ix[axis], li).astype(np.int64)
        valid = np.ones(v.shape, dtype=bool)
    v = _embed(v, F, c, lab, n, axes, ident)
    gi = _embed(gi, F, c, lab, n, axes, _BIG)
    valid = _embed(valid, F, c, lab, n, axes, False)
    if fc:
        isn = np.isnan(v) & valid
        anynan = combine_plain(isn, "any", what)
        vv = np.where(valid & ~isn, v, D.dtype.type(ident))
    else:
        vv = np.where(valid, v, D.dtype.type(ident))
    M = combine_plain(vv, how, what) if n > 1 else vv
    cand = valid & (v == M)
    if fc:
        cand = np.where(anynan, isn, cand)
    best = np.where(cand, gi, _BIG)
    best = combine_plain(best, "min", what) if n > 1 else best
    best = best.astype(np.intp)
    return replicated_result(D, best if keepdims else best.reshape(squeeze_shape(G, axes)))


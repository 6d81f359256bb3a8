"""``np.diff``, ``ptp``, ``average``, ``cov`` and ``corrcoef`` of codistributed arrays.

``diff`` along a non-distributed axis is local (an array distributed along that axis is
moved first); a 1-D ``diff`` needs from each lab only the first element of the next lab
holding any (one small allgather per order), a halo exchange of width one.
``cov``/``corrcoef`` move the observations to be distributed (each lab holding every
variable for some observations), then the means and the cross products ``Xc @ Xc.T`` are
each one allreduce of small arrays: the classic distributed covariance (a parallel
``syrk`` followed by a reduction). Results are numpy's up to summation order.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from ...layouts.codistributor import codistributor1d
from ..base import NOVALUE, CodistArray, here, layout_text
from ..collectives import allgather, allreduce
from ..layout import labs_of, replicated_result
from ..reductions import axes_of
from ..registry import implements
from ..sorting.sort import off_axes
from ..transfer import redistribute
from .histogram import aligned

__all__ = ["diff_of", "ptp_of", "average_of", "cov_full"]


def _edge(v: Any, E: CodistArray, axis: int, dtype: np.dtype) -> np.ndarray | None:
    """This lab's part of numpy's ``prepend``/``append`` value for ``E`` along ``axis``."""
    if v is NOVALUE:
        return None
    v = np.asanyarray(v)
    lab, n = labs_of(E, "diff")
    c: Any = E._codist
    k = c.Dimension - 1
    if v.ndim == 0:
        shape = list(E._local.shape)
        shape[axis] = 1
        return np.broadcast_to(v, tuple(shape))
    sel: list = [slice(None)] * v.ndim
    sel[k] = c.localSelection(lab, n)[k] if k != axis else slice(None)
    return v[tuple(sel)]


def _diff_1d(x: np.ndarray, n: int, what: str) -> np.ndarray:
    lab, labs = here()
    op = np.not_equal if x.dtype == np.bool_ else np.subtract
    for _ in range(n):
        sizes = allgather(np.array(x.size, dtype=np.int64), what)
        firsts = allgather(x[:1] if x.size else np.zeros(1, x.dtype), what)[:, 0]
        later = [j for j in range(lab, labs) if sizes[j] > 0]
        if x.size and later:
            x = op(np.append(x, firsts[later[0]])[1:], x)
        elif x.size:
            x = op(x[1:], x[:-1])
    return x


def diff_of(a: CodistArray, n: int = 1, axis: int = -1, prepend: Any = NOVALUE, append: Any = NOVALUE) -> Any:
    what = "diff"
    np.diff(np.zeros((2,) * a.ndim, a.dtype), n=min(n, 1) if isinstance(n, int) else n, axis=axis)
    if n == 0:
        return a
    given = axes_of(a.ndim, axis, None, what)
    assert given is not None
    ax = given[0]
    lab, labs = labs_of(a, what)
    if a.ndim > 1:
        E = off_axes(a, (ax,))
        dt = np.concatenate([np.zeros(0, a.dtype)] + [np.zeros(0, np.asanyarray(v).dtype)
                                                       for v in (prepend, append) if v is not NOVALUE]).dtype
        pre: Any = _edge(prepend, E, ax, dt) if prepend is not NOVALUE else NOVALUE
        app: Any = _edge(append, E, ax, dt) if append is not NOVALUE else NOVALUE
        r = np.diff(E._local, n, axis=ax, prepend=pre, append=app)
        ce: Any = E._codist
        k = ce.Dimension - 1
        R = tuple(r.shape[e] if e != k else E.shape[k] for e in range(r.ndim))
        return type(E)._from_local(r, codistributor1d(k + 1, ce.Partition, R))
    x = a._local
    pieces = [x]
    if prepend is not NOVALUE and lab == 1:
        pieces.insert(0, np.atleast_1d(np.asanyarray(prepend)))
    if append is not NOVALUE and lab == labs:
        pieces.append(np.atleast_1d(np.asanyarray(append)))
    dt = np.concatenate([np.zeros(0, a.dtype)] + [np.zeros(0, np.asanyarray(v).dtype)
                                                   for v in (prepend, append) if v is not NOVALUE]).dtype
    x = np.concatenate(pieces).astype(dt, copy=False)
    r = _diff_1d(x, n, what)
    sizes = allgather(np.array(r.size, dtype=np.int64), what)
    return type(a)._from_local(r, codistributor1d(1, [int(s) for s in sizes], (int(sizes.sum()),)))


def ptp_of(a: Any, axis: Any = None, out: Any = None, keepdims: Any = NOVALUE) -> Any:
    np.ptp(np.zeros((1,) * a.ndim, a.dtype), axis=axis, keepdims=keepdims)
    if out is not None:
        raise NotImplementedError(f"ptp: out= is not supported for codistributed arrays ({layout_text(a._codist)})")
    kd = keepdims is True
    return np.subtract(np.max(a, axis=axis, keepdims=kd), np.min(a, axis=axis, keepdims=kd))


def average_of(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
               keepdims: Any = NOVALUE) -> Any:
    kd: Any = {"keepdims": True} if keepdims is True else {}
    if weights is None:
        avg = np.mean(a, axis=axis, **kd)
        size = int(np.prod(np.shape(avg)))
        scl = np.asarray(avg).dtype.type(a.size / size) if not isinstance(avg, CodistArray) else \
            avg.dtype.type(a.size / avg.size)
    else:
        wdt = weights.dtype if isinstance(weights, CodistArray) else np.asarray(weights).dtype
        wshape = weights.shape if isinstance(weights, CodistArray) else np.shape(weights)
        if wshape != a.shape:
            probe: Any = np.average
            probe(np.zeros((1,) * a.ndim, a.dtype), axis=axis, weights=np.ones(wshape), **kd)
            raise NotImplementedError("average: weights of another shape than the array's are not supported "
                                      f"for codistributed arrays ({layout_text(a._codist)})")
        rdt = np.result_type(a.dtype, wdt, "f8") if a.dtype.kind in "biu" else np.result_type(a.dtype, wdt)
        w: Any = type(a)._from_local(aligned(weights, a, "average"), a._codist)
        scl = np.sum(w, axis=axis, dtype=rdt, **kd)
        if np.any(scl == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        prod: Any = type(a)._from_local(np.multiply(a._local, w._local, dtype=rdt), a._codist)
        avg = np.sum(prod, axis=axis, **kd) / scl
    if not returned:
        return avg
    if isinstance(avg, CodistArray) and not isinstance(scl, CodistArray):
        scl = avg._map_local(lambda v: np.full_like(v, scl))
    return avg, scl


@functools.cache
def _one_row_is_variables() -> bool:
    """Whether the installed numpy's ``cov(m, rowvar=False)`` of a single row reads it as one
    variable (older numpy did; numpy 2.4 reads its columns as variables, as for any ``m``)."""
    return bool(np.ndim(_quiet(np.cov, np.zeros((1, 2)), rowvar=False)) == 0)


def cov_full(m: Any, rowvar: bool, bias: bool, ddof: Any, dtype: Any, what: str) -> np.ndarray:
    """numpy's covariance matrix of ``m`` (before its final squeeze), on every lab."""
    np.cov(np.zeros((2,) * m.ndim, m.dtype), rowvar=rowvar, bias=bias, ddof=ddof)  # numpy's errors
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64)
    labs_of(m, what)
    obs = 0 if m.ndim == 1 else (1 if (rowvar or (m.shape[0] == 1 and _one_row_is_variables())) else 0)
    nvars = 1 if m.ndim == 1 else m.shape[1 - obs]
    N = m.shape[obs]
    if nvars == 0:
        return np.array([]).reshape(0, 0)
    c: Any = m._codist
    E = m if m.ndim == 1 or getattr(c, "Dimension", None) == obs + 1 else redistribute(m, codistributor1d(obs + 1))
    X = E._local[None, :] if m.ndim == 1 else (E._local if obs == 1 else E._local.T)
    X = np.asarray(X, dtype=dtype)
    if ddof is None:
        ddof = 0 if bias else 1
    fact = N - ddof
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    avg = allreduce(X.sum(axis=1), "sum", what) / N
    Xc = X - avg[:, None]
    c = allreduce(np.ascontiguousarray(Xc @ Xc.T.conj()), "sum", what)
    with np.errstate(divide="ignore", invalid="ignore"):
        c *= np.true_divide(1, fact)
    return c


def _quiet(fn: Any, *args: Any, **kw: Any) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _wrap(m: CodistArray, c: np.ndarray) -> Any:
    return replicated_result(m, c) if c.ndim else c


@implements(np.diff)
def _np_diff(a: CodistArray, n: int = 1, axis: int = -1, prepend: Any = NOVALUE, append: Any = NOVALUE) -> Any:
    return diff_of(a, n, axis, prepend, append)


@implements(np.ptp)
def _np_ptp(a: CodistArray, axis: Any = None, out: Any = None, keepdims: Any = NOVALUE) -> Any:
    return ptp_of(a, axis, out, keepdims)


@implements(np.average)
def _np_average(a: CodistArray, axis: Any = None, weights: Any = None, returned: bool = False, *,
                keepdims: Any = NOVALUE) -> Any:
    return average_of(a, axis, weights, returned, keepdims)


def _no_extras(what: str, m: CodistArray, y: Any, **others: Any) -> None:
    given = [k for k, v in others.items() if v is not None]
    if y is not None or given:
        name = "y" if y is not None else given[0]
        raise NotImplementedError(f"{what}: {name}= is not supported for codistributed arrays "
                                  f"({layout_text(m._codist)})")


@implements(np.cov)
def _np_cov(m: CodistArray, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
            fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    _no_extras("cov", m, y, fweights=fweights, aweights=aweights)
    if m.size == 0:
        return _wrap(m, np.asarray(_quiet(np.cov, np.empty(m.shape, m.dtype), rowvar=rowvar, bias=bias, ddof=ddof,
                                          dtype=dtype)))
    return _wrap(m, cov_full(m, rowvar, bias, ddof, dtype, "cov").squeeze())


@implements(np.corrcoef)
def _np_corrcoef(x: CodistArray, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    _no_extras("corrcoef", x, y)
    if x.size == 0:  # numpy's answer, a scalar where numpy gives one (corrcoef of an empty vector: nan)
        r = _quiet(np.corrcoef, np.empty(x.shape, x.dtype), rowvar=rowvar, dtype=dtype)
        return r if np.ndim(r) == 0 else _wrap(x, np.asarray(r))
    c = cov_full(x, rowvar, False, None, dtype, "corrcoef").squeeze()
    with np.errstate(divide="ignore", invalid="ignore"):
        if c.ndim == 0:
            return c / c
        d = np.diag(c)
        stddev = np.sqrt(d.real)
        c /= stddev[:, None]
        c /= stddev[None, :]
    np.clip(c.real, -1, 1, out=c.real)
    if np.iscomplexobj(c):
        np.clip(c.imag, -1, 1, out=c.imag)
    return _wrap(x, c)

"""``median``, ``percentile``, ``quantile`` and their NaN-ignoring forms.

Along axes that do not include the distributed one, each lab runs numpy's function on its
own part (an array distributed along a reduced axis is first moved to be distributed along
another one). Over the whole array (``axis=None``, or every axis) the order statistics
the method needs come from the distributed selection (``selection.select_ranks``), not a
sort; numpy's own interpolation (its ``_QuantileMethods`` table, ``_get_indexes``,
``_get_gamma``, ``_lerp``) then finishes, so every method, the result dtype and NaN
placement are numpy's exactly. ``weights=``, ``out=`` are not supported (NotImplementedError).
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...layouts.codistributor import codistributor1d
from ..base import CodistArray, layout_text
from ..collectives import allreduce
from ..layout import labs_of, replicated_result
from ..reductions import axes_of
from ..registry import implements
from ..sorting.sort import off_axes
from .selection import finish_quantile, select_ranks

__all__ = ["statistic"]

_FUNCTIONS = {"median": np.median, "nanmedian": np.nanmedian, "percentile": np.percentile,
              "nanpercentile": np.nanpercentile, "quantile": np.quantile, "nanquantile": np.nanquantile}


def _quiet(fn: Any, *args: Any, **kw: Any) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _whole(D: CodistArray, name: str, q: Any, method: str, what: str) -> Any:
    """The statistic of all of ``D``'s elements."""
    x = D._local.reshape(-1)
    nan_aware = name.startswith("nan")
    floats = D.dtype.kind == "f"
    isnan = np.isnan(x) if floats else None
    counts = allreduce(np.array([x.size, 0 if isnan is None else np.count_nonzero(isnan)], dtype=np.int64), "sum",
                       what)
    has_nan = bool(counts[1])
    if nan_aware and has_nan:
        x = x[~np.isnan(x)]
    n = int(counts[0] - counts[1]) if nan_aware else int(counts[0])
    placeholder = (not nan_aware and has_nan) or n == 0

    def values_of(ranks: np.ndarray) -> np.ndarray:
        if placeholder:
            return np.zeros(ranks.shape, D.dtype)
        return select_ranks(x, ranks, what)

    if name.endswith("median"):
        if placeholder:
            return D.dtype.type(np.nan)
        mid = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
        return np.mean(values_of(np.array(mid)))
    weak_q = type(q) in (int, float)
    qa = np.true_divide(q, 100, out=...) if name.endswith("percentile") else np.asanyarray(q)
    if nan_aware and n == 0:
        return np.full(qa.shape, np.nan, dtype=D.dtype)[()]
    r = finish_quantile(values_of, max(n, 1), qa, method, D.dtype, weak_q)
    if placeholder:
        if np.ndim(r) == 0:
            return D.dtype.type(np.nan)
        r[...] = np.nan
    return r


def statistic(D: CodistArray, name: str, q: Any = None, axis: Any = None, out: Any = None,
              overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
              weights: Any = None) -> Any:
    """numpy's ``name`` (one of ``_FUNCTIONS``) of the codistributed ``D``."""
    fn = _FUNCTIONS[name]
    what = name
    qargs = () if name.endswith("median") else (q,)
    kw: dict = {"axis": axis, "keepdims": keepdims}
    if not name.endswith("median"):
        kw["method"] = method
    _quiet(fn, np.zeros((1,) * D.ndim, D.dtype), *qargs, **kw)  # numpy's errors
    if out is not None or weights is not None:
        raise NotImplementedError(f"{what}: {'out' if out is not None else 'weights'}= is not supported for "
                                  f"codistributed arrays ({layout_text(D._codist)})")
    if D.size == 0:
        return replicated_result(D, _quiet(fn, np.empty(D.shape, D.dtype), *qargs, **kw))
    labs_of(D, what)
    axes = axes_of(D.ndim, axis, None, what)
    if axes is not None and len(axes) < D.ndim:
        E = off_axes(D, axes)
        r = _quiet(fn, E._local, *qargs, **kw)
        c: Any = E._codist
        k = c.Dimension - 1
        qshape = np.shape(q) if qargs else ()
        G = E.shape
        kept = tuple(1 if e in axes else s for e, s in enumerate(G)) if keepdims else \
            tuple(s for e, s in enumerate(G) if e not in axes)
        newk = len(qshape) + (k if keepdims else k - sum(1 for a in axes if a < k))
        return type(E)._from_local(r, codistributor1d(newk + 1, c.Partition, qshape + kept))
    r = _whole(D, name, q, method, what)
    if keepdims:
        r = np.reshape(r, np.shape(r) + (1,) * D.ndim)
    return replicated_result(D, r) if np.ndim(r) else r


@implements(np.median)
def _np_median(a: CodistArray, axis: Any = None, out: Any = None, overwrite_input: bool = False,
               keepdims: bool = False) -> Any:
    return statistic(a, "median", None, axis, out, overwrite_input, keepdims=keepdims)


@implements(np.nanmedian)
def _np_nanmedian(a: CodistArray, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                  keepdims: Any = np._NoValue) -> Any:
    return statistic(a, "nanmedian", None, axis, out, overwrite_input, keepdims=bool(keepdims is True))


def _quantile_like(name: str) -> Any:
    def handler(a: CodistArray, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: Any = False, *, weights: Any = None,
                interpolation: Any = None) -> Any:
        if interpolation is not None:
            raise NotImplementedError(f"{name}: interpolation= is deprecated; use method=")
        return statistic(a, name, q, axis, out, overwrite_input, method, bool(keepdims is True), weights)

    handler.__name__ = f"_np_{name}"
    return handler


for _name in ("percentile", "nanpercentile", "quantile", "nanquantile"):
    implements(_FUNCTIONS[_name])(_quantile_like(_name))  # type: ignore[arg-type]

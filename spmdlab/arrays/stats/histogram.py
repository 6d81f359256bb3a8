"""``np.histogram`` and ``np.bincount`` of codistributed arrays: each lab counts its own
part against bin edges every lab agrees on, and ONE allreduce adds the counts (the
classic parallel histogram). Edges come from numpy's ``histogram_bin_edges`` on the
global minimum and maximum, so they are numpy's to the bit; the widths of the string
rules ('sqrt', 'sturges', 'rice', 'scott', 'fd', 'auto') need only the size, range,
standard deviation or interquartile range, computed distributed. Results are small and
replicated. Weighted counts are summed in another order than numpy's (rounding aside).
"""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from ..base import CodistArray, layout_text
from ..collectives import allgather, allreduce
from ..layout import labs_of, local_sel, replicated_result
from ..registry import implements
from ..transfer import redistribute
from .selection import finish_quantile, select_ranks

__all__ = ["histogram_of", "bincount_of", "aligned"]

_hist: Any = importlib.import_module("numpy.lib._histograms_impl")  # numpy's edge helpers
_RULES = ("sqrt", "sturges", "rice", "scott", "fd", "auto")


def aligned(w: Any, D: CodistArray, what: str) -> np.ndarray:
    """This lab's part of ``w`` (codistributed in any layout, or replicated) matching
    ``D``'s local part."""
    if isinstance(w, CodistArray):
        if w.shape != D.shape:
            raise ValueError(f"{what}: weights should have the same shape as a.")
        return (w if w._codist == D._codist else redistribute(w, D._codist))._local
    w = np.asarray(w)
    if w.shape != D.shape:
        raise ValueError(f"{what}: weights should have the same shape as a.")
    lab, n = labs_of(D, what)
    return w[np.ix_(*[np.arange(s.start, s.stop) if isinstance(s, slice) else s
                      for s in local_sel(D._codist, lab, n)])]


def _extent(x: np.ndarray, what: str) -> np.ndarray:
    """``[min, max]`` of all labs' elements (NaN if any is NaN); empty if none."""
    has = np.array(x.size > 0)
    native = x.dtype.newbyteorder("=")  # every lab sends the same bytes ('>f8' parts too)
    lo_hi = np.array([x.min(), x.max()], dtype=native) if x.size else np.zeros(2, native)
    both = allgather(lo_hi, what)[allgather(has, what)]
    return np.array([both[:, 0].min(), both[:, 1].max()], dtype=x.dtype) if both.size else np.zeros(0, x.dtype)


def _width(rule: str, x: np.ndarray, size: int, what: str) -> float:
    """numpy's bin width for a string rule (``_hist_bin_selectors``), from the distributed
    size, range, standard deviation and interquartile range of ``x`` (no NaNs)."""
    ext = _extent(x, what)
    ptp = _hist._unsigned_subtract(ext[1], ext[0])
    if rule == "sqrt":
        return ptp / np.sqrt(size)
    sturges = ptp / (np.log2(size) + 1.0)
    if rule == "sturges":
        return sturges
    if rule == "rice":
        return ptp / (2.0 * size ** (1.0 / 3))
    if rule == "scott":
        mean = allreduce(np.array([x.sum(dtype=np.float64)]), "sum", what)[0] / size
        var = allreduce(np.array([np.sum((x - mean) ** 2, dtype=np.float64)]), "sum", what)[0] / size
        return (24.0 * np.pi**0.5 / size) ** (1.0 / 3.0) * np.sqrt(var)
    q = np.true_divide(np.array([75, 25]), 100)
    iqr = np.subtract(*finish_quantile(lambda ranks: select_ranks(x, ranks, what), size, q, "linear", x.dtype, False))
    fd = 2.0 * iqr * size ** (-1.0 / 3.0)
    if rule == "fd":
        return fd
    return min(fd, sturges) if fd else sturges


def _string_edges(a: CodistArray, x: np.ndarray, ext: np.ndarray, rule: str, range: Any, what: str) -> np.ndarray:
    """numpy's edges for ``bins=rule`` (``_get_bin_edges``), computed distributed."""
    first, last = _hist._get_outer_edges(ext, range)
    if range is not None:
        x = x[(x >= first) & (x <= last)]
    size = int(allreduce(np.array([x.size], dtype=np.int64), "sum", what)[0])
    nbins = 1
    if size:
        width = _width(rule, x, size, what)
        if width:
            if np.issubdtype(a.dtype, np.integer) and width < 1:
                width = 1
            nbins = int(np.ceil(_hist._unsigned_subtract(last, first) / width))
    return np.histogram_bin_edges(ext, bins=nbins, range=range)


def histogram_of(a: CodistArray, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> Any:
    what = "histogram"
    wdtype = None if weights is None else weights.dtype if hasattr(weights, "dtype") else np.asarray(weights).dtype
    probe_w = None if wdtype is None else np.ones((1,) * a.ndim, wdtype)
    probe = np.histogram(np.zeros((1,) * a.ndim, a.dtype), bins=bins, range=range, weights=probe_w)  # numpy's errors
    if isinstance(bins, str) and bins not in _RULES:
        raise NotImplementedError(f"{what}: bins={bins!r} is not supported for codistributed arrays "
                                  f"({layout_text(a._codist)}); use one of {', '.join(_RULES)}")
    labs_of(a, what)
    x = a._local.reshape(-1)
    w = None if weights is None else aligned(weights, a, what).reshape(-1)
    ext = _extent(x, what)
    if isinstance(bins, str):
        edges = _string_edges(a, x, ext, bins, range, what)
    else:
        edges = np.histogram_bin_edges(ext, bins=bins, range=range)
    counts, _ = np.histogram(x, bins=edges, weights=w)
    total = allreduce(np.ascontiguousarray(counts), "sum", what).astype(probe[0].dtype, copy=False)  # numpy's dtype
    if density:
        db = np.array(np.diff(edges), float)
        total = total / db / total.sum()
    return replicated_result(a, total), replicated_result(a, edges)


def bincount_of(x: CodistArray, weights: Any = None, minlength: int = 0) -> Any:
    what = "bincount"
    np.bincount(np.zeros((1,) * x.ndim, x.dtype), None if weights is None else np.ones(1), minlength=minlength)
    labs_of(x, what)
    ext = _extent(x._local, what)
    if ext.size and ext[0] < 0:
        np.bincount(np.array([-1]))  # numpy's error for negative elements
    length = max(int(ext[1]) + 1 if ext.size else 0, int(minlength))
    w = None if weights is None else aligned(weights, x, what)
    counts = np.bincount(x._local, weights=w, minlength=length)
    return replicated_result(x, allreduce(counts, "sum", what))


@implements(np.histogram)
def _np_histogram(a: CodistArray, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> Any:
    return histogram_of(a, bins, range, density, weights)


@implements(np.bincount)
def _np_bincount(x: CodistArray, weights: Any = None, minlength: int = 0) -> Any:
    return bincount_of(x, weights, minlength)

"""Norms, trace and triangular parts of codistributed arrays, on any layout, without
gathering.

- ``np.linalg.norm(x, ord, axis, keepdims)`` with numpy's semantics and MATLAB's ``norm(X,
  p)``: sums are partial sums per lab combined in lab order (so every lab gets bitwise the
  same replicated scalar), maxima and minima of per-lab partials. Matrix 1- and inf-norms
  sum each lab's part of every column (row) into a vector of length n (m), one all-gather,
  then take the extreme: O(n) memory, never the matrix. The matrix 2-norm, -2 and 'nuc'
  need singular values: computed by TSQR for tall-skinny or short-wide matrices
  (``svd.singular_values``), ``NotImplementedError`` otherwise.
- ``np.trace``/``trace``: each lab adds the diagonal entries it holds.
- ``np.triu``/``np.tril``/``triu``/``tril``: each lab zeroes its own entries by their
  global indices; the result has the input's layout.
"""
from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

from ..array import codistributed, getCodistributor, getLocalPart, globalIndices
from ..base import is_codist
from ..collectives import allreduce
from ..layout import labs_of
from ..registry import implements, numpy_names
from .qrbase import build, combine_sum, real_dtype, replicated_to_codist
from .svd import singular_values

__all__ = ["np_norm", "np_vector_norm", "np_matrix_norm", "norm", "np_trace", "trace", "np_triu", "np_tril",
           "triu", "tril"]


def _float_local(D: codistributed) -> np.ndarray:
    L = getLocalPart(D)
    return L if L.dtype.kind in "fc" else L.astype(np.float64)


def _idx(D: codistributed, d: int) -> np.ndarray:
    """Global 0-based indices along dimension ``d`` (1-based) of this lab's part."""
    return np.asarray(globalIndices(D, d), dtype=np.int64)


def _gmax(v: float, what: str) -> float:
    return float(allreduce(np.array([v], dtype=np.float64), "max", what)[0])


def _gmin(v: float, what: str) -> float:
    return float(allreduce(np.array([v], dtype=np.float64), "min", what)[0])


def _abs(L: np.ndarray) -> np.ndarray:
    return np.abs(L)


def _sumsq(L: np.ndarray) -> Any:
    x = L.ravel()
    if x.dtype.kind == "c":
        return np.dot(x.real, x.real) + np.dot(x.imag, x.imag)
    return np.dot(x, x)


def _vector_norm(D: codistributed, ord: Any, what: str, rt: np.dtype) -> Any:
    L = _float_local(D)
    if ord is None or ord == 2:
        return rt.type(np.sqrt(combine_sum(np.asarray(_sumsq(L), dtype=rt), what)))
    if ord == np.inf:  # |x| >= 0: the empty maximum is 0, as numpy's
        return rt.type(_gmax(float(_abs(L).max()) if L.size else 0.0, what))
    if ord == -np.inf:
        if D.size == 0:
            raise ValueError(_EMPTY_MIN)
        return rt.type(_gmin(float(_abs(L).min()) if L.size else np.inf, what))
    if ord == 0:
        return rt.type(combine_sum(np.asarray(np.count_nonzero(L), dtype=np.float64), what))
    if ord == 1:
        return rt.type(combine_sum(np.asarray(np.sum(_abs(L)), dtype=rt), what))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    p = float(ord)
    s = combine_sum(np.asarray(np.sum(_abs(L) ** p), dtype=rt), what)
    return rt.type(s ** (1.0 / p))


def _line_sums(D: codistributed, axis: int, what: str) -> np.ndarray:
    """Sums of |D| over ``axis`` (0: column sums, length n; 1: row sums, length m)."""
    L = _abs(_float_local(D))
    keep = 2 if axis == 0 else 1
    full = np.zeros(D.shape[keep - 1], dtype=np.float64)
    if L.size:
        full[_idx(D, keep)] = L.sum(axis=axis)
    return combine_sum(full, what)


def _matrix_norm(D: codistributed, ord: Any, what: str, rt: np.dtype) -> Any:
    if ord in (None, "fro", "f"):
        return rt.type(np.sqrt(combine_sum(np.asarray(_sumsq(_float_local(D)), dtype=rt), what)))
    if ord in (1, -1, np.inf, -np.inf) and not isinstance(ord, str):
        s = _line_sums(D, 0 if ord in (1, -1) else 1, what)
        if ord > 0:  # sums of |x| >= 0: the empty maximum is 0, as numpy's
            return rt.type(s.max(initial=0.0))
        if s.size == 0:
            raise ValueError(_EMPTY_MIN)
        return rt.type(s.min())
    if ord in (2, -2, "nuc"):
        k = min(D.shape)
        if k == 0:  # no singular values: numpy's 0 for the sum and the maximum
            if ord == -2:
                raise ValueError(_EMPTY_MIN)
            return rt.type(0)
        s = singular_values(D, what)
        if s.size < k:
            s = np.concatenate((s, np.zeros(k - s.size, dtype=s.dtype)))
        return rt.type(s.sum() if ord == "nuc" else (s.max() if ord == 2 else s.min()))
    raise ValueError("Invalid norm order for matrices.")


_EMPTY_MIN = "zero-size array to reduction operation minimum which has no identity"


def _axes(axis: Any, nd: int) -> Optional[tuple]:
    if axis is None:
        return None
    ax = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    return tuple(int(a) % nd for a in ax)


@implements(np.linalg.norm)
def np_norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.linalg.norm`` of a codistributed array (whole-array norms; ``axis`` may name
    all axes in order). The result is a replicated numpy scalar (with keepdims a
    codistributed array of ones' shape, as the reductions give)."""
    what = "numpy.linalg.norm"
    labs_of(x, what)
    nd = x.ndim
    ax = _axes(axis, nd)
    if ax is not None and ax != tuple(range(nd)):
        raise NotImplementedError(f"{what}: norms along some axes (axis={axis}) of a codistributed "
                                  f"array are not supported; use axis=None")
    if x.dtype.kind not in "biufc":
        raise TypeError(f"{what}: unsupported dtype {x.dtype}")
    rt = real_dtype(x.dtype) if x.dtype.kind in "fc" else np.dtype(np.float64)
    if ord is None and ax is None:
        r = _matrix_norm(x, None, what, rt) if nd == 2 else _vector_norm(x, None, what, rt)
    elif nd == 1:
        r = _vector_norm(x, ord, what, rt)
    elif nd == 2:
        r = _matrix_norm(x, ord, what, rt)
    else:
        raise ValueError("Improper number of dimensions to norm.")
    return replicated_to_codist(np.full((1,) * nd, r, dtype=rt)) if keepdims else r


@implements(*numpy_names(np.linalg, "vector_norm"))
def np_vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """``np.linalg.vector_norm``: the norm of all elements as one vector (``axis`` None or
    every axis); keepdims keeps every dimension as 1."""
    nd = x.ndim
    ax = _axes(axis, nd)
    if ax is not None and sorted(ax) != list(range(nd)):
        return np_norm(x, ord, axis, keepdims)  # (raises: norms along some axes)
    r = np_norm(x if nd == 1 else x.reshape(-1), ord)
    return replicated_to_codist(np.full((1,) * nd, r, dtype=np.asarray(r).dtype)) if keepdims else r


@implements(*numpy_names(np.linalg, "matrix_norm"))
def np_matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """``np.linalg.matrix_norm``: the norm of each matrix of a stack (the last two
    dimensions), one distributed matrix norm after another; a codistributed result in the
    default layout of the stack's shape (as a reduction along axes)."""
    if x.ndim < 2:
        raise np.exceptions.AxisError(-2, x.ndim)
    if ord not in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf) or isinstance(ord, bool):
        raise ValueError("Invalid norm order for matrices.")
    if x.ndim == 2:
        return np_norm(x, ord, None, keepdims)
    lead = tuple(x.shape[:-2])
    vals = [np_norm(x[idx], ord) for idx in np.ndindex(*lead)]
    dt = np.result_type(*vals) if vals else (real_dtype(x.dtype) if x.dtype.kind in "fc" else np.dtype(np.float64))
    r = np.array(vals, dtype=dt).reshape(lead)
    return replicated_to_codist(r.reshape(lead + (1, 1)) if keepdims else r)


def norm(X: Any, p: Any = 2) -> Any:
    """MATLAB's ``norm(X, p)``: for a vector (1-D, or one row or column) the p-norm (``p``
    a number, ``inf``, ``-inf`` or ``"fro"``); for a matrix ``p`` = 2 (largest singular
    value), 1, ``inf`` or ``"fro"``."""
    what = "norm"
    if isinstance(p, str) and p.lower() in ("inf", "-inf"):
        p = np.inf if p.lower() == "inf" else -np.inf
    vector = X.ndim == 1 or (X.ndim == 2 and min(X.shape) == 1)
    if X.ndim <= 2 and X.size == 0 and (vector or p in (1, 2, np.inf, "fro")):
        return real_dtype(X.dtype).type(0) if X.dtype.kind in "fc" else np.float64(0)  # MATLAB: 0
    if not is_codist(X):
        A = np.asarray(X)
        if vector:
            return np.linalg.norm(A.ravel(), 2 if p == "fro" else p)
        return np.linalg.norm(A, p)
    if vector:
        if p == "fro":
            p = 2
        if isinstance(p, str):
            raise ValueError(f"{what}: invalid option {p!r} for a vector")
        labs_of(X, what)
        rt = real_dtype(X.dtype) if X.dtype.kind in "fc" else np.dtype(np.float64)
        return _vector_norm(X, p, what, rt)
    if X.ndim != 2:
        raise ValueError(f"{what}: X must be a vector or a 2-D matrix, got shape {X.shape}")
    if p not in (1, 2, np.inf, "fro"):
        raise ValueError(f"{what}: for a matrix p must be 1, 2, inf or \"fro\", got {p!r}")
    return np_norm(X, p)


@implements(np.trace)
def np_trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
             out: Any = None) -> Any:
    """``np.trace`` of a 2-D codistributed array: a replicated numpy scalar."""
    what = "numpy.trace"
    labs_of(a, what)
    if out is not None:
        raise NotImplementedError(f"{what}: out= is not supported for codistributed arrays")
    if a.ndim != 2 or {axis1 % 2, axis2 % 2} != {0, 1}:
        raise NotImplementedError(f"{what}: only the trace of a 2-D codistributed array "
                                  f"(axis1=0, axis2=1) is supported, got shape {a.shape}")
    if axis1 % 2 == 1:
        offset = -offset
    L = getLocalPart(a)
    rows, cols = _idx(a, 1), _idx(a, 2)
    want = rows + int(offset)
    pos = np.searchsorted(cols, want)
    ok = (pos < cols.size)
    ok[ok] = cols[pos[ok]] == want[ok]
    vals = L[np.flatnonzero(ok), pos[ok]]
    part = np.sum(vals, dtype=dtype)
    total = combine_sum(np.asarray(part), what)
    return total.dtype.type(total)


def trace(A: Any) -> Any:
    """MATLAB's ``trace``: the sum of the diagonal (replicated scalar)."""
    if not is_codist(A):
        return np.trace(np.asarray(A))
    return np_trace(A)


def _tri(m: Any, k: int, upper: bool, what: str) -> codistributed:
    labs_of(m, what)
    if m.ndim < 2:
        raise NotImplementedError(f"{what}: a {m.ndim}-D codistributed array (numpy would build a "
                                  "matrix from it); use a 2-D array")
    if not isinstance(k, numbers.Integral):
        raise TypeError(f"{what}: k must be an integer, got {k!r}")
    L = getLocalPart(m)
    rows, cols = _idx(m, m.ndim - 1), _idx(m, m.ndim)
    d = cols[None, :] - rows[:, None]
    keep = d >= k if upper else d <= k
    out = np.where(keep, L, np.zeros(1, dtype=L.dtype))  # native byte order, as numpy's
    return build(out.astype(L.dtype.newbyteorder("="), copy=False), getCodistributor(m))


@implements(*numpy_names(np.linalg, "trace"))
def np_linalg_trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """``np.linalg.trace`` (numpy >= 2): ``np.trace`` of a 2-D codistributed array."""
    return np_trace(x, offset, dtype=dtype)


@implements(np.triu)
def np_triu(m: Any, k: int = 0) -> codistributed:
    """``np.triu``: the result keeps the input's layout."""
    return _tri(m, k, True, "numpy.triu")


@implements(np.tril)
def np_tril(m: Any, k: int = 0) -> codistributed:
    return _tri(m, k, False, "numpy.tril")


def triu(A: Any, k: int = 0) -> Any:
    """MATLAB's ``triu(A, k)``: entries on and above the k-th diagonal."""
    return np.triu(np.asarray(A), k) if not is_codist(A) else _tri(A, k, True, "triu")


def tril(A: Any, k: int = 0) -> Any:
    """MATLAB's ``tril(A, k)``: entries on and below the k-th diagonal."""
    return np.tril(np.asarray(A), k) if not is_codist(A) else _tri(A, k, False, "tril")

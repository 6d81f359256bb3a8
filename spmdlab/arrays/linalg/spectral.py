"""``pinv``, ``matrix_rank`` and ``cond`` of codistributed matrices, from the SVD
(``svd.py``: TSQR for tall-skinny inputs, the 2dbc bidiagonal SVD otherwise), under
numpy's names and definitions and MATLAB's (``pinv``, ``rank``, ``cond``).

``pinv(A) = V diag(1/s) U^H`` over the singular values above the cutoff: U's columns
are scaled lab by lab, then one distributed product (SUMMA). ``cond`` with p = 2/-2 (or
None) is the ratio of extreme singular values; other p is numpy's
``norm(A, p) * norm(inv(A), p)`` with the distributed LU inverse. Scalars come back
replicated (numpy scalars); ``pinv`` codistributed.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..array import codistributed, getCodistributor, getLocalPart, globalIndices
from ..base import is_codist
from ..registry import implements
from .dense import np_inv
from .norms import np_norm
from .qrbase import build, ctrans, real_dtype
from .svd import svd_any as _core

__all__ = ["np_pinv", "np_matrix_rank", "np_cond", "pinv", "rank", "cond"]

_NOVALUE = object()


def _col_indices(D: codistributed) -> np.ndarray:
    return np.asarray(globalIndices(D, 2))


def _pinv(a: Any, cutoff_of: Any, what: str) -> Any:
    m, n = a.shape
    if m == 0 or n == 0:
        return codistributed.zeros(n, m, dtype=a.dtype)
    U, s, Vh = _core(a, False, True, what)
    cutoff = cutoff_of(s)
    large = s > cutoff
    inv = np.zeros_like(s)
    inv[large] = 1 / s[large]
    if not is_codist(U):  # short-wide TSQR: U, s replicated, Vh by columns
        return ctrans(Vh) @ np.ascontiguousarray((U * inv).conj().T)
    Ul = getLocalPart(U)
    scaled = build(Ul * inv[_col_indices(U)].astype(Ul.dtype), getCodistributor(U))
    Vhc = Vh if is_codist(Vh) else np.ascontiguousarray(Vh)
    return (ctrans(Vhc) if is_codist(Vhc) else Vhc.conj().T) @ ctrans(scaled)


@implements(np.linalg.pinv)
def np_pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NOVALUE) -> Any:
    """``np.linalg.pinv``: numpy's cutoff rules (``rcond`` default 1e-15, ``rtol=None``
    meaning ``max(m, n) * eps``), relative to the largest singular value."""
    what = "numpy.linalg.pinv"
    if rcond is None:
        if rtol is _NOVALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(a.shape) * np.finfo(real_dtype(a.dtype)).eps
        else:
            rcond = rtol
    elif rtol is not _NOVALUE:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    r = float(rcond)
    return _pinv(a, lambda s: r * (s.max() if s.size else 0), what)


@implements(np.linalg.matrix_rank)
def np_matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """``np.linalg.matrix_rank``: singular values above ``tol`` (default
    ``max(m, n) * eps * s.max()``, or ``rtol * s.max()``)."""
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    if A.ndim < 2:
        return int(np_norm(A, np.inf) != 0)
    s = _core(A, False, False, "numpy.linalg.matrix_rank")
    if tol is None:
        rt = max(A.shape) * np.finfo(s.dtype).eps if rtol is None else float(rtol)
        tol = (s.max() if s.size else 0) * rt
    return np.count_nonzero(s > tol)


@implements(np.linalg.cond)
def np_cond(x: Any, p: Any = None) -> Any:
    """``np.linalg.cond``: numpy's definitions for every ``p``; NaN from a singular
    matrix becomes inf (as numpy)."""
    what = "numpy.linalg.cond"
    if min(x.shape) == 0:
        raise np.linalg.LinAlgError("cond is not defined on empty arrays")
    rt = real_dtype(x.dtype) if x.dtype.kind in "fc" else np.dtype(np.float64)
    if p is None or p in (2, -2):
        s = _core(x, False, False, what)
        with np.errstate(all="ignore"):
            r = s[-1] / s[0] if p == -2 else s[0] / s[-1]
    else:
        if x.ndim != 2 or x.shape[0] != x.shape[1]:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                invx = np_inv(x)
                r = np_norm(x, p) * np_norm(invx, p)
            except np.linalg.LinAlgError:
                r = np.nan
        r = rt.type(r)
    if np.isnan(r):
        if not np.isnan(np_norm(x, "fro")):  # numpy: NaN becomes inf unless x has a NaN
            r = np.inf
    return rt.type(r)


def pinv(A: Any, tol: Any = None) -> Any:
    """MATLAB's ``pinv(A, tol)``: singular values at most ``tol`` (default
    ``max(size(A)) * norm(A) * eps``) are treated as zero."""
    if not is_codist(A):
        X = np.asarray(A)
        s = np.linalg.svd(X, compute_uv=False)
        t = max(X.shape) * (s.max() if s.size else 0) * np.finfo(s.dtype).eps if tol is None else tol
        return np.linalg.pinv(X, rcond=(t / s.max()) if s.size and s.max() else 0)
    m, n = A.shape
    eps = np.finfo(real_dtype(A.dtype) if A.dtype.kind in "fc" else np.float64).eps
    return _pinv(A, lambda s: (max(m, n) * (s.max() if s.size else 0) * eps) if tol is None
                 else float(tol), "pinv")


def rank(A: Any, tol: Any = None) -> int:
    """MATLAB's ``rank(A, tol)``: the number of singular values above ``tol`` (default
    ``max(size(A)) * eps(norm(A))``)."""
    s = np.linalg.svd(np.asarray(A), compute_uv=False) if not is_codist(A) \
        else _core(A, False, False, "rank")
    if tol is None:
        tol = max(A.shape) * np.spacing(s.max() if s.size else s.dtype.type(0))
    return int(np.count_nonzero(s > tol))


def cond(A: Any, p: Any = 2) -> Any:
    """MATLAB's ``cond(A, p)``: p = 2 (default) from the singular values; 1, inf or
    ``"fro"``: ``norm(A, p) * norm(inv(A), p)``."""
    if isinstance(p, str) and p.lower() == "inf":
        p = np.inf
    if not is_codist(A):
        return np.linalg.cond(np.asarray(A), p)
    return np_cond(A, p)

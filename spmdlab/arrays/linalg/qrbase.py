"""Shared pieces of the QR side of ``spmdlab.arrays.linalg`` (TSQR, Householder QR on
2dbc, least squares, SVD of tall matrices, norms): dtype rules, a sum combined in lab
order (bitwise the same result on every lab), and building results from local parts.
The labs of an array, ``is_codist`` and the collectives are the array package's
(``arrays.base``, ``arrays.layout``, ``arrays.collectives``); with one lab (and at the
client, where arrays behave as on a pool of one lab) nothing communicates.
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ...layouts.codistributor import codistributor1d
from ..array import codistributed, getLocalPart
from ..base import here, is_codist
from ..collectives import allgather
from ..transfer import distributed_along

__all__ = ["linalg_dtype", "combine_sum", "replicated_to_codist", "rows_of", "local_rows_of", "real_dtype",
           "eps_of", "build", "ctrans"]

_OK = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)}


def linalg_dtype(dt: Any, what: str) -> np.dtype:
    """The dtype LAPACK works in for input dtype ``dt``, as ``np.linalg`` decides:
    bool and integers become float64; float16 and long double are refused."""
    dt = np.dtype(dt)
    if dt.kind in "biufc":
        dt = dt.newbyteorder("=")  # numpy takes any byte order and computes in the native one
    if dt.kind in "biu":
        return np.dtype(np.float64)
    if dt in _OK:
        return dt
    raise TypeError(f"{what}: array type {dt} is unsupported in linalg")


def real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if np.dtype(dt).newbyteorder("=") in (np.dtype(np.float32), np.dtype(np.complex64)) \
        else np.dtype(np.float64)


def eps_of(dt: np.dtype) -> float:
    return float(np.finfo(real_dtype(dt)).eps)


def ctrans(D: Any) -> Any:
    """The conjugate transpose of a codistributed matrix (the transpose when it is real)."""
    return D.T.conj() if np.issubdtype(D.dtype, np.complexfloating) else D.T


def summed(x: np.ndarray, g: Any, what: str) -> np.ndarray:
    """:func:`combine_sum` over the labs of the process grid ``g``; ``x`` itself on a
    grid of one lab (no copy)."""
    return x if g.numlabs == 1 else combine_sum(x, what)


def combine_sum(x: np.ndarray, what: str) -> np.ndarray:
    """Sum over the labs of ``x`` (same shape everywhere), added in lab order so every
    lab gets bitwise the same result (an allreduce may add in different orders)."""
    parts = allgather(np.asarray(x), what)
    out = parts[0].copy()
    for k in range(1, parts.shape[0]):
        out += parts[k]
    return out


def replicated_to_codist(X: np.ndarray, codist: Any = None) -> codistributed:
    """A codistributed array from ``X``, the same on every lab, each lab keeping its part
    (no communication). Default layout: the default ``codistributor1d`` of X's shape."""
    lab, n = here()
    c = (codist or codistributor1d()).complete(X.shape, n)
    sel = c.localSelection(lab, n)
    idx = tuple(s if isinstance(s, slice) else np.asarray(s) for s in sel)
    if any(not isinstance(s, slice) for s in idx):
        part = X[np.ix_(*[np.arange(s.start, s.stop) if isinstance(s, slice) else s for s in idx])]
    else:
        part = X[idx]
    return build(part, c)


def build(local: np.ndarray, codist: Any) -> codistributed:
    """A codistributed array from this lab's part and a complete codistributor.
    (``codistributed.build`` with its one small collective that checks the parts.)"""
    return codistributed.build(np.ascontiguousarray(local), codist)


def rows_of(D: codistributed, what: str, partition: Optional[List[int]] = None) -> codistributed:
    """``D`` (2-D) distributed by rows (``codistributor1d(1)``; kept if it already is,
    with ``partition`` if given)."""
    return distributed_along(D, 1, partition)


def local_rows_of(B: Any, partition: List[int], what: str) -> np.ndarray:
    """This lab's rows of ``B`` (numpy, replicated, or codistributed) for a row
    ``partition`` of its first dimension."""
    lab, n = here()
    lo = int(sum(partition[:lab - 1]))
    hi = lo + int(partition[lab - 1])
    if is_codist(B):
        return getLocalPart(rows_of(B, what, list(partition)))
    return np.asarray(B)[lo:hi]



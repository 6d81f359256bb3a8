"""Shared pieces of the QR side of ``spmdlab.arrays.linalg`` (TSQR, Householder QR on
2dbc, least squares, SVD of tall matrices, norms): dtype rules, the labs of an array,
small collectives combined in lab order (bitwise the same result on every lab), and
building results from local parts.

Every collective here runs on the block's communicator from ``spmdlab.lab.comm`` and is
waited with ``comm.wait`` (interruptible); with one lab (and at the client, where
arrays behave as on a pool of one lab) nothing communicates.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ...lab import lazy_comm as comm
from ...layouts.codistributor import codistributor1d
from ...runtime import labindex, numlabs
from ..array import codistributed, getCodistributor, getLocalPart
from ..transfer import redistribute

__all__ = ["linalg_dtype", "here", "is_codist", "layout_labs", "allgather_rows",
           "allgather_small", "combine_sum", "replicated_to_codist", "rows_of",
           "local_rows_of", "real_dtype", "eps_of", "build"]

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


def is_codist(x: Any) -> bool:
    return isinstance(x, codistributed)


def here() -> Tuple[int, int]:
    """``(labindex, numlabs)`` of the running block (``(1, 1)`` at the client)."""
    return labindex(), numlabs()


def _codist_labs(c: Any) -> int:
    if isinstance(c, codistributor1d):
        return len(c.Partition or [])
    return int(c.LabGrid[0] * c.LabGrid[1])


def layout_labs(D: Any, what: str) -> Tuple[int, int]:
    """``(lab, n)`` after checking that ``D`` is laid out for this block's labs."""
    lab, n = here()
    m = _codist_labs(getCodistributor(D))
    if m != n:
        raise ValueError(f"{what}: the array is distributed over {m} labs but this block runs on {n}")
    return lab, n


def allgather_rows(part: np.ndarray, counts: Sequence[int], what: str) -> np.ndarray:
    """Every lab's ``part`` (``counts[lab-1]`` rows, the same trailing shape and dtype on
    every lab) stacked in lab order, on every lab (one ``Iallgatherv``)."""
    part = np.ascontiguousarray(part)
    tail = part.shape[1:]
    out = np.empty((int(sum(counts)),) + tail, dtype=part.dtype)
    _, n = here()
    if n == 1:
        out[...] = part
        return out
    if out.nbytes == 0:
        return out
    row = int(np.prod(tail, dtype=np.int64)) * part.dtype.itemsize
    c = np.asarray(counts, dtype=np.int64) * row
    d = np.concatenate(([0], np.cumsum(c)[:-1])).astype(np.int64)
    send = part.reshape(-1).view(np.uint8) if part.nbytes else np.empty(0, np.uint8)
    recv = out.reshape(-1).view(np.uint8)
    B = comm.MPI.BYTE
    comm.wait(comm.block().Iallgatherv([send, B], [recv, (c, d), B]), what, keep=(send, out, c, d))
    return out


def allgather_small(x: np.ndarray, what: str) -> np.ndarray:
    """``x`` (the same shape and dtype on every lab) from every lab: shape ``(n,) + x.shape``."""
    x = np.array(x, order="C", copy=None)  # (ascontiguousarray would make a 0-d array 1-D)
    _, n = here()
    return allgather_rows(x.reshape((1,) + x.shape), [1] * n, what)


def combine_sum(x: np.ndarray, what: str) -> np.ndarray:
    """Sum over the labs of ``x`` (same shape everywhere), added in lab order so every
    lab gets bitwise the same result (an allreduce may add in different orders)."""
    parts = allgather_small(np.asarray(x), what)
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
    c = getCodistributor(D)
    if isinstance(c, codistributor1d) and c.Dimension == 1 and (partition is None or c.Partition == partition):
        return D
    return redistribute(D, codistributor1d(1, partition, tuple(D.shape)))


def local_rows_of(B: Any, partition: List[int], what: str) -> np.ndarray:
    """This lab's rows of ``B`` (numpy, replicated, or codistributed) for a row
    ``partition`` of its first dimension."""
    lab, n = here()
    lo = int(sum(partition[:lab - 1]))
    hi = lo + int(partition[lab - 1])
    if is_codist(B):
        return getLocalPart(rows_of(B, what, list(partition)))
    return np.asarray(B)[lo:hi]



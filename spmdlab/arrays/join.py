"""Joining arrays: ``concatenate``, ``stack``, ``hstack``, ``vstack``, ``column_stack``,
``append``, and MATLAB's ``cat``, ``horzcat``, ``vertcat``; codistributed and numpy
arrays may be mixed.

The result is 1d along a dimension ``d`` (the first codistributed input's, or for a 2dbc
input the dimension that is not joined, the result then moved back to its 2dbc layout).
Each lab's part of the result is one contiguous block along ``d``, and each input
fills one region of it: the input is redistributed straight into that region
(``transfer.redistribute_into``: the staging window or one ``Alltoallv``, as
``redistribute``; or, when every region is a contiguous slab, as for arrays by rows, one
``Isend``/``Irecv`` per pair of labs that share rows, nothing packed, the moves of every
input started before any lab copies its own rows), with the partition the region
implies:

- joined along ``d``: the result takes the default partition, and input ``i``
  (at offset ``o_i``) gets partition ``|range_p ∩ [o_i, o_i + n_i)|`` on lab ``p``;
- joined along another axis: every input takes the first input's partition along ``d``,
  so the first moves nothing.

This is the "concatenate by redistribution into a target layout" of ScaLAPACK's
PxGEMR2D (copy a distributed submatrix into a region of another); numpy inputs are
simply sliced on each lab. No lab ever holds more than its part of the result.

Arguments are checked by numpy on stand-ins holding no memory (``shapes.proxy``), so
shape, axis and casting errors are numpy's own, on every lab alike.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..lab import lazy_comm as comm
from ..layouts.codistributor import codistributor1d, codistributor2dbc
from .base import CodistArray, here
from .layout import is1d, labs_of, local_sel
from .registry import implements
from .reshape import reshape_to
from .shapes import bounds, expand_axes, proxy
from .transfer import redistribute, redistribute_into

__all__ = ["concat", "expand", "cat", "horzcat", "vertcat"]

_TAG = 21


def _is_codist(x: Any) -> bool:
    return isinstance(x, CodistArray)


def _small(arrays: list) -> list:
    """Stand-ins of ``arrays`` with every length replaced by its rank among the lengths
    present (0 stays 0): equal lengths stay equal, so numpy's checks pass or fail alike."""
    lengths = sorted({s for a in arrays for s in a.shape})
    rank = {s: (k + (0 not in lengths)) for k, s in enumerate(lengths)}
    return [np.broadcast_to(np.zeros((), a.dtype), tuple(rank[s] for s in a.shape)) for a in arrays]


def numpy_check(fn: Any, arrays: list, **kw: Any) -> np.dtype:
    """The result dtype of ``fn(arrays, **kw)``; numpy's own error when it would fail."""
    try:
        return fn(_small(arrays), **kw).dtype
    except Exception:
        fn([proxy(a) for a in arrays], **kw)  # the same error with the real shapes in its message
        raise


def _slab_ready(a: Any, d: int) -> bool:
    """True when input ``a`` is 1d along the joined dimension ``d`` and every region of it
    is one contiguous slab (the dimensions before ``d`` have length 1): the same answer
    on every lab."""
    c: Any = a._codist
    return bool(is1d(c) and c.Dimension - 1 == d and math.prod(a.shape[:d]) == 1)


class _Slabs:
    """``redistribute_into`` for inputs that are all ``_slab_ready``: each slab goes
    straight from its lab's part into the receiving lab's result with one
    ``Isend``/``Irecv`` pair, nothing packed (as ``updateHalos``). The moves of EVERY
    input start first (receives, then sends), then each lab makes its own copies while
    they run, and one wait ends them all, so no lab idles while another copies."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.mpi = comm.private_comm(what)
        self.requests: list = []
        self.copies: list = []
        self.keep: list = []

    def start(self, a: CodistArray, part: list, view: np.ndarray, d: int) -> None:
        c: Any = a._codist
        local = np.ascontiguousarray(a._local)  # a transposed part: copied, never a different path
        lab, n = here()
        me = lab - 1
        sb, tb = bounds(c.Partition), bounds(part)
        lead = (slice(None),) * d
        BYTE = comm.MPI.BYTE
        self.keep += [local, view]
        for p in range(n):
            lo, hi = max(sb[p], tb[me]), min(sb[p + 1], tb[me + 1])
            if hi > lo and p != me:
                self.requests.append(self.mpi.Irecv([view[lead + (slice(lo - tb[me], hi - tb[me]),)], BYTE], p, _TAG))
        for q in range(n):
            lo, hi = max(sb[me], tb[q]), min(sb[me + 1], tb[q + 1])
            if hi > lo:
                src = local[lead + (slice(lo - sb[me], hi - sb[me]),)]
                if q == me:
                    self.copies.append((view[lead + (slice(lo - tb[me], hi - tb[me]),)], src))
                else:
                    self.requests.append(self.mpi.Isend([src, BYTE], q, _TAG))

    def finish(self) -> None:
        for dst, src in self.copies:
            np.copyto(dst, src)
        comm.wait_every(self.requests, self.what, keep=tuple(self.keep))

    def abandon(self) -> None:
        """On an error before ``finish``: the started moves are kept, with their buffers,
        until they complete."""
        for r in self.requests:
            comm.abandon(r, tuple(self.keep))


def _as_input(x: Any) -> Any:
    return x if _is_codist(x) else np.asarray(x)


def concat(arrays: Sequence, axis: Any = 0, dtype: Any = None, casting: str = "same_kind",
           what: str = "concatenate") -> Any:
    """numpy's ``concatenate`` (see the module's docstring for the scheme)."""
    arrays = [_as_input(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    kw = {"dtype": dtype, "casting": casting}
    rtype = numpy_check(np.concatenate, arrays, axis=axis, **kw)
    if axis is None:
        arrays = [reshape_to(a, (-1,), "C", what) if _is_codist(a) else a.reshape(-1) for a in arrays]
        axis = 0
    axis = operator.index(axis) % arrays[0].ndim
    like = next(a for a in arrays if _is_codist(a))
    lab, n = labs_of(like, what)
    shape = list(like.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    S = tuple(shape)
    back = None
    c: Any = like._codist
    if is1d(c):
        d = c.Dimension - 1
        out_codist = codistributor1d(d + 1, c.Partition, S) if d != axis else codistributor1d(d + 1).complete(S, n)
    else:  # 2dbc: joined in 1d along the dimension not joined, then moved back
        back = codistributor2dbc(c.LabGrid, c.BlockSize, c.Orientation)
        d = 1 - axis
        out_codist = codistributor1d(d + 1).complete(S, n)
    out = np.empty(out_codist.localShape(lab, n), dtype=rtype)
    slabs = _Slabs(what) if n > 1 and all(_slab_ready(a, d) for a in arrays if _is_codist(a)) else None
    try:
        _fill(out, arrays, (axis, d, S), out_codist, rtype, slabs, what)
        if slabs is not None:
            slabs.finish()
    except BaseException:
        if slabs is not None:
            slabs.abandon()
        raise
    result = type(like)._from_local(out, out_codist)
    return redistribute(result, back) if back is not None else result


def _fill(out: np.ndarray, arrays: list, dims: tuple, out_codist: Any, rtype: np.dtype, slabs: Any,
          what: str) -> None:
    """Each input into its region of this lab's part ``out`` of the result (shape ``S``,
    joined along ``axis``, 1d along ``d``; ``dims = (axis, d, S)``); moves by ``slabs``
    are only started."""
    axis, d, S = dims
    lab, n = here()
    starts = bounds(out_codist.Partition)
    offset = 0
    for a in arrays:
        k = a.shape[axis]
        region = [slice(None)] * len(S)
        if d == axis:
            part = [max(0, min(int(starts[p + 1]), offset + k) - max(int(starts[p]), offset)) for p in range(n)]
            lo = max(int(starts[lab - 1]), offset) - int(starts[lab - 1])
            region[axis] = slice(lo, lo + part[lab - 1])
        else:
            part = list(out_codist.Partition or ())
            region[axis] = slice(offset, offset + k)
        target = codistributor1d(d + 1, part, tuple(a.shape))
        view = out[tuple(region)]
        if _is_codist(a):
            if a.size:
                src = a if a.dtype == rtype else a.astype(rtype)
                if slabs is not None:
                    slabs.start(src, part, view, d)
                else:
                    redistribute_into(src, target, view, what)
        elif view.size:
            np.copyto(view, a[local_sel(target, lab, n)], casting="unsafe")
        offset += k


def expand(a: Any, axis: int) -> Any:
    """``expand_dims`` of a numpy or codistributed array."""
    return expand_axes(a, axis) if _is_codist(a) else np.expand_dims(a, axis)


def _flat(a: Any) -> Any:
    if not _is_codist(a):
        return a.reshape(-1)
    return a if a.ndim == 1 else reshape_to(a, (-1,), "C", "ravel")


def _atleast(a: Any, nd: int) -> Any:
    if a.ndim >= nd:
        return a
    if nd == 1:
        return a.reshape(1)  # numpy 0-d
    if a.ndim == 0:
        return a.reshape(1, 1)
    return expand(a, 0)


@implements(np.concatenate)
def _np_concatenate(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                    casting: str = "same_kind") -> Any:
    if out is not None:
        raise NotImplementedError("concatenate: out= is not supported for codistributed arrays")
    return concat(arrays, axis, dtype, casting)


@implements(np.stack)
def _np_stack(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    if out is not None:
        raise NotImplementedError("stack: out= is not supported for codistributed arrays")
    arrays = [_as_input(a) for a in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    numpy_check(np.stack, arrays, axis=axis, dtype=dtype, casting=casting)
    axis = operator.index(axis) % (arrays[0].ndim + 1)
    return concat([expand(a, axis) for a in arrays], axis, dtype, casting, "stack")


@implements(np.hstack)
def _np_hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrays = [_atleast(_as_input(a), 1) for a in tup]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    return concat(arrays, 0 if arrays[0].ndim == 1 else 1, dtype, casting, "hstack")


@implements(np.vstack)
def _np_vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrays = [_atleast(_as_input(a), 2) for a in tup]
    return concat(arrays, 0, dtype, casting, "vstack")


@implements(np.column_stack)
def _np_column_stack(tup: Any) -> Any:
    arrays = [_as_input(a) for a in tup]
    arrays = [expand(a, 1) if a.ndim < 2 else a for a in (_atleast(a, 1) for a in arrays)]
    return concat(arrays, 1, what="column_stack")


@implements(np.append)
def _np_append(arr: Any, values: Any, axis: Any = None) -> Any:
    arr, values = _as_input(arr), _as_input(values)
    if axis is None:
        arr, values = _flat(arr), _flat(values)
        axis = 0
    return concat([arr, values], axis, what="append")


# --------------------------------------------------------------------------- MATLAB's names
def cat(dim: int, *arrays: Any) -> Any:
    """MATLAB's ``cat(dim, A, B, ...)``: joined along dimension ``dim`` (1-based); a ``dim``
    beyond the arrays' dimensions adds length-1 dimensions first (``cat(3, A, B)`` of
    matrices is a 3-D array)."""
    dim = operator.index(dim)
    if dim < 1:
        raise ValueError(f"cat: dimension must be a positive integer, got {dim}")
    arrays = tuple(_as_input(a) for a in arrays)
    if not arrays:
        return np.zeros((0, 0))
    nd = max(a.ndim for a in arrays)
    if dim > nd:
        grown = []
        for a in arrays:
            for e in range(a.ndim, dim):
                a = expand(a, e)
            grown.append(a)
        arrays = tuple(grown)
    return np.concatenate(arrays, axis=dim - 1)


def horzcat(*arrays: Any) -> Any:
    """MATLAB's ``[A, B, ...]``: ``cat(2, ...)``; 1-D arrays (MATLAB's row vectors) joined end to end."""
    if arrays and all(np.ndim(a) <= 1 for a in arrays):
        return np.hstack(arrays)
    return cat(2, *arrays)


def vertcat(*arrays: Any) -> Any:
    """MATLAB's ``[A; B; ...]``: ``cat(1, ...)``; 1-D arrays (row vectors) become rows."""
    if arrays and all(np.ndim(a) <= 1 for a in arrays):
        return np.vstack(arrays)
    return cat(1, *arrays)

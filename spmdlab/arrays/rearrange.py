"""Rearranging along one axis: ``delete``, ``insert``, ``repeat``, ``tile``, ``flip``,
``roll``: each is ``axis_take(D, axis, index)``, ``result[..., j, ...] = D[..., index[j], ...]``,
with ``index`` worked out by numpy itself on ``arange(N)`` (so its checks and errors are
numpy's own, alike on every lab).

Along an axis that is not distributed (1d layouts) the take is local and the layout is
kept. Along the distributed axis each lab knows, from the index and the two partitions,
which of its rows every lab needs: ONE ``Alltoallv`` of packed rows moves them (the
scatter of PETSc's ``VecScatter`` with a general index set; the index must be the same
on every lab, checked with an 8-byte digest); when rows are contiguous slabs (arrays by
rows), the same scatter point to point, unpacked (VecScatter's MPI_Isend/Irecv variant).
The result is then 1d along that axis, default partition. A 2dbc array is moved to 1d
along the other axis first and back after.
"""
from __future__ import annotations

import hashlib
import math
import operator
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..lab import lazy_comm as comm
from ..layouts.codistributor import codistributor1d, codistributor2dbc
from .base import CodistArray
from .collectives import Exchange, allgather
from .join import concat
from .layout import is1d, labs_of
from .registry import implements
from .reshape import reshape_to
from .shapes import bounds, expand_axes
from .transfer import gather, redistribute

__all__ = ["axis_take"]

_TAG = 22


def _check_same(index: np.ndarray, what: str) -> None:
    digest = np.frombuffer(hashlib.blake2b(np.ascontiguousarray(index).tobytes(), digest_size=8).digest(),
                           dtype=np.int64)
    digests = allgather(digest, what)
    if not (digests == digests[0]).all():
        differ = [k + 1 for k in range(len(digests)) if digests[k] != digests[0]]
        raise ValueError(f"{what}: the index arguments differ between labs (labs {differ} differ from "
                         "lab 1); they must be the same on every lab")


def axis_take(D: CodistArray, axis: int, index: np.ndarray, what: str) -> CodistArray:
    """``np.take(D, index, axis)`` for an in-range ``index`` the same on every lab (see the
    module's docstring)."""
    index = np.asarray(index, dtype=np.intp)
    lab, n = labs_of(D, what)
    c: Any = D._codist
    if not is1d(c):  # 2dbc
        other = codistributor1d(2 - axis)
        R = axis_take(redistribute(D, other), axis, index, what)
        return redistribute(R, codistributor2dbc(c.LabGrid, c.BlockSize, c.Orientation))
    shape = list(D.shape)
    shape[axis] = index.size
    S = tuple(shape)
    k = c.Dimension - 1
    if k != axis:
        return type(D)._from_local(_take(D._local, index, axis), codistributor1d(k + 1, c.Partition, S))
    dst = codistributor1d(k + 1).complete(S, n)
    if n == 1:
        return type(D)._from_local(_take(D._local, index, axis), dst)
    _check_same(index, what)
    sb, db = bounds(c.Partition), bounds(dst.Partition)
    out = np.empty(dst.localShape(lab, n), dtype=D.dtype)
    if math.prod(S[:axis]) == 1:  # the same answer on every lab
        _exchange_slabs(np.ascontiguousarray(D._local), out, index, sb, db, axis, lab, what)
        return type(D)._from_local(out, dst)
    row = math.prod(s for e, s in enumerate(S) if e != axis) * D.dtype.itemsize
    me = lab - 1
    sends: list[Any] = [None] * n
    for q in range(n):
        want = index[db[q]:db[q + 1]]
        mine = want[(want >= sb[me]) & (want < sb[me + 1])] - sb[me]
        if mine.size:
            rows = _take(D._local, mine, axis)
            if q == me:
                sel = (want >= sb[me]) & (want < sb[me + 1])
                _put(out, axis, np.flatnonzero(sel), rows)
            else:
                sends[q] = rows
    want = index[db[me]:db[me + 1]]
    owner = np.searchsorted(sb, want, side="right") - 1
    rcounts = [0 if p == me else int(np.count_nonzero(owner == p)) * row for p in range(n)]
    chunks = Exchange(sends, rcounts, what).finish()
    for p in range(n):
        if rcounts[p]:
            at = np.flatnonzero(owner == p)
            shape_p = list(out.shape)
            shape_p[axis] = at.size
            _put(out, axis, at, chunks[p].view(D.dtype).reshape(shape_p))
    return type(D)._from_local(out, dst)


def _exchange_slabs(local: np.ndarray, out: np.ndarray, index: np.ndarray, sb: np.ndarray, db: np.ndarray,
                    axis: int, lab: int, what: str) -> None:
    """The exchange of ``axis_take`` when rows along ``axis`` are contiguous slabs (the
    dimensions before it have length 1): point to point, each lab's rows sent as they are
    taken (a view for a run in order) and received straight into the result where they
    land as one run (else into a buffer, then put); nothing packed into one send buffer."""
    me = lab - 1
    n = len(sb) - 1
    lead = (slice(None),) * axis
    mpi = comm.private_comm(what)
    BYTE = comm.MPI.BYTE
    requests, pending, keep = [], [], []
    want = index[db[me]:db[me + 1]]
    owner = np.searchsorted(sb, want, side="right") - 1
    for p in range(n):
        at = np.flatnonzero(owner == p) if p != me else np.zeros(0, np.intp)
        if at.size:
            if int(at[-1]) - int(at[0]) + 1 == at.size:
                buf = out[lead + (slice(int(at[0]), int(at[-1]) + 1),)]
            else:
                shape_p = list(out.shape)
                shape_p[axis] = at.size
                buf = np.empty(shape_p, out.dtype)
                pending.append((at, buf))
            requests.append(mpi.Irecv([buf, BYTE], p, _TAG))
    for q in range(n):
        w = index[db[q]:db[q + 1]]
        sel = (w >= sb[me]) & (w < sb[me + 1])
        mine = w[sel] - sb[me]
        if not mine.size:
            continue
        run = bool((np.diff(mine) == 1).all())
        rows = local[lead + (slice(int(mine[0]), int(mine[-1]) + 1),)] if run else _take(local, mine, axis)
        if q == me:
            _put(out, axis, np.flatnonzero(sel), rows)
        else:
            keep.append(rows)
            requests.append(mpi.Isend([rows, BYTE], q, _TAG))
    comm.wait_every(requests, what, keep=(out, local, *keep, *[b for _, b in pending]))
    for at, buf in pending:
        _put(out, axis, at, buf)


def _take(x: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
    """``np.take(x, index, axis)``; an evenly spaced index (flip, slices of delete) as a
    strided copy, which numpy's take along an inner axis is several times slower than."""
    if index.size > 1:
        step = int(index[1] - index[0])
        if step and (np.diff(index) == step).all():
            stop = int(index[-1]) + step
            key: list[Any] = [slice(None)] * x.ndim
            key[axis] = slice(int(index[0]), stop if stop >= 0 else None, step)
            return np.array(x[tuple(key)], copy=True)
    return np.take(x, index, axis=axis)


def _put(out: np.ndarray, axis: int, at: np.ndarray, rows: np.ndarray) -> None:
    key: list[Any] = [slice(None)] * out.ndim
    contiguous = at.size and int(at[-1]) - int(at[0]) + 1 == at.size
    key[axis] = slice(int(at[0]), int(at[-1]) + 1) if contiguous else at  # a run: a strided copy
    out[tuple(key)] = rows


def _flat(D: CodistArray, what: str) -> CodistArray:
    return D if D.ndim == 1 else reshape_to(D, (-1,), "C", what)


def _axis(D: Any, axis: Any) -> int:
    return int(normalize_axis_index(operator.index(axis), D.ndim))


@implements(np.delete)
def _np_delete(arr: Any, obj: Any, axis: Any = None) -> CodistArray:
    what = "delete"
    if axis is None:
        arr, axis = _flat(arr, what), 0
    axis = _axis(arr, axis)
    if isinstance(obj, CodistArray):
        obj = np.asarray(gather(obj))
    return axis_take(arr, axis, np.delete(np.arange(arr.shape[axis]), obj), what)


@implements(np.insert)
def _np_insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> CodistArray:
    """The inserted values as a replicated slab, joined to ``arr`` (``join.concat``) and put
    in place by one ``axis_take`` with numpy's own ``insert`` of the positions."""
    what = "insert"
    if axis is None:
        arr, axis = _flat(arr, what), 0
    axis = _axis(arr, axis)
    N = arr.shape[axis]
    if isinstance(values, CodistArray):
        values = gather(values)
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(N), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == bool:
            if indices.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            indices = np.flatnonzero(indices)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
    slab_shape = list(arr.shape)
    if indices.size == 1:
        V = np.array(values, ndmin=arr.ndim, dtype=arr.dtype)
        if indices.ndim == 0:
            V = np.moveaxis(V, 0, axis)
        numnew = V.shape[axis]
        where = np.insert(np.arange(N), obj if not np.array(obj).dtype == bool else int(indices[0]),
                          N + np.arange(numnew))
    else:
        V = values
        numnew = len(indices)
        where = np.insert(np.arange(N), obj, N + np.arange(numnew))
    slab_shape[axis] = numnew
    slab = np.empty(slab_shape, dtype=arr.dtype)
    slab[...] = V
    joined = concat([arr, slab], axis, dtype=arr.dtype, what=what)  # insert keeps the byte order
    return axis_take(joined, axis, where, what)


@implements(np.repeat)
def _np_repeat(a: Any, repeats: Any, axis: Any = None) -> CodistArray:
    what = "repeat"
    if axis is None:
        a, axis = _flat(a, what), 0
    axis = _axis(a, axis)
    if isinstance(repeats, CodistArray):
        repeats = gather(repeats)
    return axis_take(a, axis, np.repeat(np.arange(a.shape[axis]), repeats), what)


@implements(np.tile)
def _np_tile(A: Any, reps: Any) -> CodistArray:
    what = "tile"
    tup = tuple(reps) if np.iterable(reps) else (reps,)
    tup = tuple(operator.index(r) for r in tup)
    np.tile(np.zeros((0,) * A.ndim), tup)  # numpy's checks of reps
    for _ in range(len(tup) - A.ndim):
        A = expand_axes(A, 0)
    tup = (1,) * (A.ndim - len(tup)) + tup
    R = A
    for ax, r in enumerate(tup):
        if r != 1:
            R = axis_take(R, ax, np.tile(np.arange(A.shape[ax]), r), what)
    return R.copy() if R is A else R


@implements(np.flip)
def _np_flip(m: Any, axis: Any = None) -> CodistArray:
    what = "flip"
    axes = range(m.ndim) if axis is None else normalize_axis_tuple(axis, m.ndim)
    R = m
    for ax in axes:
        R = axis_take(R, ax, np.arange(m.shape[ax])[::-1], what)
    return R.copy() if R is m else R


@implements(np.roll)
def _np_roll(a: Any, shift: Any, axis: Any = None) -> CodistArray:
    what = "roll"
    if axis is None:
        flat = _flat(a, what)
        R = axis_take(flat, 0, np.roll(np.arange(flat.shape[0]), shift), what)
        return R if a.ndim == 1 else reshape_to(R, tuple(a.shape), "C", what)
    probe = np.roll(np.broadcast_to(np.zeros((), np.int8), (1,) * a.ndim), shift, axis)  # numpy's checks
    del probe
    shifts = dict.fromkeys(range(a.ndim), 0)
    for sh, ax in np.broadcast(shift, axis):
        shifts[int(ax) % a.ndim] += int(sh)
    R = a
    for ax, sh in shifts.items():
        if a.shape[ax] and sh % a.shape[ax]:
            R = axis_take(R, ax, np.roll(np.arange(a.shape[ax]), sh), what)
    return R.copy() if R is a else R

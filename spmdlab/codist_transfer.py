"""Moving codistributed data: region copies, ``redistribute`` and ``gather``.

A lab's part is the Cartesian product of per-dimension index sets (slices where they are
contiguous); copies between parts go by contiguous runs. ``redistribute`` moves an array
to another layout with one all-to-all exchange (no lab holds more than its old and new
parts); ``gather`` gives the whole array to every lab, or to one lab, with one
collective. Nothing here imports MPI at import time.
"""
from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from .checks import check_lab
from .codist_comm import _check_codist_arg, _cls, _codist_numlabs, _complete, _here, _need, comm
from .codistributor import codistributor1d, sel_array, sel_len, transfer_regions

if TYPE_CHECKING:
    from .codistributed import codistributed

__all__ = ["redistribute", "gather"]


def _as_slice(ix) -> Optional[slice]:
    if isinstance(ix, slice):
        return ix
    if ix.size == 0:
        return slice(0, 0)
    lo, hi = int(ix[0]), int(ix[-1])
    if hi - lo + 1 == ix.size and (ix.size < 3 or bool(np.all(np.diff(ix) == 1))):
        return slice(lo, hi + 1)
    return None


def _region(index: Sequence) -> tuple:
    """An indexing tuple selecting the Cartesian product of per-dimension selections
    (slices or index arrays): slices where contiguous (views), fancy indexing only where
    needed."""
    slices = [_as_slice(ix if isinstance(ix, slice) else np.asarray(ix)) for ix in index]
    fancy = [k for k, s in enumerate(slices) if s is None]
    if len(fancy) <= 1:
        return tuple(s if s is not None else np.asarray(index[k]) for k, s in enumerate(slices))
    return np.ix_(*[sel_array(ix) for ix in index])


_MAX_RUN_COMBOS = 4096


def _joint_runs(src, dst) -> list:
    """Maximal stretches where both aligned index sets step by one:
    ``[(src_start, src_stop, dst_start, dst_stop), ...]``."""
    if isinstance(src, slice) and isinstance(dst, slice):
        return [(src.start, src.stop, dst.start, dst.stop)] if src.stop > src.start else []
    src, dst = sel_array(src), sel_array(dst)
    if src.size == 0:
        return []
    breaks = np.flatnonzero((np.diff(src) != 1) | (np.diff(dst) != 1)) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    ends = np.concatenate((breaks, [src.size])).tolist()
    s0, d0 = src[starts].tolist(), dst[starts].tolist()
    return [(a, a + e - b, c, c + e - b) for a, c, b, e in zip(s0, d0, starts, ends)]


def _copy_region(dst: np.ndarray, dst_index: Sequence, src: np.ndarray, src_index: Sequence) -> None:
    """``dst[np.ix_(*dst_index)] = src[np.ix_(*src_index)]`` for aligned per-dimension
    selections (slices, index arrays, or None: all of that dimension, in order). Copies
    runs of contiguous indices with slices (block-cyclic layouts have few, long runs);
    falls back to fancy indexing when there are very many short runs."""
    runs = []
    combos = 1
    for d in range(dst.ndim):
        si = slice(0, src.shape[d]) if src_index[d] is None else src_index[d]
        di = slice(0, dst.shape[d]) if dst_index[d] is None else dst_index[d]
        if sel_len(si) != sel_len(di):
            raise ValueError(f"internal error: index lengths differ along dimension {d + 1}")
        r = _joint_runs(si, di)
        if not r:
            return
        runs.append(r)
        combos *= len(r)
    if dst.ndim == 0:
        dst[()] = src[()]
        return
    if combos <= _MAX_RUN_COMBOS:
        for combo in itertools.product(*runs):
            dst[tuple(slice(c[2], c[3]) for c in combo)] = src[tuple(slice(c[0], c[1]) for c in combo)]
        return
    full = lambda ix, n: slice(0, n) if ix is None else ix  # noqa: E731
    dst[_region([full(ix, n) for ix, n in zip(dst_index, dst.shape)])] = \
        src[_region([full(ix, n) for ix, n in zip(src_index, src.shape)])]


def _take(a: np.ndarray, index: Sequence) -> np.ndarray:
    """``a[np.ix_(*index)]``: a view when every selection is a contiguous range, else a copy."""
    slices = [_as_slice(ix if isinstance(ix, slice) else np.asarray(ix)) for ix in index]
    if all(s is not None for s in slices):
        return a[tuple(slices)]
    out = np.empty(tuple(sel_len(ix) for ix in index), dtype=a.dtype)
    _copy_region(out, [None] * out.ndim, a, index)
    return out


def _put(a: np.ndarray, index: Sequence, value: np.ndarray) -> None:
    """``a[np.ix_(*index)] = value``."""
    _copy_region(a, index, np.asarray(value), [None] * a.ndim)


def _bytes_of(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array's memory as a flat uint8 array (no copy when contiguous)."""
    a = np.ascontiguousarray(a)
    if a.dtype.itemsize == 0 or a.size == 0:
        return np.empty(0, dtype=np.uint8)
    return a.reshape(-1).view(np.uint8)


# --------------------------------------------------------------------------- redistribute
def redistribute(D: "codistributed", codist=None) -> "codistributed":
    """``D`` with the layout ``codist`` (default: ``codistributor1d()``), moved with one
    all-to-all exchange; no lab ever holds more than its old and new parts."""
    what = "redistribute"
    if not isinstance(D, _cls()) and getattr(type(D), "_spmdlab_input", None) is not None \
            and hasattr(D, "redistribute"):
        return D.redistribute(codist)  # a client distributed array: moved on the labs
    _need(D, what)
    _check_codist_arg(codist, what)
    lab, n = _here()
    src = D._codist
    if _codist_numlabs(src) != n:
        raise ValueError(f"{what}: the array is distributed over {_codist_numlabs(src)} labs "
                         f"but this block runs on {n}")
    target = _complete(codist, D.shape, n)
    if target == src:
        return D.copy()
    dtype = D.dtype
    local = D._local
    new = np.empty(target.localShape(lab, n), dtype=dtype)
    plan = transfer_regions(src, target, n, lab=lab)
    sends = plan[lab - 1]
    recvs = [plan[s][lab - 1] for s in range(n)]
    mine = sends[lab - 1]
    if mine.size:
        _copy_region(new, mine.dst_index, local, mine.src_index)
    if n == 1:
        return _cls()._from_local(new, target)
    item = dtype.itemsize
    scounts = np.array([0 if t.dst_lab == lab else t.size * item for t in sends], dtype=np.int64)
    rcounts = np.array([0 if t.src_lab == lab else t.size * item for t in recvs], dtype=np.int64)
    sdispl = np.concatenate(([0], np.cumsum(scounts)[:-1])).astype(np.int64)
    rdispl = np.concatenate(([0], np.cumsum(rcounts)[:-1])).astype(np.int64)
    sendbuf = np.empty(int(scounts.sum()), dtype=np.uint8)
    for t, off, cnt in zip(sends, sdispl, scounts):
        if cnt:
            _copy_region(sendbuf[off:off + cnt].view(dtype).reshape(t.shape), [None] * len(t.shape),
                         local, t.src_index)
    recvbuf = np.empty(int(rcounts.sum()), dtype=np.uint8)
    MPI = comm.MPI
    c = comm.block()
    request = c.Ialltoallv([sendbuf, (scounts, sdispl), MPI.BYTE], [recvbuf, (rcounts, rdispl), MPI.BYTE])
    comm.wait(request, what, keep=(sendbuf, recvbuf, scounts, rcounts, sdispl, rdispl))
    del sendbuf
    for t, off, cnt in zip(recvs, rdispl, rcounts):
        if cnt:
            _copy_region(new, t.dst_index, recvbuf[off:off + cnt].view(dtype).reshape(t.shape),
                         [None] * len(t.shape))
    return _cls()._from_local(new, target)


# --------------------------------------------------------------------------- gather
def _assemble(shape, dtype, codist, parts) -> np.ndarray:
    """The global array from ``parts`` (lab order) laid out by ``codist``."""
    n = _codist_numlabs(codist)
    out = np.empty(shape, dtype=dtype)
    for lab in range(1, n + 1):
        part = parts[lab - 1]
        if part.size:
            _put(out, codist.localSelection(lab, n), part)
    return out


def _concatenates(codist, shape) -> bool:
    """True when the local parts, in lab order, are the global array's C-order bytes."""
    return isinstance(codist, codistributor1d) and math.prod(shape[:codist.Dimension - 1]) == 1


def gather(D: Any, lab: Optional[int] = None) -> Any:
    """The whole array as a numpy array.

    On a lab: ``gather(D)`` gives it to every lab, ``gather(D, lab)`` to that lab only
    (the others get an empty array); one collective. At the client, ``gather`` of a
    ``distributed`` array fetches it from the labs. Anything else is returned as is.
    """
    if not isinstance(D, _cls()):
        hook = getattr(type(D), "_spmdlab_gather", None)
        if hook is not None:
            if lab is not None:
                raise TypeError("gather(D, lab) is for codistributed arrays inside spmd; "
                                "at the client use gather(D)")
            return hook(D)
        return D
    what = "gather" if lab is None else f"gather(D, {lab})"
    me, n = _here()
    codist = D._codist
    if _codist_numlabs(codist) != n:
        raise ValueError(f"{what}: the array is distributed over {_codist_numlabs(codist)} labs "
                         f"but this block runs on {n}")
    root = None if lab is None else check_lab(lab, n, "lab") - 1
    shape, dtype = D.shape, D.dtype
    if n == 1:
        return np.array(D._local, copy=True).reshape(shape)
    item = dtype.itemsize
    counts = np.array([math.prod(codist.localShape(k, n)) * item for k in range(1, n + 1)], dtype=np.int64)
    displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    send = _bytes_of(D._local)
    receiving = root is None or root == me - 1
    MPI = comm.MPI
    c = comm.block()
    whole = _concatenates(codist, shape)
    result = None
    if receiving:
        if whole:
            result = np.empty(shape, dtype=dtype)
            recv = _bytes_of(result) if result.size and item else np.empty(0, np.uint8)
            if recv.size and not np.shares_memory(recv, result):
                whole = False
        if not whole:
            recv = np.empty(int(counts.sum()), dtype=np.uint8)
        spec = [recv, (counts, displs), MPI.BYTE]
    else:
        recv, spec = None, None
    if root is None:
        request = c.Iallgatherv([send, MPI.BYTE], spec)
    else:
        request = c.Igatherv([send, MPI.BYTE], spec, root)
    comm.wait(request, what, keep=(send, recv, counts, displs))
    if not receiving:
        return np.empty((0,) * len(shape), dtype=dtype)
    if whole:
        return result
    parts = [recv[o:o + k].view(dtype).reshape(codist.localShape(lab_, n))
             for lab_, (o, k) in enumerate(zip(displs, counts), start=1)]
    return _assemble(shape, dtype, codist, parts)

"""Moving codistributed data: region copies, ``redistribute`` and ``gather``.

A lab's part is the Cartesian product of per-dimension index sets (slices where they are
contiguous); copies between parts go by evenly spaced groups of contiguous runs.
``redistribute`` moves an array to another layout through the staging window the labs
of one machine share, or else with one all-to-all exchange; ``gather`` gives the whole
array to every lab, or to one lab, with one collective. Nothing here imports MPI at
import time.
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import TYPE_CHECKING, Any, NamedTuple, Optional, Sequence

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


def _run_groups(runs: list) -> list:
    """Consecutive runs of one length whose starts step evenly on both sides, as
    ``(count, length, src_start, src_step, dst_start, dst_step)``: the runs of a
    block-cyclic selection make one group, plus one for a short last block."""
    groups: list = []
    for a, b, c, d in runs:
        if groups:
            count, length, a0, sstep, c0, dstep = groups[-1]
            if b - a == length and (count == 1 or (a - a0 == count * sstep and c - c0 == count * dstep)):
                if count == 1:
                    sstep, dstep = a - a0, c - c0
                groups[-1] = (count + 1, length, a0, sstep, c0, dstep)
                continue
        groups.append((1, b - a, a, 0, c, 0))
    return groups


def _group_view(a: np.ndarray, combo: Sequence, side: int) -> np.ndarray:
    """What one group per dimension selects in ``a``, as a strided view of shape
    ``(count_1, length_1, count_2, length_2, ...)``; side 0 reads the groups' source
    positions, side 1 their destination positions (a writable view)."""
    shape, strides, start = [], [], []
    for g, n, st in zip(combo, a.shape, a.strides):
        first, step = g[2 + 2 * side], g[3 + 2 * side]
        if first + (g[0] - 1) * step + g[1] > n:
            raise ValueError("internal error: a copy reaches past the end of a local part")
        start.append(slice(first, None))
        shape += [g[0], g[1]]
        strides += [step * st, st]
    return np.lib.stride_tricks.as_strided(a[tuple(start)], shape, strides, writeable=side == 1)


class RegionCopy:
    """``dst[np.ix_(*dst_index)] = src[np.ix_(*src_index)]`` for aligned per-dimension
    selections (slices, index arrays, or None: all of that dimension, in order), worked
    out once and run on any arrays of those shapes. Evenly spaced runs of contiguous
    indices (a block-cyclic layout) are copied as one strided view per group; very
    irregular selections fall back to fancy indexing."""

    def __init__(self, dst_index: Sequence, src_index: Sequence, dst_shape: Sequence[int],
                 src_shape: Sequence[int]) -> None:
        full = lambda ix, n: slice(0, n) if ix is None else ix  # noqa: E731
        self.dst_index = [full(ix, n) for ix, n in zip(dst_index, dst_shape)]
        self.src_index = [full(ix, n) for ix, n in zip(src_index, src_shape)]
        self.combos: Optional[list] = []
        groups, count = [], 1
        for d, (si, di) in enumerate(zip(self.src_index, self.dst_index)):
            if sel_len(si) != sel_len(di):
                raise ValueError(f"internal error: index lengths differ along dimension {d + 1}")
            g = _run_groups(_joint_runs(si, di))
            if not g:
                return  # nothing to copy
            groups.append(g)
            count *= len(g)
        self.combos = list(itertools.product(*groups)) if count <= _MAX_RUN_COMBOS else None

    def run(self, dst: np.ndarray, src: np.ndarray) -> None:
        if dst.ndim == 0:
            dst[()] = src[()]
        elif self.combos is None:
            dst[_region(self.dst_index)] = src[_region(self.src_index)]
        else:
            for combo in self.combos:
                np.copyto(_group_view(dst, combo, 1), _group_view(src, combo, 0))


def _copy_region(dst: np.ndarray, dst_index: Sequence, src: np.ndarray, src_index: Sequence) -> None:
    """``dst[np.ix_(*dst_index)] = src[np.ix_(*src_index)]`` (see :class:`RegionCopy`)."""
    RegionCopy(dst_index, src_index, dst.shape, src.shape).run(dst, src)


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
    """``D`` with the layout ``codist`` (default: ``codistributor1d()``), moved through the
    labs' staging window (one machine, parts up to ``SPMDLAB_STAGING_MB``) or with one
    all-to-all exchange; no lab ever holds the whole array."""
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
    local = D._local
    new = np.empty(target.localShape(lab, n), dtype=D.dtype)
    moves = _moves(src, target, n, lab)
    moves.keep.run(new, local)
    if n == 1 or _exchange_shared(new, local, moves, lab, what):
        return _cls()._from_local(new, target)
    _exchange_alltoallv(new, local, moves, lab, what)
    return _cls()._from_local(new, target)


class _Moves(NamedTuple):
    """What one lab does in a redistribution, worked out once per pair of layouts:
    ``keep`` copies its own elements; ``sends[k]``/``recvs[k]`` (lab k+1) give the
    element count, the chunk's shape and the copies into and out of a packed chunk;
    ``takes[k]`` copies straight from lab k+1's old part; ``src_shapes[k]`` is its shape."""
    keep: RegionCopy
    sends: list
    recvs: list
    takes: list
    src_shapes: list


@functools.lru_cache(maxsize=16)
def _moves(src, target, n: int, lab: int) -> _Moves:
    plan = transfer_regions(src, target, n, lab=lab)
    new_shape = target.localShape(lab, n)
    src_shapes = [src.localShape(k, n) for k in range(1, n + 1)]
    whole = lambda t: [None] * len(t.shape)  # noqa: E731
    sends = [(t.size, t.shape, RegionCopy(whole(t), t.src_index, t.shape, src_shapes[lab - 1]))
             for t in plan[lab - 1]]
    recvs = [(t.size, t.shape, RegionCopy(t.dst_index, whole(t), new_shape, t.shape))
             for t in (plan[k][lab - 1] for k in range(n))]
    takes = [RegionCopy(t.dst_index, t.src_index, new_shape, src_shapes[k])
             for k, t in enumerate(plan[k][lab - 1] for k in range(n))]
    return _Moves(takes[lab - 1], sends, recvs, takes, src_shapes)


def _exchange_alltoallv(new: np.ndarray, local: np.ndarray, moves: _Moves, lab: int, what: str) -> None:
    """The exchange of ``redistribute`` with one ``Alltoallv``: pack what each lab needs,
    exchange, unpack."""
    dtype, item = local.dtype, local.dtype.itemsize
    scounts = np.array([0 if k == lab - 1 else size * item for k, (size, _, _) in enumerate(moves.sends)],
                       dtype=np.int64)
    rcounts = np.array([0 if k == lab - 1 else size * item for k, (size, _, _) in enumerate(moves.recvs)],
                       dtype=np.int64)
    sdispl = np.concatenate(([0], np.cumsum(scounts)[:-1])).astype(np.int64)
    rdispl = np.concatenate(([0], np.cumsum(rcounts)[:-1])).astype(np.int64)
    sendbuf = np.empty(int(scounts.sum()), dtype=np.uint8)
    for (_, shape, pack), off, cnt in zip(moves.sends, sdispl, scounts):
        if cnt:
            pack.run(sendbuf[off:off + cnt].view(dtype).reshape(shape), local)
    recvbuf = np.empty(int(rcounts.sum()), dtype=np.uint8)
    MPI = comm.MPI
    request = comm.block().Ialltoallv([sendbuf, (scounts, sdispl), MPI.BYTE],
                                      [recvbuf, (rcounts, rdispl), MPI.BYTE])
    comm.wait(request, what, keep=(sendbuf, recvbuf, scounts, rcounts, sdispl, rdispl))
    del sendbuf
    for (_, shape, unpack), off, cnt in zip(moves.recvs, rdispl, rcounts):
        if cnt:
            unpack.run(new, recvbuf[off:off + cnt].view(dtype).reshape(shape))


def _exchange_shared(new: np.ndarray, local: np.ndarray, moves: _Moves, lab: int, what: str) -> bool:
    """The exchange of ``redistribute`` through the block's staging window, when its labs
    share one machine: each lab copies its old part into its segment in one go, and then
    takes what it needs straight from the other labs' segments. That is two copies of
    each element, against four for pack, ``Alltoallv`` (two in this MPICH) and unpack.
    False (nothing done) when there is no staging window; every lab gets the same answer."""
    dtype = local.dtype
    sizes = [math.prod(shape) * dtype.itemsize for shape in moves.src_shapes]
    st = comm.staging(sizes, what)
    if st is None:
        return False
    if any(size for k, (size, _, _) in enumerate(moves.sends) if k != lab - 1):
        np.copyto(st.segment(lab - 1)[:local.nbytes].view(dtype).reshape(local.shape), local)
    st.sync(what)
    for k, (take, (size, _, _)) in enumerate(zip(moves.takes, moves.recvs)):
        if k != lab - 1 and size:
            take.run(new, st.segment(k)[:sizes[k]].view(dtype).reshape(moves.src_shapes[k]))
    st.sync(what)  # no lab writes its segment again while another still reads it
    return True


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

"""Moving whole arrays: ``redistribute`` (a new layout, lab to lab) and ``gather`` (the
whole array on every lab, or on one).

``redistribute`` works out once per pair of layouts what each lab keeps, sends and
receives (``plan.transfer_regions``, cached), then moves the data through the labs'
staging window when they share a machine (packed there by the sender, unpacked by the
receiver), else with one ``Alltoallv``; no lab ever holds the whole array. ``gather``
is one ``Iallgatherv``/``Igatherv`` of the local parts.
"""
from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from ..checks import check_lab
from ..lab import lazy_comm as comm
from ..layouts.codistributor import Codistributor, codistributor1d
from ..layouts.plan import transfer_regions
from ..layouts.regions import RegionCopy, put
from .base import GRID_HOOKS, CodistArray, check_codist_arg, complete, here, is_plain, labs_for, need, numlabs_of
from .collectives import EMPTY_BYTES, as_bytes, check_agree
from .layout import concatenates, default_layout
from .reshard import reshard

__all__ = ["redistribute", "redistribute_into", "distributed_along", "gather"]


def redistribute(D: Any, codist: Codistributor | None = None) -> Any:
    """``D`` with the layout ``codist`` (default: ``codistributor1d()``), moved through the
    labs' staging window (one machine, parts up to ``SPMDLAB_STAGING_MB``) or with one
    all-to-all exchange; no lab ever holds the whole array."""
    what = "redistribute"
    if not isinstance(D, CodistArray) and getattr(type(D), "_spmdlab_input", None) is not None \
            and hasattr(D, "redistribute"):
        return D.redistribute(codist)  # a client distributed array: moved on the labs
    hook = getattr(type(D), "_spmdlab_redistribute", None)
    if hook is not None and not isinstance(D, CodistArray):
        return hook(D, codist)  # a sparse codistributed matrix (codist/sparse), an array on a sub-grid
    if GRID_HOOKS and GRID_HOOKS["on_some_labs"](codist, here()[1]):
        return GRID_HOOKS["redistribute"](D, codist)  # to a grid of some labs (subgrid)
    need(D, what)
    check_codist_arg(codist, what)
    src = D._codist
    lab, n = labs_for(src, what)
    target = complete(codist, D.shape, n)
    check_agree(what, D.shape, D.dtype, target)  # a target that differs between labs: one error, no hang
    if not (is_plain(src) and is_plain(target)) or D.mode != "replica":
        return reshard(D, target, what)  # halos, blocks, chunk maps, modes
    if target == src:
        return D.copy()
    new = np.empty(target.localShape(lab, n), dtype=D.dtype)
    redistribute_into(D, target, new, what)
    return type(D)._from_local(new, target)


def redistribute_into(D: CodistArray, target: Codistributor, new: np.ndarray, what: str = "redistribute") -> None:
    """This lab's part of ``D`` (plain layout, replica mode) in the plain layout ``target``
    (complete, of D's shape), written into ``new`` (of the part's shape; a view into a
    larger array is fine): the moves of ``redistribute``, without its checks."""
    lab, n = here()
    local = D._local
    if target == D._codist:
        np.copyto(new, local)
        return
    moves = _moves(D._codist, target, n, lab)
    moves.keep.run(new, local)
    if n == 1 or _exchange_shared(new, local, moves, lab, what):
        return
    _exchange_alltoallv(new, local, moves, lab, what)


class _Moves(NamedTuple):
    """What one lab does in a redistribution, worked out once per pair of layouts:
    ``keep`` copies its own elements; ``sends[k]``/``recvs[k]`` (lab k+1) give the
    element count, the chunk's shape and the copies into and out of a packed chunk;
    ``src_shapes[k]`` is the shape of lab k+1's old part."""
    keep: RegionCopy
    sends: list
    recvs: list
    src_shapes: list


def distributed_along(D: Any, dim: int, partition: list[int] | None = None) -> Any:
    """``D`` in a 1-D layout along dimension ``dim`` (1-based), with ``partition`` if
    given: ``D`` itself when it is laid out so already, else redistributed."""
    c = D.codistributor
    if isinstance(c, codistributor1d) and c.Dimension == dim and (partition is None or c.Partition == partition):
        return D
    return redistribute(D, codistributor1d(dim, partition, tuple(D.shape)))


@functools.lru_cache(maxsize=16)
def _moves(src: Codistributor, target: Codistributor, n: int, lab: int) -> _Moves:
    plan = transfer_regions(src, target, n, lab=lab)
    new_shape = target.localShape(lab, n)
    src_shapes = [src.localShape(k, n) for k in range(1, n + 1)]
    whole = lambda t: [None] * len(t.shape)
    sends = [(t.size, t.shape, RegionCopy(whole(t), t.src_index, t.shape, src_shapes[lab - 1]))
             for t in plan[lab - 1]]
    recvs = [(t.size, t.shape, RegionCopy(t.dst_index, whole(t), new_shape, t.shape))
             for t in (plan[k][lab - 1] for k in range(n))]
    mine = plan[lab - 1][lab - 1]
    keep = RegionCopy(mine.dst_index, mine.src_index, new_shape, src_shapes[lab - 1])
    return _Moves(keep, sends, recvs, src_shapes)


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
    share one machine: each lab packs what each other lab needs from its old part into
    its own segment (a chunk per lab, the chunks' offsets in a header), and then unpacks
    its chunks straight from the other labs' segments into its new part. A moved element
    is copied twice and a kept one once, as by ``Alltoallv`` (MPI's own shared-memory
    path), against four for pack, ``Alltoallv`` and unpack (and against two for every
    element when each lab copied its whole old part in); only moved elements enter the
    window, whose segments hold one old part and the header. False (nothing done) when
    there is no staging window; every lab gets the same answer."""
    dtype, item = local.dtype, local.dtype.itemsize
    n = len(moves.sends)
    head = _align(8 * n)
    st = comm.staging([head + math.prod(shape) * item for shape in moves.src_shapes], what)
    if st is None:
        return False
    seg = st.segment(lab - 1)
    offsets = np.zeros(n, dtype=np.int64)
    at = head
    for k, (size, shape, pack) in enumerate(moves.sends):
        if k != lab - 1 and size:
            offsets[k] = at
            pack.run(seg[at:at + size * item].view(dtype).reshape(shape), local)
            at += size * item  # aligned for the dtype: whole cache lines of header, whole elements
    seg[:8 * n].view(np.int64)[:] = offsets
    st.sync(what)
    for k, (size, shape, unpack) in enumerate(moves.recvs):
        if k != lab - 1 and size:
            other = st.segment(k)
            at = int(other[:8 * n].view(np.int64)[lab - 1])
            unpack.run(new, other[at:at + size * item].view(dtype).reshape(shape))
    st.sync(what)  # no lab writes its segment again while another still reads it
    return True


def _align(nbytes: int) -> int:
    """``nbytes`` rounded up to 64 (whole cache lines)."""
    return 64 * math.ceil(nbytes / 64)


def _assemble(shape: tuple, dtype: np.dtype, codist: Codistributor, parts: list) -> np.ndarray:
    """The global array from ``parts`` (lab order) laid out by ``codist``."""
    n = numlabs_of(codist)
    out = np.empty(shape, dtype=dtype)
    for lab in range(1, n + 1):
        part = parts[lab - 1]
        if part.size:
            put(out, codist.localSelection(lab, n), part)
    return out


def gather(D: Any, lab: int | None = None) -> Any:
    """The whole array as a numpy array.

    On a lab: ``gather(D)`` gives it to every lab, ``gather(D, lab)`` to that lab only
    (the others get an empty array); one collective. At the client, ``gather`` of a
    ``distributed`` array fetches it from the labs. Anything else is returned as is.
    """
    if not isinstance(D, CodistArray):
        hook = getattr(type(D), "_spmdlab_gather", None)
        if hook is not None:
            to_lab = getattr(type(D), "_spmdlab_gather_to", None)  # a sparse codistributed matrix
            if lab is not None and to_lab is not None:
                return to_lab(D, lab)
            if lab is not None:
                raise TypeError("gather(D, lab) is for codistributed arrays inside spmd; "
                                "at the client use gather(D)")
            return hook(D)
        return D
    what = "gather" if lab is None else f"gather(D, {lab})"
    codist = D._codist
    me, n = labs_for(codist, what)
    root = None if lab is None else check_lab(lab, n, "lab") - 1
    if not is_plain(codist) or D.mode != "replica":
        D = reshard(D, default_layout(tuple(D.shape), n), what)
        codist = D._codist
    shape, dtype = D.shape, D.dtype
    if n == 1:
        return np.array(D._local, copy=True).reshape(shape)
    item = dtype.itemsize
    counts = np.array([math.prod(codist.localShape(k, n)) * item for k in range(1, n + 1)], dtype=np.int64)
    displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    send = as_bytes(D._local)
    receiving = root is None or root == me - 1
    MPI = comm.MPI
    c = comm.block()
    whole = concatenates(codist, shape)
    result = None
    if receiving:
        if whole:
            result = np.empty(shape, dtype=dtype)
            recv = as_bytes(result) if result.size and item else EMPTY_BYTES
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
    assert recv is not None  # receiving
    parts = [recv[o:o + k].view(dtype).reshape(codist.localShape(lab_, n))
             for lab_, (o, k) in enumerate(zip(displs, counts), start=1)]
    return _assemble(shape, dtype, codist, parts)


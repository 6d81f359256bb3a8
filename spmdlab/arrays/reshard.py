"""Moving arrays between any layouts, halo updates and modes.

MATLAB's layouts store every element once, in one array per lab; ``transfer`` moves
those. The layouts from Dagger.jl and CuPy and the halo layouts may store an element on
several labs (halo cells, overlapping chunks) and give a lab several arrays, and an
array may hold partial values (``mode``). Here every layout is read through
``chunkSelections`` and ``ownedPieces`` (``pieces``), and data moves point to point
between the labs that exchange something, on the library's own communicator:

- ``reshard(D, target)``: D in any layout and mode, as a replica-mode array in
  ``target``; in a combining mode the partial values are combined as they arrive.
- ``updateHalos(D)``: each halo cell (each overlap of a chunk map) refreshed from its
  owner: messages only between neighbours.
- ``changeMode(D, mode)``: CuPy's ``change_mode``.
- ``plain(D)``: D in a layout the operations below understand (a 1d layout without
  halo: a view of the interior, no copy; otherwise one reshard to the default layout).
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..lab import lazy_comm as comm
from ..layouts.codistributor import codistributor1d
from ..layouts.moves import LabMoves, lab_moves
from ..layouts.regions import product_index, sel_len, take
from .base import Chunks, CodistArray, check_mode, here, is_plain, need, parts_of
from .collectives import allreduce
from .layout import default_layout, labs_of

__all__ = ["reshard", "updateHalos", "changeMode", "plain", "identity", "COMBINE"]

COMBINE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
_TAG = 15


def identity(mode: str, dtype: np.dtype) -> Any:
    """The value that leaves others unchanged when combined in ``mode``."""
    if mode == "sum":
        return 0
    if mode == "prod":
        return 1
    big = mode == "min"
    if dtype.kind == "b":
        return big
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if big else info.min
    return np.inf if big else -np.inf


def _view(a: np.ndarray, index: tuple) -> np.ndarray | None:
    """``a`` at ``index`` as a view when every selection is a slice, else None."""
    if all(isinstance(s, slice) for s in index):
        return a[index]
    return None


def _put(dst: np.ndarray, index: tuple, value: np.ndarray, op: Any) -> None:
    view = _view(dst, index)
    if view is not None:
        if op is None:
            np.copyto(view, value.reshape(view.shape), casting="unsafe")
        else:
            op(view, value.reshape(view.shape), out=view)
        return
    ix = product_index(index)
    dst[ix] = value.reshape(dst[ix].shape) if op is None else op(dst[ix], value.reshape(dst[ix].shape))


def exchange(src_parts: list, dst_parts: list, moves: LabMoves, op: Any, what: str) -> None:
    """Carry out ``moves``: this lab's own moves are copies; with each lab it exchanges
    with, one message each way (sent straight from the array and received straight into
    place when the region is one contiguous block). ``op`` combines incoming values with
    those in place (None: they replace them)."""
    for m in moves.own:
        _put(dst_parts[m.dst_chunk], m.dst_index, take(src_parts[m.src_chunk], m.src_index), op)
    if not moves.peers:
        return
    dtype = (dst_parts or src_parts)[0].dtype
    c = comm.private_comm(what)
    BYTE = comm.MPI.BYTE
    requests, buffers, unpack = [], [], []
    for p in moves.peers:
        if p.recvs:
            buf = dst_parts[p.recv_at[0]][p.recv_at[1]] if op is None and p.recv_at is not None else None
            if buf is None or not buf.flags.c_contiguous:
                buf = np.empty(p.recv_size, dtype=dtype)
                unpack.append((buf, p.recvs))
            requests.append(c.Irecv([buf, BYTE], p.peer, _TAG))
            buffers.append(buf)
        if p.sends:
            buf = src_parts[p.send_at[0]][p.send_at[1]] if p.send_at is not None else None
            if buf is None or not buf.flags.c_contiguous:
                buf = np.empty(p.send_size, dtype=dtype)
                pos = 0
                for m in p.sends:
                    np.copyto(buf[pos:pos + m.size].reshape(m.shape), take(src_parts[m.src_chunk], m.src_index))
                    pos += m.size
            requests.append(c.Isend([buf, BYTE], p.peer, _TAG))
            buffers.append(buf)
    comm.wait_every(requests, what, keep=tuple(buffers))
    for buf, ms in unpack:
        pos = 0
        for m in ms:
            _put(dst_parts[m.dst_chunk], m.dst_index, buf[pos:pos + m.size], op)
            pos += m.size


def _empty_parts(codist: Any, lab: int, n: int, dtype: np.dtype, fill: Any = None) -> list:
    shapes = [tuple(sel_len(s) for s in sel) for sel in codist.chunkSelections(lab, n)]
    if fill is None:
        return [np.empty(shape, dtype=dtype) for shape in shapes]
    return [np.full(shape, fill, dtype=dtype) for shape in shapes]


def _wrap(like: CodistArray, parts: list, codist: Any, n: int, mode: str = "replica") -> Any:
    local = Chunks(parts, like.dtype) if codist.isChunked(n) else parts[0]
    return type(like)._from_local(local, codist, mode)


@functools.lru_cache(maxsize=64)
def _whole_on_every_lab(codist: Any, n: int) -> bool:
    full = tuple(slice(0, s) for s in codist.GlobalSize)
    return all(len(sels) == 1 and all(isinstance(x, slice) and x == f for x, f in zip(sels[0], full))
               for sels in (codist.chunkSelections(k, n) for k in range(1, n + 1)))


@functools.lru_cache(maxsize=64)
def _copies(codist: Any, n: int) -> float:
    """How many copies of each element a layout stores, on average."""
    size = math.prod(codist.GlobalSize)
    stored = sum(math.prod(sel_len(x) for x in sel) for k in range(1, n + 1) for sel in codist.chunkSelections(k, n))
    return stored / size if size else 1.0


def reshard(D: CodistArray, target: Any, what: str = "redistribute") -> Any:
    """``D`` (any layout, any mode) as a replica-mode array laid out by the complete
    codistributor ``target``. Each element goes from its one owner to every lab that
    stores it; in a combining mode every stored value goes, and they are combined."""
    lab, n = labs_of(D, what)
    combine = D.mode != "replica"
    if combine and target == D._codist and _whole_on_every_lab(target, n):
        # every lab holds the whole array once (partial histograms): one Allreduce
        total = allreduce(parts_of(D)[0], D.mode, what)
        return _wrap(D, [total], target, n)
    if combine and not is_plain(target) and _copies(D._codist, n) > 2:
        # many copies of each element: combine them once, at one owner each, then send
        # the sums out (Allreduce's reduce-scatter and allgather), rather than every copy
        # to every holder
        middle = reshard(D, default_layout(tuple(D.shape), n), what)
        return reshard(middle, target, what)
    op = COMBINE[D.mode] if combine else None
    moves = lab_moves(D._codist, target, n, lab, combine, False)
    dst = _empty_parts(target, lab, n, D.dtype, identity(D.mode, D.dtype) if combine else None)
    exchange(parts_of(D), dst, moves, op, what)
    return _wrap(D, dst, target, n)


def updateHalos(D: Any) -> Any:
    """Refresh every halo cell of ``D`` (and every overlapping copy, for a chunk map in
    replica mode) from the lab that owns it, in place; returns ``D``.

    Only labs that hold each other's cells exchange messages (the neighbours, for a
    halo layout). ``D`` must be in replica mode.

    >>> with spmd():                                                    # doctest: +SKIP
    ...     U = codistributed.zeros(100, codist=codistributor1d(1, None, (100,), halo=1))
    ...     updateHalos(U)                # U's local part: its 25 cells and 1 each side
    """
    what = "updateHalos"
    known = getattr(D, "_halo_moves", None)  # (layout, (lab, numlabs), moves, local, direct)
    if known is None or known[0] is not D._codist or known[1] != here() or D._mode != "replica" \
            or known[3] is not D._local:
        D = need(D, what)
        lab, n = labs_of(D, what)
        if D.mode != "replica":
            raise ValueError(f"{what}: the array is in {D.mode!r} mode, whose copies are partial "
                             "values; use changeMode(D, 'replica') to combine them")
        if is_plain(D._codist):
            return D
        moves = lab_moves(D._codist, D._codist, n, lab, False, True)
        direct = None if isinstance(D._local, list) else _direct([D._local], moves)  # a list may change
        known = D._halo_moves = (D._codist, (lab, n), moves, D._local, direct)
    direct = known[4]
    if direct is None:
        parts = parts_of(D)
        exchange(parts, parts, known[2], None, what)
        return D
    # the common case, every halo one contiguous block: straight from and into the array
    c = comm.private_comm(what)
    BYTE = comm.MPI.BYTE
    requests = []
    for peer, recv, send in direct:
        if recv is not None:
            requests.append(c.Irecv([recv, BYTE], peer, _TAG))
        if send is not None:
            requests.append(c.Isend([send, BYTE], peer, _TAG))
    comm.wait_every(requests, what, keep=(D._local,))
    return D


def _direct(parts: list, moves: LabMoves) -> list | None:
    """``[(peer, region received, region sent)]`` as views of ``parts`` when this lab's
    moves are one contiguous region each way per peer and none to itself; else None."""
    if moves.own:
        return None
    out = []
    for p in moves.peers:
        recv = parts[p.recv_at[0]][p.recv_at[1]] if p.recvs and p.recv_at is not None else None
        send = parts[p.send_at[0]][p.send_at[1]] if p.sends and p.send_at is not None else None
        if (p.recvs and (recv is None or not recv.flags.c_contiguous)) or \
                (p.sends and (send is None or not send.flags.c_contiguous)):
            return None
        out.append((p.peer, recv, send))
    return out


def changeMode(D: Any, mode: str) -> Any:
    """``D`` in another mode (CuPy's ``change_mode``), as a new array.

    To ``'replica'``: the copies of each element are combined (one exchange); from
    ``'replica'`` to a combining mode, each element keeps its value in the one chunk
    that owns it and the other copies take the mode's identity (no communication).
    """
    what = "changeMode"
    D = need(D, what)
    check_mode(mode, what)
    lab, n = labs_of(D, what)
    R = D if D.mode == "replica" else reshard(D, D._codist, what)
    if mode == "replica":
        return R if R is not D else D.copy()
    parts = parts_of(R)
    out = _empty_parts(D._codist, lab, n, D.dtype, identity(mode, D.dtype))
    for k, _, local in D._codist.ownedPieces(lab, n):
        _put(out[k], local, take(parts[k], local), None)
    return _wrap(D, out, D._codist, n, mode)


def plain(D: CodistArray, what: str = "the operation") -> Any:
    """``D`` as an array in a plain layout (``base.is_plain``), replica mode: a 1d layout
    with a halo gives the view of its interior (no copy, no communication); other layouts
    are moved to the default layout of D's shape."""
    c = D._codist
    if is_plain(c) and D.mode == "replica":
        return D
    lab, n = labs_of(D, what)
    if D.mode == "replica" and isinstance(c, codistributor1d):
        base = codistributor1d(c.Dimension, c.Partition, c.GlobalSize)
        pieces = c.ownedPieces(lab, n)
        local = D._local[product_index(pieces[0][2])] if pieces else np.empty(base.localShape(lab, n), D.dtype)
        return type(D)._from_local(local, base)
    return reshard(D, default_layout(tuple(D.shape), n), what)

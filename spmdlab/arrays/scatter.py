"""Moving arbitrary elements between labs: the inspector–executor gather and scatter.

This is the classic form of irregular distributed access: PETSc's ``VecScatter`` and
the inspector–executor of Saltz et al.'s PARTI/CHAOS (Saltz, Mirchandaney, Crowley,
"Run-time parallelization and scheduling of loops", IEEE TC 1991). The *inspector*
maps every global index a lab asks for to its owner and its position in the owner's
local part with the layout's own arithmetic (no lookup tables, no communication:
``owners_offsets``), then groups the requests by owner (``Schedule``); the *executor*
moves them with ONE ``Alltoallv`` of positions and ONE of values back (``pull``, for
``D[idx]``), or one of positions and one of values to the owners (``push``, for
``D[idx] = v``). Counts travel first in one small allgather. The array is never
gathered: every lab holds its part, its own requests and what it serves.

The owners' local kernels are numpy's ``take`` and fancy assignment; a lab's requests to
itself never go through MPI. Pushed values arrive at an owner in lab order and, from
each lab, in the order that lab listed them, so when the labs list their requests in
the C order of the index (lab 1 the first ones, ...), repeated indices keep numpy's
"last write wins".
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..lab import lazy_comm as comm
from ..layouts.codistributor import Codistributor, codistributor1d
from .base import here
from .collectives import allgather, as_bytes

__all__ = ["owners_offsets", "Schedule", "alltoallv", "pull", "pull_replicated", "push", "local_take", "local_put",
           "take_clipped"]

_SMALL_POOL = 16  # up to this many labs, requests are grouped by one pass per owner, not a sort
_NONE = np.empty(0, dtype=np.intp)


def owners_offsets(codist: Codistributor, G: tuple, coords: list, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(owner, offset, shift)`` of the elements at global coordinates ``coords`` (one
    non-negative int array per dimension, broadcastable together): the 0-based lab that
    owns each (flattened, C order of the broadcast shape), and its flat C-order position
    in that lab's local part, ``offset - shift[owner]`` (for a layout distributed along
    the first dimension ``offset`` is the global flat index, so a 1-D index needs no
    arithmetic at all). Pure layout arithmetic."""
    shape = np.broadcast_shapes(*(np.shape(c) for c in coords))
    zero = np.zeros(n, dtype=np.int64)
    if isinstance(codist, codistributor1d):
        assert codist.Dimension is not None
        k = int(codist.Dimension) - 1
        part = np.asarray(codist.Partition, dtype=np.int64)
        bounds = np.concatenate(([0], np.cumsum(part))).astype(np.int64)
        ck = np.asarray(coords[k], dtype=np.int64)
        owner = _owner_1d(ck, bounds, n)
        inner = math.prod(G[k + 1:])
        after = _flat(coords[k + 1:], G[k + 1:]) if k < len(G) - 1 else 0
        if k == 0:  # the global flat index; lab q's part starts at bounds[q] * inner
            off = ck * inner + after if inner != 1 else ck
            return _spread(owner, shape), _spread(off, shape), bounds[:-1] * inner
        off = ck - bounds[:-1][owner] if n > 1 else ck
        off = off + _flat(coords[:k], G[:k]) * (part[owner] if n > 1 else int(part[0]))
        return _spread(owner, shape), _spread(off * inner + after, shape), zero
    lab, (li, lj) = codist.globalToLocal((np.asarray(coords[0]), np.asarray(coords[1])), n)
    ncols = np.array([codist.localShape(q, n)[1] for q in range(1, n + 1)], dtype=np.int64)
    owner = np.asarray(lab, dtype=np.int64) - 1
    off = np.asarray(li, dtype=np.int64) * ncols[owner] + np.asarray(lj, dtype=np.int64)
    return _spread(owner, shape), _spread(off, shape), zero


def _owner_1d(ck: np.ndarray, bounds: np.ndarray, n: int) -> np.ndarray:
    if n == 1:
        return np.zeros(ck.shape, dtype=np.intp)
    if n == 2:
        return (ck >= bounds[1]).view(np.int8)
    return np.searchsorted(bounds[1:-1], ck, side="right")


def _flat(coords: list, G: tuple) -> Any:
    """C-order flat index over the dimensions ``G`` of broadcastable coordinates."""
    out: Any = 0
    for c, s in zip(coords, G):
        out = out * s + np.asarray(c, dtype=np.int64)
    return out


def _spread(a: Any, shape: tuple) -> np.ndarray:
    a = np.asarray(a)
    if a.shape != shape:
        a = np.broadcast_to(a, shape)
    return np.ascontiguousarray(a).reshape(-1)


def local_take(local: np.ndarray, off: np.ndarray) -> np.ndarray:
    """The elements at flat C-order positions ``off`` of a local part (no copy of it)."""
    if local.flags.c_contiguous:
        return np.take(local.reshape(-1), off)
    return local[np.unravel_index(off, local.shape)]


def local_put(local: np.ndarray, off: np.ndarray, values: np.ndarray) -> None:
    """``local.flat[off] = values`` with numpy's fancy assignment (the last of repeated
    positions wins), for any memory order of ``local``."""
    if off.size == 0:
        return
    if local.flags.c_contiguous:
        local.reshape(-1)[off] = values
    else:
        local[np.unravel_index(off, local.shape)] = values


class Schedule:
    """The inspector's product for this lab's requests: which positions go to which lab
    (grouped by owner, each group in the order of the requests), and the counts every lab
    sends every other (one allgather)."""

    def __init__(self, owner: np.ndarray, n: int, what: str, own: bool = True) -> None:
        lab, _ = here()
        self.n, self.lab, self.what = n, lab, what
        if n <= _SMALL_POOL:  # one pass per owner (int8 compares), skipping this lab's own unless asked
            self.groups = [np.flatnonzero(owner == q) if own or q != lab - 1 else _NONE for q in range(n)]
            counts = np.array([g.size for g in self.groups], dtype=np.int64)
        else:
            order = np.argsort(owner, kind="stable")
            counts = np.bincount(owner, minlength=n).astype(np.int64)
            cuts = np.concatenate(([0], np.cumsum(counts)))
            self.groups = [order[cuts[q]:cuts[q + 1]] for q in range(n)]
        self.matrix = allgather(counts, what) if n > 1 else counts.reshape(1, n)
        self.scounts = counts.copy()
        self.scounts[lab - 1] = 0  # this lab's own requests stay here
        self.rcounts = self.matrix[:, lab - 1].copy()
        self.rcounts[lab - 1] = 0

    def requests(self, off: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(own, served)``: the local positions this lab asks of itself, and those the
        other labs ask of it (in lab order): one Alltoallv."""
        own = off[self.groups[self.lab - 1]]
        if shift[self.lab - 1]:
            own -= shift[self.lab - 1]
        return own, self.exchange(self.outgoing(off, shift), forward=True)

    def outgoing(self, x: np.ndarray, shift: np.ndarray | None = None) -> np.ndarray:
        """``x`` (one value per request) grouped by owner, without this lab's own (less
        ``shift[owner]``)."""
        out = np.empty(int(self.scounts.sum()), dtype=x.dtype)
        pos = 0
        for q, g in enumerate(self.groups):
            if q != self.lab - 1 and g.size:
                seg = out[pos:pos + g.size]
                np.take(x, g, out=seg)
                if shift is not None and shift[q]:
                    seg -= shift[q]
                pos += g.size
        return out

    def exchange(self, send: np.ndarray, forward: bool) -> np.ndarray:
        """One Alltoallv: ``forward`` sends grouped requests (or values) to their owners;
        backward returns served values to the labs that asked."""
        s, r = (self.scounts, self.rcounts) if forward else (self.rcounts, self.scounts)
        recv = np.empty(int(r.sum()), dtype=send.dtype)
        if self.n > 1:  # (every lab calls the collective, even with nothing to move)
            alltoallv(send, s, recv, r, self.what)
        return recv


def alltoallv(send: np.ndarray, scounts: np.ndarray, recv: np.ndarray, rcounts: np.ndarray, what: str) -> None:
    """ONE ``Alltoallv`` of buffers (no pickling): ``scounts[q]`` elements of ``send`` (in
    lab order) to lab q, ``rcounts[p]`` from lab p into ``recv`` (in lab order); nonblocking
    and waited for interruptibly, so a lab that fails elsewhere aborts it."""
    item = send.dtype.itemsize
    sc, rc = np.asarray(scounts, np.int64) * item, np.asarray(rcounts, np.int64) * item
    sd = np.concatenate(([0], np.cumsum(sc)[:-1])).astype(np.int64)
    rd = np.concatenate(([0], np.cumsum(rc)[:-1])).astype(np.int64)
    sbuf = as_bytes(send) if send.size else np.empty(0, dtype=np.uint8)
    rbuf = as_bytes(recv) if recv.size else np.empty(0, dtype=np.uint8)
    BYTE = comm.MPI.BYTE
    req = comm.block().Ialltoallv([sbuf, (sc, sd), BYTE], [rbuf, (rc, rd), BYTE])
    comm.wait(req, what, keep=(sbuf, rbuf, sc, sd, rc, rd, send, recv))


def pull(local: np.ndarray, owner: np.ndarray, off: np.ndarray, shift: np.ndarray, n: int, what: str) -> np.ndarray:
    """The elements ``(owner, off, shift)`` (from ``owners_offsets``) of the array whose
    local part on this lab is ``local``, in the order asked: the executor of ``D[idx]``.

    This lab's own requests are read with ONE clipped ``take`` over all of them (the
    positions other labs own read some element of this part and are overwritten by the
    values that come back), so they need no grouping, no gather and no scatter; the
    others' requests go to their owners grouped by owner (one Alltoallv of positions,
    one of values back)."""
    if n == 1:
        return local_take(local, off - shift[0] if shift[0] else off)
    me = here()[0] - 1
    clipped = local.flags.c_contiguous or local.size == 0
    s = Schedule(owner, n, what, own=not clipped)
    asked = s.exchange(s.outgoing(off, shift), forward=True)
    back = s.exchange(local_take(local, asked), forward=False)
    if clipped:
        out = take_clipped(local, off, int(shift[me]))
    else:
        out = np.empty(off.size, dtype=local.dtype)
        mine = s.groups[me]
        out[mine] = local_take(local, off[mine] - shift[me] if shift[me] else off[mine])
    _place(out, s.groups, back, me)
    return out


def take_clipped(local: np.ndarray, off: np.ndarray, lo: int) -> np.ndarray:
    """``local.flat[off - lo]`` where that is inside the (C-contiguous) part, some element
    of it elsewhere: numpy's ``take(mode='clip')``, one pass and no bounds error."""
    if local.size == 0:
        return np.empty(off.size, dtype=local.dtype)
    return np.take(local.reshape(-1), off - lo if lo else off, mode="clip")


def _place(out: np.ndarray, groups: list, values: np.ndarray, me: int) -> None:
    """``out[groups[q]] = `` the values from lab q (``values`` in lab order, this lab's
    own group skipped)."""
    pos = 0
    for q, g in enumerate(groups):
        if q != me and g.size:
            out[g] = values[pos:pos + g.size]
            pos += g.size


def push(local: np.ndarray, owner: np.ndarray, off: np.ndarray, shift: np.ndarray, values: np.ndarray, n: int,
         what: str) -> None:
    """Write ``values`` (one per request, already of the local part's dtype) to the
    elements ``(owner, off)``: the executor of ``D[idx] = v``. Writes to one element land
    in lab order, then in each lab's request order (numpy's last write wins when the
    requests are listed in C order of the index)."""
    if n == 1:
        local_put(local, off - shift[0] if shift[0] else off, values)
        return
    s = Schedule(owner, n, what)
    own, served = s.requests(off, shift)
    got = s.exchange(s.outgoing(values), forward=True)
    # the own writes and the received ones, in lab order
    lab = s.lab
    cuts = np.concatenate(([0], np.cumsum(s.rcounts))).astype(np.int64)
    before = slice(0, int(cuts[lab - 1]))
    after = slice(int(cuts[lab - 1]), int(cuts[-1]))
    local_put(local, served[before], got[before])
    local_put(local, own, values[s.groups[lab - 1]])
    local_put(local, served[after], got[after])


def pull_replicated(local: np.ndarray, bounds: np.ndarray, idx: np.ndarray, rbounds: np.ndarray, n: int,
                    what: str) -> np.ndarray:
    """``D[idx]`` for a 1-D D (lab q holds ``bounds[q]:bounds[q+1]``) and a replicated,
    checked, non-negative 1-D ``idx``, the result by ``rbounds``: an inspector without
    communication (every lab has every request, so each works out both what it serves
    and where what it receives goes) and ONE Alltoallv of values.

    Lab q's result is ``idx[rbounds[q]:rbounds[q+1]]`` read from D. It reads those it owns
    with one clipped ``take``; for every other lab p it finds, with a range compare, the
    requests in p's slice that it owns (in p's order: they are grouped by asker already)
    and sends their values; what it receives from lab r goes to the positions of its own
    slice inside r's range. No position travels, no sort, no count exchange."""
    me = here()[0] - 1
    a, b = int(rbounds[me]), int(rbounds[me + 1])
    lo = int(bounds[me])
    mine = idx[a:b]
    out = take_clipped(local, mine, lo)
    served = [_inside(idx[int(rbounds[p]):int(rbounds[p + 1])], bounds, me) if p != me else _NONE
              for p in range(n)]
    scounts = np.array([x.size for x in served], dtype=np.int64)
    send = np.empty(int(scounts.sum()), dtype=local.dtype)
    pos = 0
    for p, x in enumerate(served):
        if x.size:
            at = np.take(idx[int(rbounds[p]):], x)
            if lo:
                at -= lo
            np.take(local, at, out=send[pos:pos + x.size])
            pos += x.size
    groups = [_inside(mine, bounds, q) if q != me else _NONE for q in range(n)]
    rcounts = np.array([g.size for g in groups], dtype=np.int64)
    recv = np.empty(int(rcounts.sum()), dtype=local.dtype)
    alltoallv(send, scounts, recv, rcounts, what)
    _place(out, groups, recv, me)
    return out


def _inside(x: np.ndarray, bounds: np.ndarray, q: int) -> np.ndarray:
    """The positions of ``x`` inside lab q's range ``bounds[q]:bounds[q+1]`` (one compare
    for the first and the last lab)."""
    lo, hi = int(bounds[q]), int(bounds[q + 1])
    if hi <= lo or x.size == 0:
        return _NONE
    if q == 0:
        return np.flatnonzero(x < hi)
    if q == bounds.size - 2:
        return np.flatnonzero(x >= lo)
    m = x >= lo
    m &= x < hi
    return np.flatnonzero(m)

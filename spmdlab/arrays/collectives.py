"""Collectives of the array operations, on the running block's communicator.

Every collective is a nonblocking MPI call waited with ``comm.wait`` (interruptible: an
abort ends the wait on every lab), and every lab calls them in the same order. Checks
that may fail on one lab only are exchanged first (``allgather_objects``, then
``raise_combined``), so every lab raises the same error and none is left waiting. With
one lab (and at the client) nothing is sent; MPI is imported only when a lab first
communicates (``runtime.lazy_comm``).
"""
from __future__ import annotations

import hashlib
import math
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..lab import lazy_comm as comm
from ..layouts.codistributor import Codistributor
from ..layouts.regions import ix
from .base import here
from .layout import local_sel

__all__ = ["EMPTY_BYTES", "contig", "as_bytes", "allreduce", "allgather", "allgatherv", "bcast",
           "allgather_objects", "raise_combined", "error_entry", "check_same_codist", "check_agree", "Exchange",
           "match", "fetch"]

EMPTY_BYTES = np.empty(0, dtype=np.uint8)

_HEADER_BYTES = 2048


def contig(x: Any) -> np.ndarray:
    """``x`` as a C-contiguous array, keeping 0-d arrays 0-d (unlike ascontiguousarray)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy(order="C")


def as_bytes(a: np.ndarray) -> np.ndarray:
    """An array's memory as a flat uint8 array (no copy when it is C-contiguous)."""
    a = contig(a)
    if a.size == 0 or a.dtype.itemsize == 0:
        return EMPTY_BYTES
    return a.reshape(-1).view(np.uint8)


def allreduce(x: np.ndarray, how: str, what: str) -> np.ndarray:
    """The elementwise sum/prod/min/max of every lab's ``x`` (same shape and dtype)."""
    send = contig(x)
    if here()[1] == 1:
        return send.copy()
    MPI = comm.MPI
    op = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}[how]
    recv = np.empty_like(send)
    if send.size == 0:
        return recv
    comm.wait(comm.block().Iallreduce(send, recv, op), what, keep=(send, recv))
    return recv


def allgather(x: np.ndarray, what: str) -> np.ndarray:
    """``(numlabs,) + x.shape``: every lab's ``x`` (same shape and dtype on every lab)."""
    _, n = here()
    x = contig(x)
    out = np.empty((n,) + x.shape, dtype=x.dtype)
    if n == 1:
        out[0] = x
        return out
    if x.nbytes == 0:
        return out
    send = as_bytes(x)
    recv = out.reshape(-1).view(np.uint8)
    MPI = comm.MPI
    comm.wait(comm.block().Iallgather([send, MPI.BYTE], [recv, MPI.BYTE]), what, keep=(send, out))
    return out


def allgatherv(x: np.ndarray, counts: Sequence[int] | np.ndarray, what: str) -> np.ndarray:
    """Every lab's ``x`` stacked along the first axis in lab order, on every lab: lab k
    gives ``counts[k-1]`` rows (elements of a 1-D ``x``), with the same trailing shape and
    dtype on every lab (one ``Iallgatherv``)."""
    _, n = here()
    x = np.ascontiguousarray(x)
    if n == 1:
        return x.copy()
    tail = x.shape[1:]
    out = np.empty((int(np.sum(counts)),) + tail, dtype=x.dtype)
    if out.nbytes == 0:
        return out
    c = np.asarray(counts, dtype=np.int64) * (math.prod(tail) * x.dtype.itemsize)
    d = np.concatenate(([0], np.cumsum(c)[:-1])).astype(np.int64)
    send = as_bytes(x)
    recv = out.reshape(-1).view(np.uint8)
    MPI = comm.MPI
    comm.wait(comm.block().Iallgatherv([send, MPI.BYTE], [recv, (c, d), MPI.BYTE]), what,
              keep=(send, out, c, d))
    return out


def bcast(x: np.ndarray, root: int, what: str) -> np.ndarray:
    """Lab ``root``'s ``x`` on every lab (``x`` has the same shape/dtype everywhere)."""
    _, n = here()
    x = np.array(x, copy=True, order="C")
    if n == 1 or x.nbytes == 0:
        return x
    MPI = comm.MPI
    buf = x.reshape(-1).view(np.uint8)
    comm.wait(comm.block().Ibcast([buf, MPI.BYTE], root - 1), what, keep=(x,))
    return x



def allgather_objects(obj: Any, what: str) -> list:
    """Every lab's small picklable ``obj``, in lab order, with ONE collective (a
    fixed-size ``allgather``; an object too big for it arrives as its truncated repr)."""
    _, n = here()
    if n == 1:
        return [obj]
    payload = pickle.dumps(obj, 5)
    if len(payload) + 8 > _HEADER_BYTES:
        payload = pickle.dumps(("too-big", repr(obj)[:200]), 5)
    buf = np.zeros(_HEADER_BYTES, dtype=np.uint8)
    buf[:8] = np.frombuffer(np.int64(len(payload)).tobytes(), dtype=np.uint8)
    buf[8:8 + len(payload)] = np.frombuffer(payload, dtype=np.uint8)
    result = []
    for chunk in allgather(buf, what):
        length = int(np.frombuffer(chunk[:8].tobytes(), dtype=np.int64)[0])
        result.append(pickle.loads(chunk[8:8 + length].tobytes()))
    return result


def raise_combined(errors: list, what: str) -> None:
    """Raise one error, the same on every lab, if any lab reported one."""
    bad = [(k + 1, e) for k, e in enumerate(errors) if e is not None]
    if not bad:
        return
    kinds = {e[0] for _, e in bad}
    messages = {e[1] for _, e in bad}
    if len(messages) == 1:
        labs = [lab for lab, _ in bad]
        where = "every lab" if len(labs) == len(errors) else \
            ("lab " if len(labs) == 1 else "labs ") + ", ".join(map(str, labs))
        text = f"{what}: {next(iter(messages))} (on {where})"
    else:
        text = f"{what}: " + "; ".join(f"lab {lab}: {e[1]}" for lab, e in bad[:4])
        if len(bad) > 4:
            text += f"; ... ({len(bad)} labs)"
    raise (TypeError if kinds == {"TypeError"} else ValueError)(text)


def error_entry(message: str | None, kind: str = "ValueError") -> tuple | None:
    """A lab's entry for ``raise_combined``: None, or the error as (``kind``, text)."""
    return None if message is None else (kind, message[:600])


def check_same_codist(codists: list, what: str) -> None:
    """Raise (on every lab alike) unless every lab passed the same codistributor."""
    if any(c != codists[0] for c in codists[1:]):
        detail = "; ".join(f"lab {k + 1}: {c!r}" for k, c in enumerate(codists))
        raise ValueError(f"{what}: use the same codistributor on every lab; got {detail}")



def check_agree(what: str, shape: tuple, dtype: Any, codist: Codistributor) -> None:
    """Raise, on every lab alike, unless every lab asked for the same array: the same
    size, dtype and layout. For constructors that make no collective of their own: ONE
    ``Iallgather`` of an 8-byte digest; only when digests differ are the descriptions
    themselves gathered (a second collective, on the error path) to name the labs."""
    _, n = here()
    if n == 1:
        return
    mine = (tuple(int(k) for k in shape), np.dtype(dtype).str, codist)
    digest = np.frombuffer(hashlib.blake2b(pickle.dumps(mine, 4), digest_size=8).digest(), dtype=np.int64)
    digests = allgather(digest, what)
    if (digests == digests[0]).all():
        return
    infos = allgather_objects(mine, what)
    if all(info == infos[0] for info in infos[1:]):
        return  # equal values that pickle differently
    groups: dict = {}
    for k, (size, dt, c) in enumerate(infos):
        groups.setdefault(repr((size, dt, c)), (size, dt, c, []))[3].append(k + 1)
    detail = "; ".join(f"lab{'s' if len(labs) > 1 else ''} {', '.join(map(str, labs))}: size {size}, "
                       f"dtype {np.dtype(dt)}, {c!r}" for size, dt, c, labs in groups.values())
    raise ValueError(f"{what}: every lab must ask for the same size, dtype and layout; got {detail}")



class Exchange:
    """One nonblocking all-to-all of byte chunks: ``sends[k]`` goes to lab k+1, and
    ``rcounts[k]`` bytes come from lab k+1 (both sides know the sizes from metadata).

    Until ``finish`` the exchange (request and buffers) is tracked in ``spmdlab.comm``,
    so if the block is aborted while it is pending (SUMMA keeps one exchange ahead), the
    next renewal abandons it and MPI never writes into freed memory."""

    def __init__(self, sends: list, rcounts: Sequence[int], what: str) -> None:
        chunks = [EMPTY_BYTES if s is None else as_bytes(s) for s in sends]
        self.scounts = np.array([c.size for c in chunks], dtype=np.int64)
        self.sdispl = np.concatenate(([0], np.cumsum(self.scounts)[:-1])).astype(np.int64)
        self.sendbuf: np.ndarray | None = np.concatenate(chunks) if self.scounts.sum() else EMPTY_BYTES
        self.rcounts = np.asarray(rcounts, dtype=np.int64)
        self.rdispl = np.concatenate(([0], np.cumsum(self.rcounts)[:-1])).astype(np.int64)
        self.recvbuf = np.empty(int(self.rcounts.sum()), dtype=np.uint8)
        self.what = what
        MPI = comm.MPI
        self.request = comm.block().Ialltoallv(
            [self.sendbuf, (self.scounts, self.sdispl), MPI.BYTE],
            [self.recvbuf, (self.rcounts, self.rdispl), MPI.BYTE])
        comm.track(self, self.request, (self.sendbuf, self.recvbuf, self.scounts, self.sdispl, self.rcounts,
                                        self.rdispl))

    def finish(self) -> list:
        comm.wait(self.request, self.what, keep=(self.sendbuf, self.recvbuf, self.scounts,
                                                 self.sdispl, self.rcounts, self.rdispl))
        comm.untrack(self)
        self.sendbuf = None
        return [self.recvbuf[o:o + c] for o, c in zip(self.rdispl, self.rcounts)]


def match(want: np.ndarray, have: Any) -> tuple:
    """Positions in ``want`` whose global index is in ``have`` (a slice or an increasing
    array), and where in ``have``."""
    want = np.asarray(want)
    if isinstance(have, slice):
        found = np.flatnonzero((want >= have.start) & (want < have.stop))
        return found, (want[found] - have.start).astype(np.intp)
    if have.size == 0 or want.size == 0:
        e = np.empty(0, dtype=np.intp)
        return e, e
    pos = np.searchsorted(have, want)
    ok = pos < have.size
    ok[ok] = have[pos[ok]] == want[ok]
    return np.flatnonzero(ok), pos[ok]


def fetch(src_local: np.ndarray, src: Codistributor, want: Callable[[int], tuple], what: str) -> np.ndarray:
    """This lab's block ``S[np.ix_(*want(me))]`` of the array S laid out by ``src``
    (this lab holding ``src_local``). ``want(q)`` gives, for every lab q, per-dimension
    global indices into S (any order, no repeats needed); one all-to-all."""
    lab, n = here()
    mine = want(lab)
    dtype = src_local.dtype
    out = np.empty(tuple(len(w) for w in mine), dtype=dtype)
    sends: list = [None] * n
    rcounts = [0] * n
    mine_ix = local_sel(src, lab, n)
    for q in range(1, n + 1):
        wq = mine if q == lab else want(q)
        pairs = [match(np.asarray(w), h) for w, h in zip(wq, mine_ix)]
        block = src_local[ix([p[1] for p in pairs])] if all(p[1].size for p in pairs) else None
        if q == lab:
            if block is not None:
                out[ix([p[0] for p in pairs])] = block
        else:
            sends[q - 1] = block
    recv_pairs = {}
    for p in range(1, n + 1):
        if p == lab:
            continue
        pairs = [match(np.asarray(w), h) for w, h in zip(mine, local_sel(src, p, n))]
        shape = tuple(len(x[0]) for x in pairs)
        recv_pairs[p] = (pairs, shape)
        rcounts[p - 1] = math.prod(shape) * dtype.itemsize
    if n > 1:
        chunks = Exchange(sends, rcounts, what).finish()
        for p, (pairs, shape) in recv_pairs.items():
            if rcounts[p - 1]:
                out[ix([x[0] for x in pairs])] = chunks[p - 1].view(dtype).reshape(shape)
    return out


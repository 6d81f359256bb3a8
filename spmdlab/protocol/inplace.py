"""Array parts that cross between the client and the labs without a staging copy.

A ``Part`` wraps a region of an array (a view: contiguous or not) for the wire: pickled
(protocol 5), its bytes travel out of band, in C order, written by the channel straight
from the region's memory in contiguous pieces (``sendmsg``, gather I/O), so a column of a
client matrix is sent without being copied out first. On the other side it unpickles to
a plain array over the received buffer, or, when the receiver named the place the bytes
belong (``Channel.recv(place=...)``: a region of the client's result), the channel reads
them straight into that region (``recvmsg_into``, scatter I/O) and the part unpickles to
``PLACED``. The classic form is the zero-copy message path of MPI implementations
(vectored I/O on the region's contiguous runs instead of packing).
"""
from __future__ import annotations

import pickle
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["Part", "PLACED", "Pieces", "pieces", "MIN_PIECE", "IOV_MAX", "strided_regions"]

MIN_PIECE = 512  # bytes: regions whose contiguous runs are shorter are packed (one copy) instead
IOV_MAX = 1024  # pieces per sendmsg/recvmsg_into call (Linux's UIO_MAXIOV)


class _Placed:
    """What a part received straight into its place unpickles to."""

    def __repr__(self) -> str:
        return "PLACED"

    def __reduce__(self) -> str:
        return "PLACED"


PLACED = _Placed()


class Part:
    """A region of an array, sent without a staging copy; unpickles to an ndarray (or
    ``PLACED``)."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __reduce_ex__(self, protocol: Any) -> tuple:
        a = self.array
        if a.dtype.hasobject:
            return _rebuild, (None, a.shape, a.dtype, np.ascontiguousarray(a))
        table = getattr(_outgoing, "table", None)
        if not a.flags.c_contiguous and protocol >= 5 and table is not None and pieces(a) is not None:
            # pickle takes contiguous buffers only: a ticket stands in, and the channel
            # writes the region's pieces in its place (``strided_regions``)
            ticket = bytearray(1)
            table[id(ticket)] = (ticket, a)
            return _rebuild, (pickle.PickleBuffer(ticket), a.shape, a.dtype, None)
        a = np.ascontiguousarray(a)  # short runs: one packing copy beats thousands of pieces
        return _rebuild, (pickle.PickleBuffer(a.data), a.shape, a.dtype, None)


_outgoing = threading.local()


class strided_regions:  # lower case: used as a function, ``with strided_regions() as table``
    """While pickling: ``{id(ticket): (ticket, region)}`` of the strided parts pickled, whose
    out-of-band buffer is a one-byte ticket standing for the region's bytes. (A class, not
    a ``contextmanager``: it is on every message's path, and a generator costs µs there.)"""

    def __enter__(self) -> dict:
        table: dict = {}
        _outgoing.table = table
        return table

    def __exit__(self, *exc: Any) -> None:
        _outgoing.table = None


def _rebuild(buf: Any, shape: tuple, dtype: np.dtype, whole: Any) -> Any:
    if whole is not None:
        return whole
    if buf is PLACED:
        return PLACED
    return np.frombuffer(buf, dtype=dtype).reshape(shape)


class Pieces:
    """A region's bytes in C order as ``count`` runs of ``run`` bytes at ``offsets`` into
    ``mem``; memoryviews are made a batch at a time (``batches``), so the bookkeeping
    stays a few hundred KB however many runs there are."""

    __slots__ = ("mem", "offsets", "run")

    def __init__(self, mem: memoryview, offsets: np.ndarray, run: int) -> None:
        self.mem, self.offsets, self.run = mem, offsets, run

    @property
    def nbytes(self) -> int:
        return int(self.offsets.size) * self.run

    def __len__(self) -> int:
        return int(self.offsets.size)

    def batches(self, size: int = IOV_MAX) -> Iterator[tuple[list[memoryview], int]]:
        """``(views, their bytes)`` of at most ``size`` pieces at a time."""
        mem, run = self.mem, self.run
        for start in range(0, self.offsets.size, size):
            views = [mem[o:o + run] for o in self.offsets[start:start + size].tolist()]
            yield views, run * len(views)

    def __iter__(self) -> Iterator[memoryview]:
        for views, _ in self.batches():
            yield from views


def pieces(region: Any) -> Pieces | None:
    """The region's bytes in C order as contiguous runs (one for a contiguous region), or
    None when its runs are shorter than ``MIN_PIECE`` bytes (or it has no contiguous run)."""
    a = region if isinstance(region, np.ndarray) else np.asarray(region)
    if a.size == 0:
        return Pieces(memoryview(b""), np.zeros(0, dtype=np.int64), 0)
    if a.flags.c_contiguous:
        return Pieces(a.reshape(-1).data.cast("B"), np.zeros(1, dtype=np.int64), a.nbytes)
    inner = a.ndim  # the trailing axes that are contiguous together
    step = a.itemsize
    while inner > 0 and (a.shape[inner - 1] == 1 or a.strides[inner - 1] == step):
        step *= a.shape[inner - 1]
        inner -= 1
    run = step
    if inner == a.ndim or run < MIN_PIECE or any(s < 0 for s in a.strides):
        return None
    lead = a.shape[:inner]
    offsets = np.zeros(lead, dtype=np.int64)
    for d in range(inner):
        shape = [1] * inner
        shape[d] = lead[d]
        offsets = offsets + (np.arange(lead[d], dtype=np.int64) * a.strides[d]).reshape(shape)
    base = a[(0,) * inner]  # the first run
    span = int(offsets.max()) + run
    whole = np.lib.stride_tricks.as_strided(base.reshape(-1).view(np.uint8)[:1], shape=(span,), strides=(1,))
    return Pieces(whole.data, offsets.reshape(-1), run)  # the bytes from the first run to the end of the last

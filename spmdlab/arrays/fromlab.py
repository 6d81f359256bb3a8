"""``codistributed(X, lab, codist)``: distribute an array that only one lab holds.

MATLAB's ``codistributed(X, lab, codist)`` (and pbdBASE's ``as.ddmatrix`` from rank 0)
distributes the array ``X`` of lab ``lab``; the other labs pass anything (``None``),
which is never read. spmdlab also spells it ``codistributed(X, codist, from_lab=lab)``.

How: ONE small ``allgather_objects`` (every lab's lab number and codistributor, the
holder's shape and dtype, and each lab's error, so that bad input raises the same error
on every lab), then ONE ``MPI_Scatterv`` from the holder: lab k receives exactly the
bytes of the arrays it stores (``chunkSelections``: halo cells and overlapping chunks
included). Nothing is gathered anywhere. When every lab's part is a contiguous range of
the holder's C-ordered ``X`` (rows of a C array, by rows), the holder sends straight
from ``X``; otherwise it packs the parts once, lab after lab, into one send buffer (one
copy of ``X`` on the holder for the duration of the call).
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ..checks import check_lab
from ..lab import lazy_comm as comm
from ..layouts.codistributor import Codistributor
from ..layouts.regions import as_slice, copy_region, sel_len
from .base import Chunks, check_dtype, complete, here, sparse_error
from .collectives import EMPTY_BYTES, allgather_objects, as_bytes, check_same_codist, error_entry, raise_combined

__all__ = ["is_lab_number", "from_lab"]


def is_lab_number(x: Any) -> bool:
    """True for a lab number argument (an integer, not a bool): MATLAB's
    ``codistributed(X, lab, codist)`` tells it from a codistributor by its type."""
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def _holder_checks(X: Any, codist: Codistributor | None, n: int) -> tuple[Any, Any, str | None, str]:
    """On the holder: ``(X as an array, the completed layout, error, error kind)``."""
    error = sparse_error(X)
    if error is not None:
        return X, None, error, "TypeError"
    if X is None:
        return X, None, "X is None on the lab that holds the array", "ValueError"
    X = np.asarray(X)
    error = check_dtype(X.dtype)
    if error is not None:
        return X, None, error, "TypeError"
    try:
        return X, complete(codist, X.shape, n), None, "ValueError"
    except (ValueError, TypeError) as exc:
        return X, None, str(exc), "ValueError"


def from_lab(X: Any, lab: Any, codist: Codistributor | None, what: str) -> tuple[Any, Codistributor]:
    """``(local part, complete layout)`` of the array ``X`` that lab ``lab`` holds,
    distributed by ``codist`` (the default ``codistributor1d()`` when None). Collective:
    every lab of the block calls it with the same ``lab`` and ``codist``."""
    me, n = here()
    error: str | None = None
    kind = "ValueError"
    holder = None
    try:
        holder = check_lab(lab, n)
    except (TypeError, ValueError) as exc:
        error, kind = f"from_lab: {exc}", type(exc).__name__
    target = meta = None
    if holder == me:
        X, target, error, kind = _holder_checks(X, codist, n)
        if error is None:
            meta = (X.shape, X.dtype.str)
    lab_key = int(lab) if is_lab_number(lab) else repr(lab)
    infos = allgather_objects((lab_key, codist, meta, error_entry(error, kind)), what)
    if len({i[0] for i in infos}) > 1:
        detail = ", ".join(f"lab {k + 1}: {i[0]}" for k, i in enumerate(infos))
        raise ValueError(f"{what}: every lab must name the same lab holding X; got {detail}")
    raise_combined([i[3] for i in infos], what)
    check_same_codist([i[1] for i in infos], what)
    assert holder is not None  # every lab checked the same lab number
    shape, dtype_str = infos[holder - 1][2]
    dtype = np.dtype(dtype_str)
    if target is None:
        target = complete(codist, tuple(shape), n)
    shapes = [[tuple(sel_len(s) for s in sel) for sel in target.chunkSelections(k, n)] for k in range(1, n + 1)]
    counts = np.array([sum(math.prod(s) for s in lab_shapes) * dtype.itemsize for lab_shapes in shapes],
                      dtype=np.int64)
    data = _scatter(X if holder == me else None, target, holder, counts, what)
    parts, offset = [], 0
    for s in shapes[me - 1]:
        size = math.prod(s) * dtype.itemsize
        parts.append(data[offset:offset + size].view(dtype).reshape(s) if size else np.empty(s, dtype=dtype))
        offset += size
    local = Chunks(parts, dtype) if target.isChunked(n) else parts[0]
    return local, target


def _send_buffer(X: np.ndarray, target: Codistributor, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The holder's send buffer and byte displacements: ``X`` itself when every lab's one
    part is a C-contiguous range of it (the usual case for row layouts), else the parts
    packed in lab order, copied straight from ``X`` (runs of a block-cyclic selection as
    strided views, ``regions.copy_region``)."""
    n = len(counts)
    sels = [target.chunkSelections(k, n) for k in range(1, n + 1)]
    displs = _contiguous_displs(X, sels)
    if displs is not None:
        return as_bytes(X), displs
    packed = np.empty(int(counts.sum()), dtype=np.uint8)
    offset = 0
    for lab_sels in sels:
        for sel in lab_sels:
            shape = tuple(sel_len(s) for s in sel)
            size = math.prod(shape) * X.dtype.itemsize
            if size:
                copy_region(packed[offset:offset + size].view(X.dtype).reshape(shape), [None] * X.ndim, X, sel)
            offset += size
    return packed, np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)


def _contiguous_displs(X: np.ndarray, sels: list) -> np.ndarray | None:
    """Byte offsets of each lab's part in ``X`` when every lab stores one box that is a
    C-contiguous range of ``X``'s memory; else None."""
    if not (X.flags.c_contiguous and X.nbytes) or any(len(s) != 1 for s in sels):
        return None
    boxes = [tuple(as_slice(x) for x in s[0]) for s in sels]
    if any(x is None for box in boxes for x in box):
        return None
    start = X.__array_interface__["data"][0]
    displs = []
    for box in boxes:
        v = X[box]
        if v.size and not v.flags.c_contiguous:
            return None
        displs.append(v.__array_interface__["data"][0] - start if v.size else 0)
    return np.array(displs, dtype=np.int64)


def _scatter(X: np.ndarray | None, target: Codistributor, holder: int, counts: np.ndarray, what: str) -> np.ndarray:
    """This lab's bytes, by one ``Iscatterv`` from ``holder`` (``X`` given only there)."""
    me, n = here()
    recv = np.empty(int(counts[me - 1]), dtype=np.uint8)
    if n == 1:
        assert X is not None
        send, displs = _send_buffer(X, target, counts)
        recv[:] = send[displs[0]:displs[0] + counts[0]] if counts[0] else EMPTY_BYTES
        return recv
    MPI = comm.MPI
    if X is not None:
        send, displs = _send_buffer(X, target, counts)
        sendspec: Any = [send, (counts, displs), MPI.BYTE]
        keep: tuple = (send, counts, displs, recv, X)
    else:
        sendspec, keep = None, (recv,)
    comm.wait(comm.block().Iscatterv(sendspec, [recv, MPI.BYTE], holder - 1), what, keep=keep)
    return recv

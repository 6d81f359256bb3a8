"""Lab-to-lab messaging inside ``spmd`` blocks (docs/design.md §4), MATLAB's two name families.

Numpy arrays travel as MPI buffers behind a small pickled header; other objects are
pickled. Every wait is interruptible (see ``comm.wait``). Lab numbers are 1-based.
"""
from __future__ import annotations

import functools
import operator
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from ..checks import check_lab, check_tag, dim_to_axis
from . import lazy_comm as comm

__all__ = ["labSend", "labReceive", "labSendReceive", "labProbe", "labBarrier", "labBroadcast",
           "gop", "gplus", "gcat", "spmdSend", "spmdReceive", "spmdSendReceive", "spmdBroadcast",
           "spmdBarrier", "spmdProbe", "spmdReduce", "spmdPlus", "spmdCat"]


def _mpi_op(fcn: Callable):
    MPI = comm.MPI
    table = {
        operator.add: MPI.SUM, np.add: MPI.SUM, sum: MPI.SUM,
        operator.mul: MPI.PROD, np.multiply: MPI.PROD,
        max: MPI.MAX, np.maximum: MPI.MAX, np.fmax: MPI.MAX,
        min: MPI.MIN, np.minimum: MPI.MIN, np.fmin: MPI.MIN,
    }
    try:
        return table.get(fcn)
    except TypeError:  # unhashable callable
        return None
_NUMERIC = "biufc"


def _is_buffer_array(x: Any) -> bool:
    return type(x) is np.ndarray and x.dtype.kind in "biufcb?" and not x.dtype.hasobject


def _header(x: Any) -> tuple:
    if _is_buffer_array(x):
        return ("a", x.dtype.str, x.shape)
    return ("o", x)


def _labs(numlabs: int, labs, what: str) -> list[int]:
    if isinstance(labs, (list, tuple, range, np.ndarray)):
        return [check_lab(lab, numlabs, what) for lab in labs]
    return [check_lab(labs, numlabs, what)]


def _source(source, numlabs: int) -> int:
    if source is None or (isinstance(source, str) and source == "any"):
        return comm.ANY_SOURCE
    return check_lab(source, numlabs, "source") - 1


def _tag(tag) -> int:
    tag = check_tag(tag, allow_any=True)
    return comm.ANY_TAG if tag is None else tag


# ---- point to point -------------------------------------------------------------

def _isend(c, data: Any, dest0: int, tag: int) -> list:
    header = _header(data)
    requests = [c.isend(header, dest0, tag)]
    if header[0] == "a":
        buf = np.ascontiguousarray(data)
        requests.append(c.Isend(buf, dest0, tag))
        return requests, buf
    return requests, None


def labSend(data: Any, dest: Any, tag: int = 0) -> None:
    """Send ``data`` to lab ``dest`` (or each lab of a list) with ``tag``.

    >>> labSend(np.arange(4), 2)          # on lab 1  # doctest: +SKIP
    """
    c = comm.block()
    tag = check_tag(tag)
    me = c.Get_rank()
    for lab in _labs(c.Get_size(), dest, "destination"):
        requests, buf = _isend(c, data, lab - 1, tag)
        if lab - 1 == me:  # completes when this lab receives it: waiting here would hang
            comm.send_to_self(requests, keep=(buf,))
        else:
            comm.wait_all(requests, f"labSend(dest={lab}, tag={tag})", keep=(buf,))


def _complete_receive(c, message, status, what: str):
    header = message.recv()
    source, tag = status.Get_source(), status.Get_tag()
    if header[0] == "a":
        data = np.empty(header[2], dtype=np.dtype(header[1]))
        comm.wait(c.Irecv(data, source, tag), what, keep=(data,))
    else:
        data = header[1]
    return data, source + 1, tag


def labReceive(source: Any = None, tag: Any = None, return_info: bool = False) -> Any:
    """Receive the next message from ``source`` (None or ``'any'``: any lab) with ``tag``
    (None: any). With ``return_info=True`` returns ``(data, source, tag)``."""
    c = comm.block()
    src, tg = _source(source, c.Get_size()), _tag(tag)
    what = f"labReceive(source={source if source is not None else 'any'}, tag={'any' if tag is None else tag})"
    message, status = comm.probe(c, src, tg, what)
    data, src_lab, got_tag = _complete_receive(c, message, status, what)
    return (data, src_lab, got_tag) if return_info else data


def labSendReceive(dest: Any, source: Any, data: Any, tag: int = 0) -> Any:
    """Send ``data`` to ``dest`` and receive from ``source`` at once (no deadlock in rings).
    ``dest`` or ``source`` may be None to only receive or only send; returns the data
    received (None if ``source`` is None)."""
    c = comm.block()
    n = c.Get_size()
    tag = check_tag(tag)
    requests, buf = [], None
    if dest is not None:
        requests, buf = _isend(c, data, check_lab(dest, n, "destination") - 1, tag)
    received = None
    if source is not None:
        what = f"labSendReceive(dest={dest}, source={source}, tag={tag})"
        message, status = comm.probe(c, check_lab(source, n, "source") - 1, tag, what)
        received = _complete_receive(c, message, status, what)[0]
    comm.wait_all(requests, f"labSendReceive(dest={dest}, tag={tag})", keep=(buf,))
    return received


def labProbe(source: Any = None, tag: Any = None, return_info: bool = False) -> Any:
    """True if a message from ``source`` with ``tag`` is ready to be received."""
    c = comm.block()
    status = comm.MPI.Status()
    ready = c.iprobe(_source(source, c.Get_size()), _tag(tag), status)
    if return_info:
        return (ready, status.Get_source() + 1, status.Get_tag()) if ready else (False, None, None)
    return ready


# ---- collectives -----------------------------------------------------------------

def labBarrier() -> None:
    """Wait until every lab of the block reaches this point."""
    comm.wait(comm.block().Ibarrier(), "labBarrier()")


def _bcast_bytes(c, root: int, payload: bytes | None, what: str) -> bytes:
    length = np.array([len(payload) if payload is not None else 0], dtype=np.int64)
    comm.wait(c.Ibcast(length, root), what, keep=(length,))
    buf = bytearray(payload) if payload is not None else bytearray(int(length[0]))
    comm.wait(c.Ibcast(buf, root), what, keep=(buf,))
    return bytes(buf)


def labBroadcast(source: Any, data: Any = None) -> Any:
    """Lab ``source`` sends ``data``; every lab returns it."""
    c = comm.block()
    root = check_lab(source, c.Get_size(), "source") - 1
    what = f"labBroadcast(source={source})"
    mine = c.Get_rank() == root
    header = pickle.loads(_bcast_bytes(c, root, pickle.dumps(_header(data), 5) if mine else None, what))
    if header[0] == "o":
        return header[1]
    buf = np.ascontiguousarray(data) if mine else np.empty(header[2], dtype=np.dtype(header[1]))
    comm.wait(c.Ibcast(buf, root), what, keep=(buf,))
    return buf


def _gather_bytes(c, payload: bytes, root: int | None, what: str) -> list[bytes] | None:
    """Every lab's bytes on every lab (root None) or on ``root`` only."""
    n, rank = c.Get_size(), c.Get_rank()
    mine = np.array([len(payload)], dtype=np.int64)
    sizes = np.empty(n, dtype=np.int64)
    comm.wait(c.Iallgather(mine, sizes), what, keep=(mine, sizes))
    send = np.frombuffer(payload, dtype=np.uint8) if payload else np.empty(0, np.uint8)
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    if root is None or rank == root:
        recv = np.empty(int(sizes.sum()), dtype=np.uint8)
        spec = [recv, (sizes, offsets), comm.MPI.BYTE]
    else:
        recv, spec = None, None
    if root is None:
        request = c.Iallgatherv([send, comm.MPI.BYTE], spec)
    else:
        request = c.Igatherv([send, comm.MPI.BYTE], spec, root)
    comm.wait(request, what, keep=(send, recv))
    if recv is None:
        return None
    return [recv[o:o + s].tobytes() for o, s in zip(offsets, sizes)]


def _gather_values(c, x: Any, root: int | None, what: str) -> list | None:
    """Every lab's value, in lab order, on every lab (or on ``root``; None elsewhere)."""
    header = _header(x)
    if header[0] == "a":
        body = np.ascontiguousarray(x).tobytes()
        payload = pickle.dumps(header, 5)
    else:
        body, payload = b"", pickle.dumps(header, 5)
    headers = _gather_bytes(c, payload, root, what)
    bodies = _gather_bytes(c, body, root, what)
    if headers is None:
        return None
    values = []
    for head, raw in zip(headers, bodies):
        kind, *rest = pickle.loads(head)
        if kind == "a":
            values.append(np.frombuffer(raw, dtype=np.dtype(rest[0])).reshape(rest[1]).copy())
        else:
            values.append(rest[0])
    return values


def _target(targetlab, c) -> int | None:
    return None if targetlab is None else check_lab(targetlab, c.Get_size(), "targetlab") - 1


def gop(fcn: Callable, x: Any, targetlab: Any = None) -> Any:
    """Reduce ``x`` over all labs with the associative function ``fcn`` (applied in lab
    order). With ``targetlab`` only that lab gets the result; the others get None.

    >>> gop(max, labindex())   # on every lab: numlabs()  # doctest: +SKIP
    """
    c = comm.block()
    root = _target(targetlab, c)
    what = f"gop({getattr(fcn, '__name__', 'fcn')})"
    op = _mpi_op(fcn)
    if op is not None:
        headers = _gather_bytes(c, pickle.dumps(_header(x)[:1] + (
            (x.dtype.str, x.shape) if _is_buffer_array(x) else ()), 5), None, what)
        kinds = {pickle.loads(h) for h in headers}
        if len(kinds) == 1:
            kind = next(iter(kinds))
            if kind[0] == "a" and np.dtype(kind[1]).kind in _NUMERIC:
                send = np.ascontiguousarray(x)
                recv = np.empty_like(send) if root is None or c.Get_rank() == root else None
                if root is None:
                    request = c.Iallreduce(send, recv, op)
                else:
                    request = c.Ireduce(send, recv, op, root)
                comm.wait(request, what, keep=(send, recv))
                return recv
    values = _gather_values(c, x, root, what)
    if values is None:
        return None
    return functools.reduce(fcn, values)


def gplus(x: Any, targetlab: Any = None) -> Any:
    """The sum of ``x`` over all labs (elementwise for arrays)."""
    return gop(np.add if isinstance(x, np.ndarray) else operator.add, x, targetlab)


def _concatenate(values: list, axis: int) -> np.ndarray:
    arrays = [np.asarray(v) for v in values]
    ndim = max(a.ndim for a in arrays)
    if ndim <= 1:
        # MATLAB treats scalars and vectors as rows: dim 2 joins them into one row
        # (a 1-D array here), dim 1 stacks them as rows of a matrix.
        rows = [np.atleast_1d(a) for a in arrays]
        if axis == 1:
            return np.concatenate(rows)
        if axis == 0:
            return np.stack(rows) if all(a.ndim == 1 and len(a) == len(rows[0]) for a in rows) \
                else np.concatenate(rows)
    expanded = [a.reshape(a.shape + (1,) * (axis + 1 - a.ndim)) if a.ndim <= axis else a
                for a in arrays]
    return np.concatenate(expanded, axis=axis)


def gcat(x: Any, dim: int | None = None, targetlab: Any = None, *, axis: int | None = None) -> Any:
    """Concatenate ``x`` from all labs along ``dim`` (1-based; default 2, as MATLAB) or
    ``axis=``. Scalars and 1-D arrays count as rows: ``gcat(labindex())`` is
    ``array([1, 2, ..., numlabs])``."""
    ax = dim_to_axis(dim, axis, default=1)
    c = comm.block()
    values = _gather_values(c, x, _target(targetlab, c), "gcat()")
    if values is None:
        return None
    return _concatenate(values, ax)


spmdSend = labSend
spmdReceive = labReceive
spmdSendReceive = labSendReceive
spmdBroadcast = labBroadcast
spmdBarrier = labBarrier
spmdProbe = labProbe
spmdReduce = gop
spmdPlus = gplus
spmdCat = gcat

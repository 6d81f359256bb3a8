"""The FFT's own exchanges: slab transposes of a matrix between rows and columns, and
circular shifts of codistributed arrays (``fftshift``/``ifftshift``), without gathering.

``slab_transpose`` moves an n1 x n2 matrix between the layouts by rows and by columns
with one ``Alltoallv``, sending from or receiving into the arrays themselves where the
blocks are contiguous (a generic ``redistribute`` packs and unpacks both sides).

Along an axis every lab holds whole, each lab rolls its own part (``np.roll``). Along
the distributed axis of a 1-D layout, lab k's block [lo, hi) moves to [lo + s, hi + s)
mod n: at most two pieces, each split over the labs whose blocks they meet
(``fft_bailey.roll_pieces``); one ``Alltoallv`` on the block's communicator, waited
with ``spmdlab.lab.comm.wait`` (interruptible). 2dbc arrays are shifted in a 1-D layout
and moved back to their grid.
"""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from ...lab import lazy_comm as comm
from ...layouts.codistributor import codistributor1d
from ..array import codistributed
from ..base import here
from ..transfer import redistribute
from .plan import default_partition, roll_pieces

__all__ = ["clear_buffer", "move", "wrap", "roll_axes", "roll_distributed", "slab_transpose"]


def wrap(local: np.ndarray, codist: Any) -> codistributed:
    """A codistributed array from this lab's part and a complete codistributor (no
    communication)."""
    return codistributed.from_parts(local, codist)


def move(local: np.ndarray, codist: Any, target: Any) -> np.ndarray:
    """This lab's part of the array (``local``, laid out by ``codist``) in the layout
    ``target``: one all-to-all (``redistribute``), nothing when the layouts agree."""
    if codist == target:
        return local
    return redistribute(wrap(local, codist), target)._local


def roll_distributed(local: np.ndarray, part: list, axis: int, n: int, shift: int) -> np.ndarray:
    """This lab's part of ``np.roll(D, shift, axis)`` for a 1-D layout along ``axis`` with
    partition ``part`` (the result has the same partition)."""
    lab, p = here()
    me = lab - 1
    pieces = roll_pieces(part, n, shift)
    src = np.moveaxis(local, axis, 0)
    out = np.empty(local.shape, dtype=local.dtype)
    dst = np.moveaxis(out, axis, 0)
    row = int(np.prod(src.shape[1:], dtype=np.int64)) * local.dtype.itemsize
    for a, b, c in pieces.get((me, me), []):
        dst[b:b + c] = src[a:a + c]
    scounts = np.array([0 if k == me else sum(c for _, _, c in pieces.get((me, k), [])) * row
                        for k in range(p)], dtype=np.int64)
    rcounts = np.array([0 if k == me else sum(c for _, _, c in pieces.get((k, me), [])) * row
                        for k in range(p)], dtype=np.int64)
    sdispl = np.concatenate(([0], np.cumsum(scounts)[:-1])).astype(np.int64)
    rdispl = np.concatenate(([0], np.cumsum(rcounts)[:-1])).astype(np.int64)
    sendbuf = np.empty(int(scounts.sum()), dtype=np.uint8)
    rest = src.shape[1:]
    for k in range(p):
        if k == me or not scounts[k]:
            continue
        off = int(sdispl[k])
        for a, _, c in pieces[(me, k)]:
            nbytes = c * row
            np.copyto(sendbuf[off:off + nbytes].view(local.dtype).reshape((c,) + rest), src[a:a + c])
            off += nbytes
    recvbuf = np.empty(int(rcounts.sum()), dtype=np.uint8)
    MPI = comm.MPI
    request = comm.block().Ialltoallv([sendbuf, (scounts, sdispl), MPI.BYTE],
                                      [recvbuf, (rcounts, rdispl), MPI.BYTE])
    comm.wait(request, "fftshift", keep=(sendbuf, recvbuf, scounts, rcounts, sdispl, rdispl))
    del sendbuf
    for k in range(p):
        if k == me or not rcounts[k]:
            continue
        off = int(rdispl[k])
        for _, b, c in pieces[(k, me)]:
            nbytes = c * row
            dst[b:b + c] = recvbuf[off:off + nbytes].view(local.dtype).reshape((c,) + rest)
            off += nbytes
    return out


def roll_axes(D: Any, shifts: Dict[int, int]) -> codistributed:
    """``D`` rolled by ``shifts[axis]`` along each axis (a codistributed copy)."""
    _, p = here()
    codist, local, shape = D._codist, D._local, tuple(D.shape)
    orig = codist
    shifts = {ax: sh for ax, sh in shifts.items() if shape[ax] and sh % shape[ax]}
    if not isinstance(codist, codistributor1d) and p > 1:
        e = max(range(len(shape)), key=lambda k: (k not in shifts, shape[k] >= p, shape[k]))
        new = codistributor1d(e + 1, default_partition(shape[e], p), shape)
        local, codist = move(local, codist, new), new
    d = codist.Dimension - 1 if isinstance(codist, codistributor1d) and codist.Dimension is not None else -1
    local_axes = [ax for ax in shifts if ax != d or p == 1]
    out = np.roll(local, [shifts[ax] for ax in local_axes], local_axes) if local_axes else local.copy()
    if d in shifts and p > 1:
        out = roll_distributed(out, codist.Partition, d, shape[d], shifts[d])
    if codist != orig:
        out = move(out, codist, orig)
    return wrap(out, orig)


_exchange: list = []  # the one exchange buffer slab transposes reuse (fresh memory is slow)


def exchange_buffer(nbytes: int) -> np.ndarray:
    """A uint8 buffer of ``nbytes``, reused from call to call and grown to the largest
    size asked for (writing fresh memory costs more than the copy into it). Dropped
    with ``clear_buffer()`` and after an interrupted exchange."""
    if not _exchange or _exchange[0].nbytes < nbytes:
        _exchange.clear()
        _exchange.append(np.empty(nbytes, dtype=np.uint8))
    return _exchange[0][:nbytes]


def slab_transpose(local: np.ndarray, n1: int, n2: int, rows: list, cols: list, to_cols: bool) -> np.ndarray:
    """This lab's part of an n1 x n2 matrix moved between the layout by rows (partition
    ``rows``) and by columns (``cols``), with one ``Alltoallv`` and no more copies than
    needed: blocks that are contiguous on one side (the row blocks of a part by columns,
    seen from the side by rows) are sent from, or received into, the arrays themselves;
    only the other side is packed (or unpacked). A part by rows of shape (r, n2) goes to
    one by columns of shape (n1, c) when ``to_cols``, and back otherwise."""
    lab, p = here()
    me = lab - 1
    item = local.dtype.itemsize
    r0 = np.concatenate(([0], np.cumsum(rows))).astype(np.int64)
    c0 = np.concatenate(([0], np.cumsum(cols))).astype(np.int64)
    if to_cols:  # send my rows x their columns (packed); receive their rows x my columns (in place)
        src = np.ascontiguousarray(local).reshape(rows[me], n2)
        out = np.empty((n1, cols[me]), dtype=local.dtype)
        counts_s = np.array([0 if k == me else rows[me] * cols[k] * item for k in range(p)], dtype=np.int64)
        counts_r = np.array([rows[k] * cols[me] * item for k in range(p)], dtype=np.int64)
        displ_s = np.concatenate(([0], np.cumsum(counts_s)[:-1])).astype(np.int64)
        displ_r = r0[:-1] * cols[me] * item
        sendbuf = exchange_buffer(int(counts_s.sum()))
        for k in range(p):
            if counts_s[k] and k != me:
                blk = sendbuf[displ_s[k]:displ_s[k] + counts_s[k]].view(local.dtype)
                np.copyto(blk.reshape(rows[me], cols[k]), src[:, c0[k]:c0[k + 1]])
        recvbuf = out.reshape(-1).view(np.uint8) if out.size else np.empty(0, np.uint8)
        post = None
    else:  # send my rows-blocks of columns (contiguous); receive their columns of my rows (unpacked)
        src = np.ascontiguousarray(local).reshape(n1, cols[me])
        out = np.empty((rows[me], n2), dtype=local.dtype)
        counts_s = np.array([rows[k] * cols[me] * item for k in range(p)], dtype=np.int64)
        counts_r = np.array([0 if k == me else rows[me] * cols[k] * item for k in range(p)], dtype=np.int64)
        displ_s = r0[:-1] * cols[me] * item
        displ_r = np.concatenate(([0], np.cumsum(counts_r)[:-1])).astype(np.int64)
        sendbuf = src.reshape(-1).view(np.uint8) if src.size else np.empty(0, np.uint8)
        recvbuf = exchange_buffer(int(counts_r.sum()))
        post = recvbuf
    # this lab's own block: copied here (MPICH moves a message to itself slowly, in steps
    # of the progress engine)
    counts_s[me] = counts_r[me] = 0
    if to_cols:
        np.copyto(out[r0[me]:r0[me + 1]], src[:, c0[me]:c0[me + 1]])
    else:
        np.copyto(out[:, c0[me]:c0[me + 1]], src[r0[me]:r0[me + 1]])
    MPI = comm.MPI
    request = comm.block().Ialltoallv([sendbuf, (counts_s, displ_s), MPI.BYTE],
                                      [recvbuf, (counts_r, displ_r), MPI.BYTE])
    try:
        comm.wait(request, "fft", keep=(sendbuf, recvbuf, counts_s, counts_r, displ_s, displ_r, src, out))
    except BaseException:
        _exchange.clear()  # MPI may still write into it: never reuse it
        raise
    if post is not None:
        del sendbuf
        for k in range(p):
            if counts_r[k]:
                blk = post[displ_r[k]:displ_r[k] + counts_r[k]].view(local.dtype)
                np.copyto(out[:, c0[k]:c0[k + 1]], blk.reshape(rows[me], cols[k]))
    return out


def clear_buffer() -> None:
    """Drop the exchange buffer slab transposes reuse."""
    _exchange.clear()

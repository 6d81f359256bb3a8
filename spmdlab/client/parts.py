"""A client array's parts to the labs and back, without a staging copy at the client.

``distributed(X)`` sends each lab its part as an ``inplace.Part`` (``scatter._SendPart``):
the bytes go from X's memory, a strided part (a column block) piece by piece
(``sendmsg``), never packed first.
``gather(D)`` asks each lab for its rows and names, for each reply, the region of the
result they fill: the channel reads them straight there (``recvmsg_into``). Regions with
short runs (under ``inplace.MIN_PIECE`` bytes: a narrow column block) come in rounds of
row slices of at most ``GATHER_CHUNK`` bytes per lab instead, each copied into place as
it arrives, so the client never holds all parts besides the result.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..arrays.calls import local_rows
from ..layouts.regions import copy_region
from ..protocol.inplace import PLACED, Pieces, pieces
from ..protocol.messages import Call

__all__ = ["GATHER_CHUNK", "stored", "gather_plain"]

GATHER_CHUNK = 8 << 20


def stored(codist: Any, lab: int, n: int) -> Any:
    """What ``lab`` stores in layout ``codist``: its selection, or its chunks' selections."""
    return codist.chunkSelections(lab, n) if codist.isChunked(n) else codist.localSelection(lab, n)


def _place(out: np.ndarray, index: tuple) -> Callable[[int], Pieces | None] | None:
    """Where a reply holding ``out[index]`` goes (its pieces), or None if it cannot go
    there directly (index arrays, runs too short)."""
    if not all(isinstance(s, slice) for s in index):
        return None
    region = out[index]
    if pieces(region[:2]) is None:  # (two rows show the runs' length)
        return None
    return lambda size: pieces(region) if size == region.nbytes else None


def gather_plain(pool: Any, key: int, out: np.ndarray, codist: Any, n: int) -> np.ndarray:
    """Fill ``out`` with the parts of the array stored under ``key`` in the plain layout
    ``codist``: each lab's whole part in one reply read straight into place, or rounds
    of row slices copied into place."""
    index = [codist.localSelection(lab, n) for lab in range(1, n + 1)]
    shapes = [codist.localShape(lab, n) for lab in range(1, n + 1)]
    whole = [_place(out, tuple(sel)) for sel in index]  # a whole part read straight into place
    row_bytes = [max(1, math.prod(s[1:]) * out.itemsize) for s in shapes]
    step = [shapes[k][0] if whole[k] else max(1, GATHER_CHUNK // row_bytes[k]) for k in range(n)]
    pos = [0] * n
    while True:
        messages, places, regions = {}, {}, {}
        for k in range(n):
            if math.prod(shapes[k]) and pos[k] < shapes[k][0]:
                lo, hi = pos[k], min(shapes[k][0], pos[k] + step[k])
                rows = index[k][0]
                rows = slice(rows.start + lo, rows.start + hi) if isinstance(rows, slice) else rows[lo:hi]
                regions[k + 1] = (rows,) + tuple(index[k][1:])
                messages[k + 1] = Call(local_rows, key, (key, lo, hi))
                if whole[k] is not None:  # (then this is the whole part, in one round)
                    places[k + 1] = whole[k]
                pos[k] = hi
        if not messages:
            return out
        replies = pool.request_many(messages, places)
        for lab, reply in replies.items():
            if reply.result is not PLACED:
                copy_region(out, regions[lab], reply.result, [None] * out.ndim)
        del replies, reply  # free this round's buffers before the next arrives

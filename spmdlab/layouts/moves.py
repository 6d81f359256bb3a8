"""Moves between any two layouts, chunk by chunk: pure index math, no MPI.

The extended layouts store more than one copy of some elements (halo cells, the
overlaps of a chunk map) and may give a lab several arrays (``isChunked``). Every layout
says what a lab *stores* (``chunkSelections``: one tuple of per-dimension selections per
stored array) and what it *owns* (``ownedPieces``: disjoint over all labs, covering the
array once). A move between two layouts takes each source piece to every stored array
of the destination that holds some of it, so halo cells and overlaps are filled from
their one owner. In a combining mode (``'sum'``, ``'max'``, ...) every stored element of
the source is a partial value, so every stored array is a source.
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from .codistributor import Selection
from .plan import intersect
from .regions import sel_len

__all__ = ["Move", "Peer", "LabMoves", "sources", "compose", "pair_moves", "lab_moves"]


class Move(NamedTuple):
    """Elements going from chunk ``src_chunk`` of ``src_lab`` (at ``src_index`` there) to
    chunk ``dst_chunk`` of ``dst_lab`` (at ``dst_index``); ``shape`` is the region's."""
    src_lab: int
    src_chunk: int
    src_index: tuple[Selection, ...]
    dst_lab: int
    dst_chunk: int
    dst_index: tuple[Selection, ...]
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


class Peer(NamedTuple):
    """What one lab exchanges with another (``peer``, 0-based rank): the moves it
    receives and sends, in the order both ends list them, and their element counts."""
    peer: int
    recvs: list[Move]
    sends: list[Move]
    recv_size: int
    send_size: int
    recv_at: Any  # (chunk, slices) when the one received region is a box of slices, else None
    send_at: Any  # the same for the one sent region


def _box(moves: list[Move], side: str) -> Any:
    if len(moves) != 1:
        return None
    m = moves[0]
    chunk, index = (m.dst_chunk, m.dst_index) if side == "dst" else (m.src_chunk, m.src_index)
    return (chunk, index) if all(isinstance(x, slice) for x in index) else None


class LabMoves(NamedTuple):
    """One lab's moves: ``sends[b-1]`` to lab b, ``recvs[a-1]`` from lab a, in the order
    both ends list them; ``own`` its moves to itself; ``peers`` the labs it exchanges with."""
    sends: list[list[Move]]
    recvs: list[list[Move]]
    own: list[Move]
    peers: list[Peer]


def sources(codist: Any, lab: int, n: int, combine: bool) -> list:
    """``(chunk, global selection, local selection)`` of what ``lab`` contributes: its
    owned pieces, or in a combining mode everything it stores."""
    if not combine:
        return list(codist.ownedPieces(lab, n))
    return [(k, sel, tuple(slice(0, sel_len(s)) for s in sel))
            for k, sel in enumerate(codist.chunkSelections(lab, n))]


def compose(outer: Selection, pos: Selection) -> Selection:
    """Positions in a chunk of the positions ``pos`` within a piece that sits at
    ``outer`` in that chunk."""
    if isinstance(outer, slice):
        if isinstance(pos, slice):
            return slice(outer.start + pos.start, outer.start + pos.stop)
        return np.asarray(pos, dtype=np.int64) + outer.start
    return np.asarray(outer, dtype=np.int64)[pos]


def pair_moves(src: Any, dst: Any, n: int, a: int, b: int, combine: bool, refresh: bool) -> list[Move]:
    """The moves from lab ``a`` (layout ``src``) to lab ``b`` (layout ``dst``). With
    ``refresh`` (``src`` is ``dst``: a halo or overlap update) a piece is not copied onto
    itself."""
    out = []
    targets = dst.chunkSelections(b, n)
    for k, gs, ls in sources(src, a, n, combine):
        for j, gd in enumerate(targets):
            if refresh and a == b and k == j:
                continue
            per = [intersect(x, y) for x, y in zip(gs, gd)]
            shape = tuple(sel_len(p[0]) for p in per)
            if 0 in shape:
                continue
            out.append(Move(a, k, tuple(compose(lo, p[1]) for lo, p in zip(ls, per)),
                            b, j, tuple(p[2] for p in per), shape))
    return out


@functools.lru_cache(maxsize=64)
def lab_moves(src: Any, dst: Any, n: int, lab: int, combine: bool = False, refresh: bool = False) -> LabMoves:
    """What ``lab`` sends to and receives from every lab to turn layout ``src`` into
    ``dst`` (cached per pair of layouts)."""
    sends = [pair_moves(src, dst, n, lab, b, combine, refresh) for b in range(1, n + 1)]
    recvs = [sends[lab - 1] if a == lab else pair_moves(src, dst, n, a, lab, combine, refresh)
             for a in range(1, n + 1)]
    peers = [Peer(k - 1, recvs[k - 1], sends[k - 1], sum(m.size for m in recvs[k - 1]),
                  sum(m.size for m in sends[k - 1]), _box(recvs[k - 1], "dst"), _box(sends[k - 1], "src"))
             for k in range(1, n + 1) if k != lab and (recvs[k - 1] or sends[k - 1])]
    return LabMoves(sends, recvs, sends[lab - 1], peers)

"""Chunk maps: any boxes of an array on any labs, as CuPy's ``DistributedArray``.

No MPI here (pure index math, like :mod:`spmdlab.layouts.codistributor`).

``codistributorChunks(index_map, gsize=None)`` takes CuPy's ``index_map`` (the argument of
``cupyx.distributed.array.distributed_array``) with lab numbers for device ids: a dict
lab (1-based) -> list of chunks, a chunk being a tuple of slices (one per dimension) naming
a box of the array that the lab stores as one array. A single tuple (or, for a 1-D array,
a single slice) is one chunk. How it maps to CuPy:

- CuPy's device ids are 0-based; labs are 1-based, as everywhere in spmdlab.
- Slices must have step 1 (CuPy also takes steps and integer indices; here a chunk is a box).
- ``None`` and negative starts/stops are resolved against the size as numpy does; a start
  or stop beyond the size is an error (numpy would clip it).
- Every element must be in some chunk (CuPy does not check). Chunks may overlap: as in
  CuPy's ``REPLICA`` mode the copies hold the same value, and the element is *owned* by
  the first chunk covering it, in the order lab 1's chunks in index-map order, then lab
  2's, and so on (``ownerOf``, ``ownedPieces``); ``holders`` lists every lab storing it.

A lab's local part is always a list of arrays (``isChunked``), one per chunk, in
index-map order; a lab absent from the map holds an empty list.

>>> c = codistributorChunks({1: [(slice(0, 2), slice(0, 3)), (slice(2, 4), slice(3, 5))],
...                          2: [(slice(0, 2), slice(3, 5)), (slice(2, 4), slice(3, 5))],
...                          3: (slice(2, 4), slice(0, 3))}).complete((4, 5), 3)
>>> c.ownerOf((3, 4), 3), c.holders((3, 4), 3)
(1, [1, 2])
>>> c.describe_slice(3, 3)
'This lab stores 1 chunk of D: [2:4, 0:3].'
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..checks import check_lab, check_numlabs, is_int
from .base import (
    IndexLike,
    Piece,
    Selection,
    SizedLayout,
    box_text,
    broadcast_index,
    check_gsize,
    chunked_error,
    index_out,
)

__all__ = ["codistributorChunks", "Box", "subtract_box", "chunk_text"]

# A box of global indices: (starts, stops), one entry per dimension.
Box = tuple[tuple[int, ...], tuple[int, ...]]
_NAME = "codistributorChunks"


def chunk_text(chunk: Sequence[slice]) -> str:
    """A chunk as written in an index map, e.g. ``(slice(0, 12),)``."""
    def one(s: slice) -> str:
        step = "" if s.step is None else f", {s.step!r}"
        return f"slice({s.start!r}, {s.stop!r}{step})"
    inner = ", ".join(one(s) for s in chunk)
    return f"({inner},)" if len(chunk) == 1 else f"({inner})"


def subtract_box(a: Box, b: Box) -> list[Box]:
    """Disjoint boxes covering the elements of box ``a`` that are not in box ``b``.

    >>> subtract_box(((0, 0), (4, 4)), ((1, 1), (3, 5)))
    [((0, 0), (1, 4)), ((3, 0), (4, 4)), ((1, 0), (3, 1))]
    """
    (alo, ahi), (blo, bhi) = a, b
    if any(max(x, y) >= min(u, v) for x, y, u, v in zip(alo, blo, ahi, bhi)):
        return [a]  # no common element
    out = []
    lo, hi = list(alo), list(ahi)
    for d in range(len(lo)):
        if lo[d] < blo[d]:
            out.append((tuple(lo), tuple(hi[:d] + [blo[d]] + hi[d + 1:])))
            lo[d] = blo[d]
        if hi[d] > bhi[d]:
            out.append((tuple(lo[:d] + [bhi[d]] + lo[d + 1:]), tuple(hi)))
            hi[d] = bhi[d]
    return out


def _volume(box: Box) -> int:
    return math.prod(max(0, h - lo) for lo, h in zip(*box))


def _parse(index_map: Any) -> dict[int, list[tuple[slice, ...]]]:
    """The index map as ``{lab: [chunk, ...]}`` sorted by lab, each chunk a tuple of
    slices with step None or 1 (checked: types, lab numbers >= 1, steps, dimensions)."""
    if not isinstance(index_map, Mapping):
        raise TypeError(f"index_map must be a dict lab -> list of chunks (tuples of slices), got {index_map!r}")
    out: dict[int, list[tuple[slice, ...]]] = {}
    ndim = None
    for lab in sorted(index_map, key=lambda x: (not is_int(x), x if is_int(x) else 0)):
        if not is_int(lab):
            raise TypeError(f"index map keys must be lab numbers (integers), got {lab!r}")
        if lab < 1:
            raise ValueError(f"index map lab {lab} does not exist: labs are numbered from 1 as in MATLAB")
        v = index_map[lab]
        chunks = [v] if isinstance(v, (tuple, slice)) else v
        if not isinstance(chunks, list):
            raise TypeError(f"the chunks of lab {lab} must be a list of tuples of slices, got {v!r}")
        parsed = []
        for k, ch in enumerate(chunks, start=1):
            ch = (ch,) if isinstance(ch, slice) else ch
            if not isinstance(ch, tuple):
                raise TypeError(f"chunk {k} of lab {lab} must be a tuple of slices, got {ch!r}")
            for d, s in enumerate(ch, start=1):
                if not isinstance(s, slice):
                    raise TypeError(f"chunk {k} of lab {lab}, {ch!r}, has {s!r} in dimension {d}: "
                                    "chunks are tuples of slices (use slice(i, i + 1) for one index)")
                if not all(x is None or is_int(x) for x in (s.start, s.stop)):
                    raise TypeError(f"chunk {k} of lab {lab}, {chunk_text(ch)}, has a non-integer bound "
                                    f"in dimension {d}")
                if s.step is not None and s.step != 1:
                    raise ValueError(f"chunk {k} of lab {lab}, {chunk_text(ch)}, has step {s.step!r} in "
                                     f"dimension {d}: chunks are boxes (slices with step 1)")
            if ndim is None:
                ndim = len(ch)
            elif len(ch) != ndim:
                raise ValueError(f"chunk {k} of lab {lab}, {chunk_text(ch)}, has {len(ch)} dimensions "
                                 f"but an earlier chunk has {ndim}")
            parsed.append(tuple(slice(s.start, s.stop) for s in ch))
        out[int(lab)] = parsed
    return out


def _resolve(chunk: tuple[slice, ...], gsize: tuple[int, ...], lab: int, k: int) -> Box:
    """A chunk's box for an array of size ``gsize`` (None and negatives resolved, bounds checked)."""
    if len(chunk) != len(gsize):
        raise ValueError(f"chunk {k} of lab {lab}, {chunk_text(chunk)}, has {len(chunk)} "
                         f"dimension{'s' if len(chunk) != 1 else ''} but the array is {len(gsize)}-D")
    lo, hi = [], []
    for d, (s, m) in enumerate(zip(chunk, gsize), start=1):
        start = 0 if s.start is None else int(s.start) + (m if s.start < 0 else 0)
        stop = m if s.stop is None else int(s.stop) + (m if s.stop < 0 else 0)
        if not (0 <= start <= m and 0 <= stop <= m):
            raise ValueError(f"chunk {k} of lab {lab}, {chunk_text(chunk)}, runs out of bounds of "
                             f"dimension {d} with size {m}")
        lo.append(start)
        hi.append(max(start, stop))
    return tuple(lo), tuple(hi)


class codistributorChunks(SizedLayout):
    """A layout given by a chunk map (CuPy's ``index_map``): ``{lab: [chunk, ...]}``.

    ``codistributorChunks(index_map, gsize=None)``; the global size may come later from
    ``complete(gsize, numlabs)``. See the module docstring for the rules.
    """

    def __init__(self, index_map: Mapping, gsize: Sequence[int] | None = None) -> None:
        self._raw = _parse(index_map)
        self._gsize = None if gsize is None else check_gsize(gsize)
        self._numlabs: int | None = None
        self._boxes: dict[int, list[Box]] | None = None
        self._owned: dict[int, list[list[Box]]] | None = None
        if self._gsize is not None:
            self._normalize()

    def _normalize(self) -> None:
        """Resolve the chunks against GlobalSize and check that they cover the array."""
        g = self._gsize
        if not g:
            raise ValueError(f"{_NAME} cannot distribute a 0-d array (use shape (1,))")
        self._boxes = {lab: [_resolve(ch, g, lab, k) for k, ch in enumerate(chunks, start=1)]
                       for lab, chunks in self._raw.items()}
        # ownership: each chunk owns what no earlier chunk (in lab, then map order) covers
        earlier: list[Box] = []
        owned: dict[int, list[list[Box]]] = {}
        for lab, boxes in self._boxes.items():
            owned[lab] = []
            for box in boxes:
                pieces = [box] if _volume(box) else []
                for e in earlier:
                    pieces = [p for q in pieces for p in subtract_box(q, e)]
                owned[lab].append(sorted(pieces))
                if _volume(box):
                    earlier.append(box)
        self._owned = owned
        if sum(_volume(p) for ps in owned.values() for pieces in ps for p in pieces) != math.prod(g):
            rest = [(tuple(0 for _ in g), g)]
            for e in earlier:
                rest = [p for q in rest for p in subtract_box(q, e)]
            first = min(lo for lo, _ in rest)
            where = first[0] if len(first) == 1 else first
            raise ValueError(f"index {where} is in no chunk of the index map")

    # ---- properties
    @property
    def IndexMap(self) -> dict[int, list[tuple[slice, ...]]]:
        """``{lab: [tuple of slice(start, stop), ...]}``: resolved against GlobalSize when it
        is known, else as given (steps dropped, single chunks as one-element lists)."""
        if self._boxes is None:
            return {lab: list(chunks) for lab, chunks in self._raw.items()}
        return {lab: [tuple(slice(a, b) for a, b in zip(*box)) for box in boxes]
                for lab, boxes in self._boxes.items()}

    def _key(self) -> tuple:
        chunks = tuple((lab, tuple(tuple((s.start, s.stop) for s in ch) for ch in chs))
                       for lab, chs in self.IndexMap.items())
        return (chunks, self._gsize, self._numlabs)

    def __repr__(self) -> str:
        m = ", ".join(f"{lab}: [{', '.join(chunk_text(ch) for ch in chs)}]" for lab, chs in self.IndexMap.items())
        return f"{_NAME}(IndexMap={{{m}}}, GlobalSize={self._gsize}, NumLabs={self._numlabs})"

    # ---- completion
    def complete(self, gsize: Sequence[int], numlabs: int) -> codistributorChunks:
        """Copy with GlobalSize and NumLabs set (chunks resolved and checked against the size,
        lab numbers against ``numlabs``)."""
        g = check_gsize(gsize)
        n = check_numlabs(numlabs)
        if self._gsize is not None and self._gsize != g:
            raise ValueError(f"codistributor is for global size {self._gsize} but the array has size {g}")
        for lab in self._raw:
            check_lab(lab, n, what="index map lab")
        out = codistributorChunks.__new__(codistributorChunks)
        out._raw, out._gsize, out._numlabs = self._raw, g, n
        if self._gsize is not None:
            out._boxes, out._owned = self._boxes, self._owned
        else:
            out._normalize()
        return out


    # ---- the protocol
    def isChunked(self, numlabs: int) -> bool:
        """Always True: a lab's local part is the list of its chunks."""
        check_numlabs(numlabs)
        return True

    def chunkSelections(self, lab: int, numlabs: int) -> list[tuple[Selection, ...]]:
        """The slices of each chunk of ``lab``, in index-map order (``[]`` for a lab without chunks)."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        return [tuple(slice(a, b) for a, b in zip(*box)) for box in c._boxes.get(lab, [])]

    def ownedPieces(self, lab: int, numlabs: int) -> list[Piece]:
        """``(k, global, local)`` for the boxes ``lab`` owns: the parts of its chunk ``k`` that
        no earlier chunk (lab 1's first, in index-map order) covers, and their positions in it."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        out: list[Piece] = []
        for k, (box, pieces) in enumerate(zip(c._boxes.get(lab, []), c._owned.get(lab, []))):
            for lo, hi in pieces:
                glob = tuple(slice(a, b) for a, b in zip(lo, hi))
                loc = tuple(slice(a - s, b - s) for a, b, s in zip(lo, hi, box[0]))
                out.append((k, glob, loc))
        return out

    def localShape(self, lab: int, numlabs: int) -> tuple[int, ...]:
        raise chunked_error("localShape", _NAME)

    def localSelection(self, lab: int, numlabs: int) -> tuple[Selection, ...]:
        raise chunked_error("localSelection", _NAME)

    def localIndices(self, lab: int, numlabs: int) -> tuple[np.ndarray, ...]:
        raise chunked_error("localIndices", _NAME)

    def globalIndices(self, dim: int | None = None, lab: int | None = None,
                      numlabs: int | None = None, *, axis: int | None = None) -> np.ndarray:
        raise chunked_error("globalIndices", _NAME)

    def ownerOf(self, index: IndexLike, numlabs: int) -> int | np.ndarray:
        """Lab owning a global index (a full tuple; an int or int array for a 1-D array):
        the lab of the first chunk covering it."""
        c = self._ready(numlabs)
        idx = broadcast_index(index, c._gsize)
        owner = np.zeros(idx[0].shape, dtype=np.int64)
        for lab, boxes in c._boxes.items():
            for lo, hi in boxes:
                inside = owner == 0
                for i, a, b in zip(idx, lo, hi):
                    inside &= (i >= a) & (i < b)
                owner[inside] = lab
        likes = index if isinstance(index, tuple) else (index,)
        return index_out(owner, *likes)

    def holders(self, index: Any, numlabs: int) -> list[int]:
        """Every lab storing the element at a global index (sorted), owner included."""
        c = self._ready(numlabs)
        if any(np.ndim(x) for x in (index if isinstance(index, tuple) else (index,))):
            raise TypeError(f"holders takes one index (integers), got {index!r}")
        idx = [int(i) for i in broadcast_index(index, c._gsize)]
        return sorted(lab for lab, boxes in c._boxes.items()
                      if any(all(a <= i < b for i, a, b in zip(idx, lo, hi)) for lo, hi in boxes))

    def describe_slice(self, lab: int, numlabs: int, name: str = "D") -> str:
        """e.g. ``This lab stores 2 chunks of D: [0:3, 0:4], [5:7, 0:2].``"""
        chunks = self.chunkSelections(lab, numlabs)
        if not chunks:
            return f"This lab stores nothing of {name} (the index map gives it no chunk)."
        texts = [box_text(ch) for ch in chunks]
        if len(texts) > 4:
            texts = texts[:2] + ["..."] + texts[-1:]
        s = "s" if len(chunks) > 1 else ""
        return f"This lab stores {len(chunks)} chunk{s} of {name}: {', '.join(texts)}."

"""What every codistributor shares: index helpers and the layout protocol's defaults.

No MPI here (pure index math, like :mod:`spmdlab.layouts.codistributor`). Numbering follows
docs/design.md: labs are 1..numlabs, dimensions passed as ``dim`` are 1-based, element
indices are 0-based numpy indices.

The protocol (docs in /work/spec/layouts.md): a complete codistributor knows its
``GlobalSize``, ``NumLabs`` and ``Halo``; ``isChunked(n)`` says whether a lab's local
part is a list of arrays; ``chunkSelections(lab, n)`` gives the global indices of each
array a lab stores (halo cells included) and ``ownedPieces(lab, n)`` the elements it
owns (disjoint over the labs, covering the array once) with their places in those arrays.
:class:`LayoutBase` implements the defaults for layouts whose part is one array.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks import check_numlabs, dim_to_axis, is_int

__all__ = ["numroc", "Selection", "IndexLike", "Piece", "check_gsize", "int_array", "normalize_index",
           "index_out", "broadcast_index", "runs_text", "selection_size", "box_text", "chunked_error", "LayoutBase",
           "SizedLayout"]

Selection = slice | np.ndarray
IndexLike = int | np.ndarray | Sequence[Any]
# (chunk number, global selection, positions inside that chunk) of an owned piece
Piece = tuple[int, tuple[Selection, ...], tuple[Selection, ...]]


def numroc(n: int, nb: int, iproc: int, nprocs: int) -> int:
    """How many of the global indices ``0..n-1``, dealt in blocks of ``nb`` round-robin
    over ``nprocs`` grid coordinates, coordinate ``iproc`` owns (ScaLAPACK's NUMROC with
    source process 0).

    >>> numroc(10, 3, 0, 2), numroc(10, 3, 1, 2)
    (6, 4)
    """
    blocks, extra = divmod(n, nb)
    rounds, rest = divmod(blocks, nprocs)
    count = rounds * nb
    if iproc < rest:
        count += nb
    elif iproc == rest:
        count += extra
    return count


def check_gsize(gsize: Any) -> tuple[int, ...]:
    """A global size (an int or a sequence of non-negative ints) as a tuple of ints."""
    if is_int(gsize):
        gsize = (gsize,)
    try:
        g = tuple(gsize)
    except TypeError:
        raise TypeError(f"gsize must be a sequence of non-negative integers, got {gsize!r}") from None
    if not all(is_int(s) and s >= 0 for s in g):
        raise ValueError(f"gsize must contain non-negative integers, got {gsize!r}")
    return tuple(int(s) for s in g)


def int_array(i: Any) -> np.ndarray:
    """An index argument as an int64 array (TypeError for bools and non-integers)."""
    a = np.asarray(i)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"indices must be integers, got {i!r}")
    return a.astype(np.int64, copy=False)


def normalize_index(i: Any, size: int, dim: int) -> np.ndarray:
    """Global 0-based index (scalar or array; negatives count from the end) → int64 array."""
    a = int_array(i)
    if a.size and (a.min() < -size or a.max() >= size):
        bad = a[(a < -size) | (a >= size)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    return np.where(a < 0, a + size, a)


def index_out(a: Any, *likes: Any) -> int | np.ndarray:
    """A Python int when every input in ``likes`` was a scalar, else an int64 array."""
    return int(a) if all(np.ndim(x) == 0 for x in likes) else np.asarray(a, dtype=np.int64)


def broadcast_index(index: Any, gsize: Sequence[int]) -> tuple[np.ndarray, ...]:
    """A full global index (a tuple with one int or int array per dimension; for a 1-D
    array also a bare int or array) as broadcast int64 arrays, bounds-checked and with
    negatives wrapped."""
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) != len(gsize):
        raise ValueError(f"index tuple has {len(index)} entries but the array is {len(gsize)}-D")
    return tuple(np.broadcast_arrays(*[normalize_index(x, s, d + 1) for d, (x, s) in enumerate(zip(index, gsize))]))


def runs_text(idx: np.ndarray) -> str:
    """'[0:3, 6:8]' for the contiguous runs in a sorted index array.

    >>> runs_text(np.array([0, 1, 2, 6, 7]))
    '[0:3, 6:8]'
    """
    if idx.size == 0:
        return "[]"
    breaks = np.flatnonzero(np.diff(idx) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [idx.size]))
    parts = [f"{idx[s]}:{idx[e - 1] + 1}" for s, e in zip(starts, ends)]
    if len(parts) > 4:
        parts = parts[:2] + ["..."] + parts[-1:]
        return "[" + ", ".join(parts) + f"] ({len(starts)} blocks)"
    return "[" + ", ".join(parts) + "]"


def selection_size(s: Selection) -> int:
    """Number of indices in a selection (a slice with step 1, or an index array)."""
    return max(0, s.stop - s.start) if isinstance(s, slice) else len(s)


def box_text(sel: Sequence[Selection], gsize: Sequence[int] | None = None) -> str:
    """'[0:3, 0:4]' for a tuple of selections; a whole dimension of ``gsize`` shows as ':'.

    >>> box_text((slice(0, 3), slice(0, 4)), (5, 4))
    '[0:3, :]'
    """
    parts = []
    for d, s in enumerate(sel):
        if isinstance(s, slice):
            whole = gsize is not None and s.start == 0 and s.stop == gsize[d]
            parts.append(":" if whole else f"{s.start}:{s.stop}")
        else:
            parts.append(runs_text(np.asarray(s)))
    return "[" + ", ".join(parts) + "]"


def chunked_error(what: str, name: str) -> ValueError:
    """The error for asking a chunked layout for its one local array (``what`` is the method)."""
    return ValueError(f"{what}: the local part of this {name} layout is a list of chunks, not one array; "
                      "use chunkSelections(lab, numlabs) for the global indices of each chunk "
                      "(and ownedPieces(lab, numlabs) for the elements a lab owns)")


class LayoutBase:
    """Base class of the codistributors: equality through ``_key()`` and the defaults of
    the layout protocol for a layout whose local part is one array without halo."""

    @property
    def GlobalSize(self) -> tuple[int, ...] | None:
        """Global shape, or None if not yet known (each layout defines it)."""
        raise NotImplementedError

    def _key(self) -> tuple:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__,) + self._key())

    def _ndim(self) -> int:
        size = self.GlobalSize
        if size is None:
            raise TypeError(f"{type(self).__name__} has no GlobalSize yet")
        return len(size)

    def _resolve_dim(self, dim: Any, axis: Any) -> int:
        return dim_to_axis(dim, axis, self._ndim()) + 1

    def _ready(self, numlabs: int) -> LayoutBase:
        raise NotImplementedError

    # ---- the protocol
    @property
    def NumLabs(self) -> int | None:
        """Number of labs the complete layout is for; None when incomplete."""
        raise NotImplementedError

    @property
    def Halo(self) -> int:
        """Width of the halo (cells stored beyond the owned part on each interior side); 0 for none."""
        return 0

    def isComplete(self) -> bool:
        raise NotImplementedError

    def isChunked(self, numlabs: int) -> bool:
        """True when a lab's local part is a list of arrays (see :meth:`chunkSelections`)."""
        return False

    def localIndices(self, lab: int, numlabs: int) -> tuple[np.ndarray, ...]:
        """Per-dimension 0-based global indices stored by ``lab``, in local order."""
        c = self._ready(numlabs)
        return tuple(c.globalIndices(d + 1, lab, numlabs) for d in range(c._ndim()))

    def globalIndices(self, dim: int | None = None, lab: int | None = None,
                      numlabs: int | None = None, *, axis: int | None = None) -> np.ndarray:
        raise NotImplementedError

    def localShape(self, lab: int, numlabs: int) -> tuple[int, ...]:
        """Shape of the local part stored by ``lab`` (arithmetic, no index arrays)."""
        raise NotImplementedError

    def localSelection(self, lab: int, numlabs: int) -> tuple[Selection, ...]:
        """Per dimension, the global indices ``lab`` stores, in local order: a ``slice``
        (step 1) where they are one contiguous range, else an increasing int64 array.
        ``A[region(sel)]``-style code uses it to avoid index arrays proportional to the
        array size (1-D layouts are all slices)."""
        raise NotImplementedError

    def chunkSelections(self, lab: int, numlabs: int) -> list[tuple[Selection, ...]]:
        """The global indices of each array ``lab`` stores (halo cells included), in local
        order; for a layout that is not chunked, ``[localSelection(lab, numlabs)]``."""
        return [self.localSelection(lab, numlabs)]

    def ownedPieces(self, lab: int, numlabs: int) -> list[Piece]:
        """``(k, global_sel, local_sel)`` for each piece ``lab`` owns: chunk number ``k``
        (into :meth:`chunkSelections`), the piece's global indices and their positions in
        that chunk. Over all labs the pieces are disjoint and cover the array once."""
        sel = self.localSelection(lab, numlabs)
        shape = self.localShape(lab, numlabs)
        return [(0, sel, tuple(slice(0, s) for s in shape))]


class SizedLayout(LayoutBase):
    """A layout that learns its global size and its number of labs together, at
    ``complete`` (blocks, chunk maps): ``GlobalSize``, ``NumLabs``, ``isComplete`` and
    ``_ready``, which keeps the completed copy for each lab count it was asked for."""

    _gsize: tuple[int, ...] | None
    _numlabs: int | None

    @property
    def GlobalSize(self) -> tuple[int, ...] | None:
        """Global shape, or None if not yet known."""
        return self._gsize

    @property
    def NumLabs(self) -> int | None:
        """Number of labs the complete layout is for (set by ``complete``), else None."""
        return self._numlabs

    def isComplete(self) -> bool:
        """True when GlobalSize and NumLabs are set."""
        return self._gsize is not None and self._numlabs is not None

    def complete(self, gsize: Sequence[int], numlabs: int) -> SizedLayout:
        raise NotImplementedError

    def _ready(self, numlabs: int) -> SizedLayout:
        n = check_numlabs(numlabs)
        if self._gsize is None:
            raise ValueError(f"{type(self).__name__} is not complete (GlobalSize unknown); "
                             "call complete(gsize, numlabs) first")
        if self._numlabs == n:
            return self
        copies = self.__dict__.setdefault("_completions", {})
        if n not in copies:
            copies[n] = self.complete(self._gsize, n)
        return copies[n]

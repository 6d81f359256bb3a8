"""Codistributors: pure index arithmetic for 1-D and 2-D block-cyclic layouts.

No MPI here.  Every method that depends on the pool size takes ``numlabs``
explicitly (the lab-side wrappers supply it).  Numbering follows docs/design.md:
labs are 1..numlabs, dimensions passed as ``dim`` are 1-based (``axis=`` is the
0-based alternative), element indices are 0-based numpy indices.

A lab's part is always a Cartesian product of per-dimension global index sets
(listed in local order), so ``A[np.ix_(*c.localIndices(lab, n))]`` is that
lab's local part of a global array ``A``.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import runtime  # no MPI: only the running block's numlabs() for MATLAB's defaults
from .checks import check_lab, check_numlabs, dim_to_axis, is_int

__all__ = ["codistributor1d", "codistributor2dbc", "codistributor", "Codistributor", "numroc"]

IndexLike = Union[int, np.ndarray, Sequence[Any]]


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
Selection = Union[slice, np.ndarray]
_ZERO_D = "codistributor1d cannot distribute a 0-d array (use shape (1,) or (1, 1))"


# --------------------------------------------------------------------------- helpers
def _check_gsize(gsize: Any) -> Tuple[int, ...]:
    if is_int(gsize):
        gsize = (gsize,)
    try:
        g = tuple(gsize)
    except TypeError:
        raise TypeError(f"gsize must be a sequence of non-negative integers, got {gsize!r}") from None
    if not all(is_int(s) and s >= 0 for s in g):
        raise ValueError(f"gsize must contain non-negative integers, got {gsize!r}")
    return tuple(int(s) for s in g)


def _int_array(i: Any) -> np.ndarray:
    a = np.asarray(i)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"indices must be integers, got {i!r}")
    return a.astype(np.int64, copy=False)


def _normalize_index(i: Any, size: int, dim: int) -> np.ndarray:
    """Global 0-based index (scalar or array; negatives count from the end) → int64 array."""
    a = _int_array(i)
    if a.size and (a.min() < -size or a.max() >= size):
        bad = a[(a < -size) | (a >= size)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    return np.where(a < 0, a + size, a)


def _out(a: Any, *likes: Any) -> Union[int, np.ndarray]:
    """A Python int when every input in ``likes`` was a scalar, else an int64 array."""
    return int(a) if all(np.ndim(x) == 0 for x in likes) else np.asarray(a, dtype=np.int64)


def _runs(idx: np.ndarray) -> str:
    """'[0:3, 6:8]' for the contiguous runs in a sorted index array."""
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


class _Base:
    GlobalSize: Optional[Tuple[int, ...]]

    def _key(self) -> tuple:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__,) + self._key())

    def _ndim(self) -> int:
        return len(self.GlobalSize)

    def _resolve_dim(self, dim: Any, axis: Any) -> int:
        return dim_to_axis(dim, axis, self._ndim()) + 1

    def localIndices(self, lab: int, numlabs: int) -> Tuple[np.ndarray, ...]:
        """Per-dimension 0-based global indices stored by ``lab``, in local order."""
        c = self._ready(numlabs)
        return tuple(c.globalIndices(d + 1, lab, numlabs) for d in range(c._ndim()))

    def localShape(self, lab: int, numlabs: int) -> Tuple[int, ...]:
        """Shape of the local part stored by ``lab`` (arithmetic, no index arrays)."""
        raise NotImplementedError

    def localSelection(self, lab: int, numlabs: int) -> Tuple[Selection, ...]:
        """Per dimension, the global indices ``lab`` stores, in local order: a ``slice``
        (step 1) where they are one contiguous range, else an increasing int64 array.
        ``A[region(sel)]``-style code uses it to avoid index arrays proportional to the
        array size (1-D layouts are all slices)."""
        raise NotImplementedError


# --------------------------------------------------------------------------- 1-D
class codistributor1d(_Base):
    """Distribute an N-D array along one dimension in contiguous chunks.

    ``codistributor1d(dim=None, partition=None, gsize=None, *, axis=None)``:
    ``dim`` is 1-based as in MATLAB (``axis`` the 0-based alternative, negative
    allowed); the default dimension is the last non-singleton one of ``gsize``;
    the default partition is :meth:`defaultPartition`.  A ``dim`` beyond the
    array's number of dimensions is rejected (ValueError), not treated as a
    trailing singleton.
    """

    unsetDimension = None
    unsetPartition = None

    def __init__(self, dim: Optional[int] = None, partition: Optional[Sequence[int]] = None,
                 gsize: Optional[Sequence[int]] = None, *, axis: Optional[int] = None) -> None:
        self._gsize = None if gsize is None else _check_gsize(gsize)
        ndim = None if self._gsize is None else len(self._gsize)
        if ndim == 0:
            raise ValueError(_ZERO_D)
        if dim is None and ndim is None and is_int(axis) and axis < 0:
            self._dim = None  # a negative axis waits for the array's number of dimensions
        else:
            a = dim_to_axis(dim, axis, ndim, default=None)
            self._dim = None if a is None else a + 1
        self._pending_axis = axis if (self._dim is None and axis is not None) else None
        if self._dim is None and self._gsize is not None:
            self._dim = self.defaultDimension(self._gsize)
        self._partition = None
        if partition is not None:
            p = list(partition)
            if not all(is_int(x) and x >= 0 for x in p):
                raise ValueError(f"partition entries must be non-negative integers, got {partition!r}")
            self._partition = [int(x) for x in p]
            if self._gsize is not None:
                self._check_sum(self._partition, self._dim, self._gsize)

    # ---- properties
    @property
    def Dimension(self) -> Optional[int]:
        """Distribution dimension (1-based), or None if not yet known."""
        return self._dim

    @property
    def Partition(self) -> Optional[list]:
        """Number of elements along Dimension stored by each lab, or None."""
        return None if self._partition is None else list(self._partition)

    @property
    def GlobalSize(self) -> Optional[Tuple[int, ...]]:
        """Global shape, or None if not yet known."""
        return self._gsize

    def _key(self) -> tuple:
        part = None if self._partition is None else tuple(self._partition)
        return (self._dim, self._pending_axis, part, self._gsize)

    def __repr__(self) -> str:
        d = self._dim if self._pending_axis is None else f"axis={self._pending_axis}"
        return (f"codistributor1d(Dimension={d}, Partition={self._partition}, "
                f"GlobalSize={self._gsize})")

    # ---- static helpers
    @staticmethod
    def defaultPartition(n: int, numlabs: Optional[int] = None) -> list:
        """Split ``n`` elements over ``numlabs`` labs (default: the labs of the running
        block, as MATLAB); the first ``n % numlabs`` get one extra.

        >>> codistributor1d.defaultPartition(10, 4)
        [3, 3, 2, 2]
        """
        numlabs = check_numlabs(runtime.numlabs() if numlabs is None else numlabs)
        if not is_int(n) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        q, r = divmod(int(n), numlabs)
        return [q + 1] * r + [q] * (numlabs - r)

    @staticmethod
    def defaultDimension(gsize: Sequence[int]) -> int:
        """Last non-singleton dimension (1-based); the last one if all are singleton."""
        g = _check_gsize(gsize)
        if not g:
            raise ValueError("a 0-d array has no dimension to distribute")
        for d in range(len(g), 0, -1):
            if g[d - 1] != 1:
                return d
        return len(g)

    @staticmethod
    def _check_sum(part: list, dim: int, gsize: Tuple[int, ...]) -> None:
        if sum(part) != gsize[dim - 1]:
            raise ValueError(f"partition {part} sums to {sum(part)} but dimension {dim} "
                             f"has size {gsize[dim - 1]}")

    # ---- completion
    def complete(self, gsize: Sequence[int], numlabs: int) -> "codistributor1d":
        """Copy with Dimension, Partition and GlobalSize filled in for ``gsize`` on ``numlabs`` labs."""
        g = _check_gsize(gsize)
        n = check_numlabs(numlabs)
        if self._gsize is not None and self._gsize != g:
            raise ValueError(f"codistributor is for global size {self._gsize} "
                             f"but the array has size {g}")
        if not g:
            raise ValueError(_ZERO_D)
        dim = self._dim
        if dim is None and self._pending_axis is not None:
            dim = dim_to_axis(None, self._pending_axis, len(g)) + 1
        if dim is None:
            dim = self.defaultDimension(g)
        elif dim > len(g):
            dim_to_axis(dim, None, len(g))  # raises with the rule
        part = self._partition
        if part is None:
            part = self.defaultPartition(g[dim - 1], n)
        elif len(part) != n:
            raise ValueError(f"partition has {len(part)} entries but there are {n} labs")
        self._check_sum(part, dim, g)
        return codistributor1d(dim, list(part), g)

    def isComplete(self) -> bool:
        """True when Dimension, Partition and GlobalSize are all set."""
        return self._dim is not None and self._partition is not None and self._gsize is not None

    def _ready(self, numlabs: int) -> "codistributor1d":
        n = check_numlabs(numlabs)
        if not self.isComplete():
            if self._gsize is None:
                raise ValueError("codistributor1d is not complete (GlobalSize unknown); "
                                 "call complete(gsize, numlabs) first")
            return self.complete(self._gsize, n)
        if len(self._partition) != n:
            raise ValueError(f"codistributor has a partition for {len(self._partition)} labs "
                             f"but numlabs is {n}")
        return self

    def _bounds(self, lab: int) -> Tuple[int, int]:
        p = self._partition
        start = sum(p[:lab - 1])
        return start, start + p[lab - 1]

    # ---- index math
    def globalIndices(self, dim: Optional[int] = None, lab: Optional[int] = None,
                      numlabs: Optional[int] = None, *, axis: Optional[int] = None) -> np.ndarray:
        """0-based global indices along a dimension stored by ``lab`` (default: Dimension)."""
        if lab is None or numlabs is None:
            raise TypeError("globalIndices needs lab and numlabs")
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        d = c._dim if dim is None and axis is None else c._resolve_dim(dim, axis)
        if d != c._dim:
            return np.arange(c._gsize[d - 1], dtype=np.int64)
        lo, hi = c._bounds(lab)
        return np.arange(lo, hi, dtype=np.int64)

    def localShape(self, lab: int, numlabs: int) -> Tuple[int, ...]:
        """Shape of the local part stored by ``lab`` (O(1): no index arrays)."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        shape = list(c._gsize)
        shape[c._dim - 1] = c._partition[lab - 1]
        return tuple(shape)

    def localSelection(self, lab: int, numlabs: int) -> Tuple[slice, ...]:
        """Per-dimension slices of ``lab``'s part (the same as :meth:`localSlices`)."""
        return self.localSlices(lab, numlabs)

    def localSlices(self, lab: int, numlabs: int) -> Tuple[slice, ...]:
        """The global region stored by ``lab`` as a tuple of slices."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        sl = [slice(0, s) for s in c._gsize]
        sl[c._dim - 1] = slice(*c._bounds(lab))
        return tuple(sl)

    def _split(self, index: Any) -> Tuple[Optional[list], Any]:
        """(normalised index list or None, component along Dimension) for an index argument."""
        if isinstance(index, tuple):
            if len(index) != self._ndim():
                raise ValueError(f"index tuple has {len(index)} entries but the array is "
                                 f"{self._ndim()}-D")
            full = [_out(_normalize_index(x, s, d + 1), x)
                    for d, (x, s) in enumerate(zip(index, self._gsize))]
            return full, index[self._dim - 1]
        return None, index

    def ownerOf(self, index: IndexLike, numlabs: int) -> Union[int, np.ndarray]:
        """Lab (1-based) owning a global index: a full index tuple, or an index
        (int or int array) along the distributed dimension."""
        c = self._ready(numlabs)
        _, i = c._split(index)
        a = _normalize_index(i, c._gsize[c._dim - 1], c._dim)
        ends = np.cumsum(c._partition)
        return _out(np.searchsorted(ends, a, side="right") + 1, i)

    def globalToLocal(self, index: IndexLike, numlabs: int) -> Tuple[Any, Any]:
        """``(lab, local_index)`` for a global index (tuple or along Dimension).
        A tuple comes back as a tuple, other components bounds-checked and negatives wrapped."""
        c = self._ready(numlabs)
        full, i = c._split(index)
        lab = c.ownerOf(i, numlabs)
        a = _normalize_index(i, c._gsize[c._dim - 1], c._dim)
        starts = np.concatenate(([0], np.cumsum(c._partition)))
        loc = _out(a - starts[np.asarray(lab) - 1], i)
        if full is None:
            return lab, loc
        full[c._dim - 1] = loc
        return lab, tuple(full)

    def localToGlobal(self, lab: Union[int, np.ndarray], local_index: IndexLike,
                      numlabs: int) -> Any:
        """Global index of ``local_index`` in ``lab``'s part (tuple or along Dimension).
        ``lab`` may be an int array (one lab per element)."""
        c = self._ready(numlabs)
        is_tuple = isinstance(local_index, tuple)
        if is_tuple and len(local_index) != c._ndim():
            c._split(local_index)  # raises with the rule
        i = local_index[c._dim - 1] if is_tuple else local_index
        labs, n = np.asarray(lab), check_numlabs(numlabs)
        if labs.size and (labs.dtype == bool or not np.issubdtype(labs.dtype, np.integer)
                          or labs.min() < 1 or labs.max() > n):
            raise ValueError(f"invalid lab {lab!r}: labs are numbered 1..{n} as in MATLAB")
        a = _int_array(i)
        starts = np.concatenate(([0], np.cumsum(c._partition)))
        sizes = np.asarray(c._partition)[labs - 1]
        if a.size and np.any((a < 0) | (a >= sizes)):
            raise IndexError(f"local index {i!r} is out of bounds for the part of lab {lab!r}")
        g = _out(a + starts[labs - 1], i, lab)
        if not is_tuple:
            return g
        out = list(local_index)
        out[c._dim - 1] = g
        return tuple(out)

    def describe_slice(self, lab: int, numlabs: int, name: str = "D") -> str:
        """MATLAB-like text, e.g. ``This lab stores D[:, 0:250].``"""
        sl = self.localSlices(lab, numlabs)
        d = self._ready(numlabs)._dim - 1
        parts = [":"] * len(sl)
        parts[d] = f"{sl[d].start}:{sl[d].stop}"
        empty = " (nothing: the range is empty)" if sl[d].start == sl[d].stop else ""
        return f"This lab stores {name}[{', '.join(parts)}]{empty}."


# --------------------------------------------------------------------------- 2-D block-cyclic
class codistributor2dbc(_Base):
    """2-D block-cyclic layout over a ``LabGrid`` = [r, c] of labs (ScaLAPACK style).

    Global row i lives on grid row ``(i // b) % r`` at local row
    ``(i // (b*r))*b + i % b`` (same for columns).  'row' orientation numbers labs
    row by row over the grid, 'col' column by column.
    """

    def __init__(self, labgrid: Optional[Sequence[int]] = None, blocksize: int = 64,
                 orientation: str = "row", gsize: Optional[Sequence[int]] = None) -> None:
        if labgrid is not None:
            g = list(labgrid)
            if len(g) != 2 or not all(is_int(x) and x >= 1 for x in g):
                raise ValueError(f"labgrid must be two positive integers [rows, cols], got {labgrid!r}")
            labgrid = [int(x) for x in g]
        self._grid = labgrid
        if not is_int(blocksize):
            raise TypeError(f"blocksize must be an integer, got {blocksize!r}")
        if blocksize < 1:
            raise ValueError(f"blocksize must be >= 1, got {blocksize}")
        self._b = int(blocksize)
        if not isinstance(orientation, str) or orientation.lower() not in ("row", "col"):
            raise ValueError(f"orientation must be 'row' or 'col', got {orientation!r}")
        self._orient = orientation.lower()
        self._gsize = None if gsize is None else self._check_2d(gsize)

    @staticmethod
    def _check_2d(gsize: Any) -> Tuple[int, ...]:
        g = _check_gsize(gsize)
        if len(g) != 2:
            raise ValueError(f"codistributor2dbc distributes 2-D arrays only; got a "
                             f"{len(g)}-D size {g}")
        return g

    @property
    def LabGrid(self) -> Optional[list]:
        """[rows, cols] of the lab grid, or None if not yet known."""
        return None if self._grid is None else list(self._grid)

    @property
    def BlockSize(self) -> int:
        return self._b

    @property
    def Orientation(self) -> str:
        return self._orient

    @property
    def GlobalSize(self) -> Optional[Tuple[int, ...]]:
        return self._gsize

    def _key(self) -> tuple:
        grid = None if self._grid is None else tuple(self._grid)
        return (grid, self._b, self._orient, self._gsize)

    def __repr__(self) -> str:
        return (f"codistributor2dbc(LabGrid={self._grid}, BlockSize={self._b}, "
                f"Orientation={self._orient!r}, GlobalSize={self._gsize})")

    @staticmethod
    def defaultLabGrid(n: Optional[int] = None) -> list:
        """[r, n // r] with r the largest divisor of n (default: the labs of the running
        block) not above sqrt(n)."""
        n = check_numlabs(runtime.numlabs() if n is None else n)
        r = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
        return [r, n // r]

    def complete(self, gsize: Sequence[int], numlabs: int) -> "codistributor2dbc":
        """Copy with LabGrid and GlobalSize filled in for ``gsize`` on ``numlabs`` labs."""
        g = self._check_2d(gsize)
        n = check_numlabs(numlabs)
        if self._gsize is not None and self._gsize != g:
            raise ValueError(f"codistributor is for global size {self._gsize} "
                             f"but the array has size {g}")
        grid = self._grid if self._grid is not None else self.defaultLabGrid(n)
        if grid[0] * grid[1] != n:
            raise ValueError(f"labgrid {grid} holds {grid[0] * grid[1]} labs but there are "
                             f"{n} labs (the product must equal numlabs)")
        return codistributor2dbc(list(grid), self._b, self._orient, g)

    def isComplete(self) -> bool:
        """True when LabGrid and GlobalSize are set."""
        return self._grid is not None and self._gsize is not None

    def _ready(self, numlabs: int) -> "codistributor2dbc":
        n = check_numlabs(numlabs)
        if not self.isComplete():
            if self._gsize is None:
                raise ValueError("codistributor2dbc is not complete (GlobalSize unknown); "
                                 "call complete(gsize, numlabs) first")
            return self.complete(self._gsize, n)
        if self._grid[0] * self._grid[1] != n:
            raise ValueError(f"labgrid {self._grid} holds {self._grid[0] * self._grid[1]} "
                             f"labs but numlabs is {n}")
        return self

    # ---- grid coordinates
    def gridCoords(self, lab: int, numlabs: int) -> Tuple[int, int]:
        """0-based (grid row, grid column) of ``lab``."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        r, q = c._grid
        return divmod(lab - 1, q) if c._orient == "row" else ((lab - 1) % r, (lab - 1) // r)

    def _lab_at(self, pr: Any, pc: Any) -> Any:
        r, q = self._grid
        return (pr * q + pc if self._orient == "row" else pc * r + pr) + 1

    def _dim_map(self, i: np.ndarray, d: int) -> Tuple[np.ndarray, np.ndarray]:
        """(grid coordinate, local index) of global indices ``i`` along dimension d (1 or 2)."""
        b, p = self._b, self._grid[d - 1]
        return (i // b) % p, (i // (b * p)) * b + i % b

    # ---- index math
    def globalIndices(self, dim: Optional[int] = None, lab: Optional[int] = None,
                      numlabs: Optional[int] = None, *, axis: Optional[int] = None) -> np.ndarray:
        """0-based global row (dim=1) or column (dim=2) indices stored by ``lab``, in local order."""
        if lab is None or numlabs is None:
            raise TypeError("globalIndices needs lab and numlabs")
        c = self._ready(numlabs)
        d = c._resolve_dim(dim, axis)
        coord = c.gridCoords(lab, numlabs)[d - 1]
        b, p, m = c._b, c._grid[d - 1], c._gsize[d - 1]
        starts = np.arange(coord * b, m, b * p, dtype=np.int64)
        g = (starts[:, None] + np.arange(b, dtype=np.int64)).ravel()
        return g[g < m]

    def _count(self, d: int, coord: int) -> int:
        """How many global indices along dimension d (1 or 2) grid coordinate ``coord`` holds."""
        return numroc(self._gsize[d - 1], self._b, coord, self._grid[d - 1])

    def localShape(self, lab: int, numlabs: int) -> Tuple[int, ...]:
        """Shape of the local part stored by ``lab`` (arithmetic, no index arrays)."""
        c = self._ready(numlabs)
        pr, pc = c.gridCoords(lab, numlabs)
        return (c._count(1, pr), c._count(2, pc))

    def localSelection(self, lab: int, numlabs: int) -> Tuple[Selection, ...]:
        """Per dimension a slice when ``lab`` holds one contiguous run (a grid of one
        row/column, or at most one block), else the increasing index array."""
        c = self._ready(numlabs)
        out = []
        for d, coord in enumerate(c.gridCoords(lab, numlabs), start=1):
            count = c._count(d, coord)
            if c._grid[d - 1] == 1 or count <= c._b:
                start = coord * c._b if count else 0
                out.append(slice(start, start + count))
            else:
                out.append(c.globalIndices(d, lab, numlabs))
        return tuple(out)

    def _split(self, index: Any) -> Tuple[np.ndarray, np.ndarray]:
        if not isinstance(index, tuple) or len(index) != 2:
            raise ValueError(f"codistributor2dbc needs a (row, col) index tuple, got {index!r}")
        return (_normalize_index(index[0], self._gsize[0], 1),
                _normalize_index(index[1], self._gsize[1], 2))

    def ownerOf(self, index: Tuple[Any, Any], numlabs: int) -> Union[int, np.ndarray]:
        """Lab (1-based) owning global element ``(i, j)`` (ints or broadcastable arrays)."""
        c = self._ready(numlabs)
        i, j = c._split(index)
        return _out(c._lab_at(c._dim_map(i, 1)[0], c._dim_map(j, 2)[0]), *index)

    def globalToLocal(self, index: Tuple[Any, Any], numlabs: int) -> Tuple[Any, Tuple[Any, Any]]:
        """``(lab, (local_row, local_col))`` for global ``(i, j)``."""
        c = self._ready(numlabs)
        i, j = c._split(index)
        (pr, li), (pc, lj) = c._dim_map(i, 1), c._dim_map(j, 2)
        return _out(c._lab_at(pr, pc), *index), (_out(li, index[0]), _out(lj, index[1]))

    def localToGlobal(self, lab: int, local_index: Tuple[Any, Any], numlabs: int) -> Tuple[Any, Any]:
        """Global ``(i, j)`` of local ``(li, lj)`` in ``lab``'s part."""
        c = self._ready(numlabs)
        if not isinstance(local_index, tuple) or len(local_index) != 2:
            raise ValueError(f"codistributor2dbc needs a (row, col) index tuple, got {local_index!r}")
        shape = c.localShape(lab, numlabs)
        out = []
        for d, (li, coord) in enumerate(zip(local_index, c.gridCoords(lab, numlabs))):
            a = _int_array(li)
            if a.size and (a.min() < 0 or a.max() >= shape[d]):
                raise IndexError(f"local index {li!r} is out of bounds for dimension {d + 1} "
                                 f"of lab {lab}'s part with size {shape[d]}")
            b, p = c._b, c._grid[d]
            out.append(_out((a // b) * (b * p) + coord * b + a % b, li))
        return tuple(out)

    def describe_slice(self, lab: int, numlabs: int, name: str = "D") -> str:
        """e.g. ``This lab stores blocks of size 3 of D: rows [0:3, 6:8], columns [0:3, 6:8].``"""
        rows, cols = self.localIndices(lab, numlabs)
        return (f"This lab stores blocks of size {self._b} of {name}: rows {_runs(rows)}, "
                f"columns {_runs(cols)}.")


# --------------------------------------------------------------------------- factory
Codistributor = Union[codistributor1d, codistributor2dbc]


def codistributor(kind: str = "1d", *args: Any, **kwargs: Any) -> Codistributor:
    """``codistributor('1d', ...)`` → codistributor1d, ``codistributor('2dbc', ...)`` → codistributor2dbc."""
    k = kind.lower() if isinstance(kind, str) else kind
    if k == "1d":
        return codistributor1d(*args, **kwargs)
    if k == "2dbc":
        return codistributor2dbc(*args, **kwargs)
    raise ValueError(f"unknown codistributor kind {kind!r}: use '1d' or '2dbc'")

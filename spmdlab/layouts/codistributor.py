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

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import runtime  # no MPI: only the running block's numlabs() for MATLAB's defaults
from ..checks import check_lab, check_numlabs, dim_to_axis, is_int
from .base import (
    IndexLike,
    LayoutBase,
    Piece,
    Selection,
    check_gsize,
    index_out,
    int_array,
    normalize_index,
    numroc,
    runs_text,
)
from .blocks import codistributorBlocks
from .chunks import codistributorChunks
from .grids import near_square, parse_2dbc

__all__ = ["codistributor1d", "codistributor2dbc", "codistributor", "Codistributor", "Layout", "numroc",
           "Selection", "codistributorBlocks", "codistributorChunks"]

_ZERO_D = "codistributor1d cannot distribute a 0-d array (use shape (1,) or (1, 1))"


# --------------------------------------------------------------------------- 1-D
class codistributor1d(LayoutBase):
    """Distribute an N-D array along one dimension in contiguous chunks.

    ``codistributor1d(dim=None, partition=None, gsize=None, *, axis=None, halo=0)``:
    ``dim`` is 1-based as in MATLAB (``axis`` the 0-based alternative, negative
    allowed); the default dimension is the last non-singleton one of ``gsize``;
    the default partition is :meth:`defaultPartition`.  A ``dim`` beyond the
    array's number of dimensions is rejected (ValueError), not treated as a
    trailing singleton.

    ``halo=w``: each lab also stores up to ``w`` elements of its neighbours on each
    side along Dimension (clipped at the array's ends; a lab with an empty partition
    stores nothing). The local part, ``localShape``/``localSelection``/``globalIndices``
    and ``globalToLocal``/``localToGlobal`` then refer to the stored range; ownership
    (``ownerOf``, ``ownedPieces``) stays the partition's.

    >>> c = codistributor1d(1, [3, 3], (6,), halo=1)
    >>> c.localSlices(1, 2), c.localSlices(2, 2)
    ((slice(0, 4, None),), (slice(2, 6, None),))
    """

    unsetDimension = None
    unsetPartition = None

    def __init__(self, dim: int | None = None, partition: Sequence[int] | None = None,
                 gsize: Sequence[int] | None = None, *, axis: int | None = None, halo: int = 0) -> None:
        if not is_int(halo) or halo < 0:
            raise ValueError(f"halo must be a non-negative integer, got {halo!r}")
        self._halo = int(halo)
        self._gsize = None if gsize is None else check_gsize(gsize)
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
    def Dimension(self) -> int | None:
        """Distribution dimension (1-based), or None if not yet known."""
        return self._dim

    @property
    def Partition(self) -> list | None:
        """Number of elements along Dimension stored by each lab, or None."""
        return None if self._partition is None else list(self._partition)

    @property
    def GlobalSize(self) -> tuple[int, ...] | None:
        """Global shape, or None if not yet known."""
        return self._gsize

    @property
    def Halo(self) -> int:
        """Halo width: elements stored beyond the partition on each side along Dimension."""
        return self._halo

    @property
    def NumLabs(self) -> int | None:
        """Number of labs (``len(Partition)``) of a complete layout, else None."""
        return len(self._partition) if self.isComplete() else None

    def _key(self) -> tuple:
        part = None if self._partition is None else tuple(self._partition)
        halo = (self._halo,) if self._halo else ()  # halo=0 keys (and hashes) as before halos
        return (self._dim, self._pending_axis, part, self._gsize) + halo

    def __repr__(self) -> str:
        d = self._dim if self._pending_axis is None else f"axis={self._pending_axis}"
        halo = f", Halo={self._halo}" if self._halo else ""
        return (f"codistributor1d(Dimension={d}, Partition={self._partition}, "
                f"GlobalSize={self._gsize}{halo})")

    # ---- static helpers
    @staticmethod
    def defaultPartition(n: int, numlabs: int | None = None) -> list:
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
        g = check_gsize(gsize)
        if not g:
            raise ValueError("a 0-d array has no dimension to distribute")
        for d in range(len(g), 0, -1):
            if g[d - 1] != 1:
                return d
        return len(g)

    @staticmethod
    def _check_sum(part: list, dim: int, gsize: tuple[int, ...]) -> None:
        if sum(part) != gsize[dim - 1]:
            raise ValueError(f"partition {part} sums to {sum(part)} but dimension {dim} "
                             f"has size {gsize[dim - 1]}")

    # ---- completion
    def complete(self, gsize: Sequence[int], numlabs: int) -> codistributor1d:
        """Copy with Dimension, Partition and GlobalSize filled in for ``gsize`` on ``numlabs`` labs."""
        g = check_gsize(gsize)
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
        return codistributor1d(dim, list(part), g, halo=self._halo)

    def isComplete(self) -> bool:
        """True when Dimension, Partition and GlobalSize are all set."""
        return self._dim is not None and self._partition is not None and self._gsize is not None

    def _ready(self, numlabs: int) -> codistributor1d:
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

    def _bounds(self, lab: int) -> tuple[int, int]:
        p = self._partition
        start = sum(p[:lab - 1])
        return start, start + p[lab - 1]

    def _stored(self, lab: int) -> tuple[int, int]:
        """[start, stop) along Dimension of what ``lab`` stores: its partition range
        grown by the halo on both sides, clipped at the ends (an empty range stays empty)."""
        lo, hi = self._bounds(lab)
        w = self._halo
        if not w or lo == hi:
            return lo, hi
        return max(0, lo - w), min(self._gsize[self._dim - 1], hi + w)

    def _stored_starts_sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per lab (index lab-1), the start and the size of the stored range along Dimension."""
        ranges = np.array([self._stored(k) for k in range(1, len(self._partition) + 1)], dtype=np.int64)
        return ranges[:, 0], ranges[:, 1] - ranges[:, 0]

    # ---- index math
    def globalIndices(self, dim: int | None = None, lab: int | None = None,
                      numlabs: int | None = None, *, axis: int | None = None) -> np.ndarray:
        """0-based global indices along a dimension stored by ``lab`` (default: Dimension)."""
        if lab is None or numlabs is None:
            raise TypeError("globalIndices needs lab and numlabs")
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        d = c._dim if dim is None and axis is None else c._resolve_dim(dim, axis)
        if d != c._dim:
            return np.arange(c._gsize[d - 1], dtype=np.int64)
        lo, hi = c._stored(lab)
        return np.arange(lo, hi, dtype=np.int64)

    def localShape(self, lab: int, numlabs: int) -> tuple[int, ...]:
        """Shape of the local part stored by ``lab`` (O(1): no index arrays)."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        shape = list(c._gsize)
        lo, hi = c._stored(lab)
        shape[c._dim - 1] = hi - lo
        return tuple(shape)

    def localSelection(self, lab: int, numlabs: int) -> tuple[slice, ...]:
        """Per-dimension slices of ``lab``'s part (the same as :meth:`localSlices`)."""
        return self.localSlices(lab, numlabs)

    def localSlices(self, lab: int, numlabs: int) -> tuple[slice, ...]:
        """The global region stored by ``lab`` as a tuple of slices."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        sl = [slice(0, s) for s in c._gsize]
        sl[c._dim - 1] = slice(*c._stored(lab))
        return tuple(sl)

    def ownedPieces(self, lab: int, numlabs: int) -> list[Piece]:
        """``[(0, global, local)]``: the partition range ``lab`` owns (the interior, without
        halo cells) and its positions in the stored part."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        glob = list(c.localSlices(lab, numlabs))
        loc = [slice(0, s) for s in c.localShape(lab, numlabs)]
        lo, hi = c._bounds(lab)
        start = c._stored(lab)[0]
        glob[c._dim - 1] = slice(lo, hi)
        loc[c._dim - 1] = slice(lo - start, hi - start)
        return [(0, tuple(glob), tuple(loc))]

    def _split(self, index: Any) -> tuple[list | None, Any]:
        """(normalised index list or None, component along Dimension) for an index argument."""
        if isinstance(index, tuple):
            if len(index) != self._ndim():
                raise ValueError(f"index tuple has {len(index)} entries but the array is "
                                 f"{self._ndim()}-D")
            full = [index_out(normalize_index(x, s, d + 1), x)
                    for d, (x, s) in enumerate(zip(index, self._gsize))]
            return full, index[self._dim - 1]
        return None, index

    def ownerOf(self, index: IndexLike, numlabs: int) -> int | np.ndarray:
        """Lab (1-based) owning a global index: a full index tuple, or an index
        (int or int array) along the distributed dimension."""
        c = self._ready(numlabs)
        _, i = c._split(index)
        a = normalize_index(i, c._gsize[c._dim - 1], c._dim)
        ends = np.cumsum(c._partition)
        return index_out(np.searchsorted(ends, a, side="right") + 1, i)

    def globalToLocal(self, index: IndexLike, numlabs: int) -> tuple[Any, Any]:
        """``(lab, local_index)`` for a global index (tuple or along Dimension): the owning
        lab and the position in its stored part (with a halo, that part starts before the
        partition range). A tuple comes back as a tuple, other components bounds-checked
        and negatives wrapped."""
        c = self._ready(numlabs)
        full, i = c._split(index)
        lab = c.ownerOf(i, numlabs)
        a = normalize_index(i, c._gsize[c._dim - 1], c._dim)
        if c._halo:
            starts = c._stored_starts_sizes()[0]
        else:
            starts = np.concatenate(([0], np.cumsum(c._partition)))
        loc = index_out(a - starts[np.asarray(lab) - 1], i)
        if full is None:
            return lab, loc
        full[c._dim - 1] = loc
        return lab, tuple(full)

    def localToGlobal(self, lab: int | np.ndarray, local_index: IndexLike,
                      numlabs: int) -> Any:
        """Global index of ``local_index`` in ``lab``'s part (tuple or along Dimension; a
        position in the stored part, halo included). ``lab`` may be an int array (one lab
        per element)."""
        c = self._ready(numlabs)
        is_tuple = isinstance(local_index, tuple)
        if is_tuple and len(local_index) != c._ndim():
            c._split(local_index)  # raises with the rule
        i = local_index[c._dim - 1] if is_tuple else local_index
        labs, n = np.asarray(lab), check_numlabs(numlabs)
        if labs.size and (labs.dtype == bool or not np.issubdtype(labs.dtype, np.integer)
                          or labs.min() < 1 or labs.max() > n):
            raise ValueError(f"invalid lab {lab!r}: labs are numbered 1..{n} as in MATLAB")
        a = int_array(i)
        if c._halo:
            starts, sizes = c._stored_starts_sizes()
            sizes = sizes[labs - 1]
        else:
            starts = np.concatenate(([0], np.cumsum(c._partition)))
            sizes = np.asarray(c._partition)[labs - 1]
        if a.size and np.any((a < 0) | (a >= sizes)):
            raise IndexError(f"local index {i!r} is out of bounds for the part of lab {lab!r}")
        g = index_out(a + starts[labs - 1], i, lab)
        if not is_tuple:
            return g
        out = list(local_index)
        out[c._dim - 1] = g
        return tuple(out)

    def describe_slice(self, lab: int, numlabs: int, name: str = "D") -> str:
        """MATLAB-like text, e.g. ``This lab stores D[:, 0:250].`` (with a halo:
        ``This lab stores D[0:4] with 1 halo cell on each interior side.``)"""
        sl = self.localSlices(lab, numlabs)
        c = self._ready(numlabs)
        d = c._dim - 1
        parts = [":"] * len(sl)
        parts[d] = f"{sl[d].start}:{sl[d].stop}"
        empty = " (nothing: the range is empty)" if sl[d].start == sl[d].stop else ""
        halo = ""
        if c._halo and not empty and (sl[d].start, sl[d].stop) != c._bounds(lab):
            halo = f" with {c._halo} halo cell{'s' if c._halo > 1 else ''} on each interior side"
        return f"This lab stores {name}[{', '.join(parts)}]{empty}{halo}."


# --------------------------------------------------------------------------- 2-D block-cyclic
class codistributor2dbc(LayoutBase):
    """2-D block-cyclic layout over a ``LabGrid`` = [r, c] of labs (ScaLAPACK style).

    Global row i lives on grid row ``(i // mb) % r`` at local row
    ``(i // (mb*r))*mb + i % mb`` (columns the same with nb).  'row' orientation numbers
    labs row by row over the grid, 'col' column by column.

    ``labgrid``: ``[r, c]``, or a process grid from ``spmdlab.grid`` (a ``Grid``, which
    may hold only some of the pool's labs: see ``spmdlab.arrays.subgrid``); index math
    then numbers labs inside the grid (1..r*c, ``Grid.rank_of``). ``blocksize``: ``b``
    or rectangular ``(mb, nb)`` (pbdBASE's ``bldim``). The default stays MATLAB's 64;
    pbdBASE's is 4x4 and pbdDMAT's 16x16.
    """

    def __init__(self, labgrid: Any = None, blocksize: int | Sequence[int] = 64,
                 orientation: str | None = None, gsize: Sequence[int] | None = None) -> None:
        self._grid, self._gridobj, (self._mb, self._nb), self._orient = parse_2dbc(labgrid, blocksize, orientation)
        self._gsize = None if gsize is None else self._check_2d(gsize)

    @staticmethod
    def _check_2d(gsize: Any) -> tuple[int, ...]:
        g = check_gsize(gsize)
        if len(g) != 2:
            raise ValueError(f"codistributor2dbc distributes 2-D arrays only; got a "
                             f"{len(g)}-D size {g}")
        return g

    @property
    def LabGrid(self) -> list | None:
        """[rows, cols] of the lab grid, or None if not yet known."""
        return None if self._grid is None else list(self._grid)

    @property
    def BlockSize(self) -> Any:
        """The block size: an int for square blocks, else ``(mb, nb)``."""
        return self._mb if self._mb == self._nb else (self._mb, self._nb)

    @property
    def BlockSizes(self) -> tuple[int, int]:
        """``(mb, nb)``: rows and columns of a block (pbdBASE's ``bldim``)."""
        return (self._mb, self._nb)

    @property
    def Grid(self) -> Any:
        """The process grid (``spmdlab.grid``) given instead of a LabGrid, else None."""
        return self._gridobj

    @property
    def Orientation(self) -> str:
        return self._orient

    @property
    def GlobalSize(self) -> tuple[int, ...] | None:
        return self._gsize

    @property
    def NumLabs(self) -> int | None:
        """Number of labs (rows * cols of LabGrid) of a complete layout, else None."""
        return self._grid[0] * self._grid[1] if self.isComplete() else None

    def _key(self) -> tuple:
        grid = None if self._grid is None else tuple(self._grid)
        labs = () if self._gridobj is None else (self._gridobj.labs,)
        return (grid, self.BlockSize, self._orient, self._gsize) + labs

    def __repr__(self) -> str:
        labs = "" if self._gridobj is None else f", Labs={list(self._gridobj.labs)}"
        return (f"codistributor2dbc(LabGrid={self._grid}, BlockSize={self.BlockSize}, "
                f"Orientation={self._orient!r}, GlobalSize={self._gsize}{labs})")

    @staticmethod
    def defaultLabGrid(n: int | None = None) -> list:
        """[r, n // r] with r the largest divisor of n (default: the labs of the running
        block) not above sqrt(n)."""
        return list(near_square(runtime.numlabs() if n is None else n))

    def complete(self, gsize: Sequence[int], numlabs: int) -> codistributor2dbc:
        """Copy with LabGrid and GlobalSize filled in for ``gsize`` on ``numlabs`` labs."""
        g = self._check_2d(gsize)
        n = check_numlabs(numlabs)
        if self._gsize is not None and self._gsize != g:
            raise ValueError(f"codistributor is for global size {self._gsize} "
                             f"but the array has size {g}")
        grid = self._grid if self._grid is not None else self.defaultLabGrid(n)
        if self._gridobj is not None:  # a process grid: its labs must be in the pool
            if max(self._gridobj.labs) > n:
                raise ValueError(f"the grid {self._gridobj!r} uses lab {max(self._gridobj.labs)} but "
                                 f"there are {n} labs")
        elif grid[0] * grid[1] != n:
            raise ValueError(f"labgrid {grid} holds {grid[0] * grid[1]} labs but there are "
                             f"{n} labs (the product must equal numlabs)")
        return codistributor2dbc(self._gridobj or list(grid), self.BlockSizes, self._orient, g)

    def isComplete(self) -> bool:
        """True when LabGrid and GlobalSize are set."""
        return self._grid is not None and self._gsize is not None

    def _ready(self, numlabs: int) -> codistributor2dbc:
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
    def gridCoords(self, lab: int, numlabs: int) -> tuple[int, int]:
        """0-based (grid row, grid column) of ``lab``."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        r, q = c._grid
        return divmod(lab - 1, q) if c._orient == "row" else ((lab - 1) % r, (lab - 1) // r)

    def _lab_at(self, pr: Any, pc: Any) -> Any:
        r, q = self._grid
        return (pr * q + pc if self._orient == "row" else pc * r + pr) + 1

    def _dim_map(self, i: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
        """(grid coordinate, local index) of global indices ``i`` along dimension d (1 or 2)."""
        b, p = self.BlockSizes[d - 1], self._grid[d - 1]
        return (i // b) % p, (i // (b * p)) * b + i % b

    # ---- index math
    def globalIndices(self, dim: int | None = None, lab: int | None = None,
                      numlabs: int | None = None, *, axis: int | None = None) -> np.ndarray:
        """0-based global row (dim=1) or column (dim=2) indices stored by ``lab``, in local order."""
        if lab is None or numlabs is None:
            raise TypeError("globalIndices needs lab and numlabs")
        c = self._ready(numlabs)
        d = c._resolve_dim(dim, axis)
        coord = c.gridCoords(lab, numlabs)[d - 1]
        b, p, m = c.BlockSizes[d - 1], c._grid[d - 1], c._gsize[d - 1]
        starts = np.arange(coord * b, m, b * p, dtype=np.int64)
        g = (starts[:, None] + np.arange(b, dtype=np.int64)).ravel()
        return g[g < m]

    def _count(self, d: int, coord: int) -> int:
        """How many global indices along dimension d (1 or 2) grid coordinate ``coord`` holds."""
        return numroc(self._gsize[d - 1], self.BlockSizes[d - 1], coord, self._grid[d - 1])

    def localShape(self, lab: int, numlabs: int) -> tuple[int, ...]:
        """Shape of the local part stored by ``lab`` (arithmetic, no index arrays)."""
        c = self._ready(numlabs)
        pr, pc = c.gridCoords(lab, numlabs)
        return (c._count(1, pr), c._count(2, pc))

    def localSelection(self, lab: int, numlabs: int) -> tuple[Selection, ...]:
        """Per dimension a slice when ``lab`` holds one contiguous run (a grid of one
        row/column, or at most one block), else the increasing index array."""
        c = self._ready(numlabs)
        out = []
        for d, coord in enumerate(c.gridCoords(lab, numlabs), start=1):
            count = c._count(d, coord)
            b = c.BlockSizes[d - 1]
            if c._grid[d - 1] == 1 or count <= b:
                start = coord * b if count else 0
                out.append(slice(start, start + count))
            else:
                out.append(c.globalIndices(d, lab, numlabs))
        return tuple(out)

    def _split(self, index: Any) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(index, tuple) or len(index) != 2:
            raise ValueError(f"codistributor2dbc needs a (row, col) index tuple, got {index!r}")
        return (normalize_index(index[0], self._gsize[0], 1),
                normalize_index(index[1], self._gsize[1], 2))

    def ownerOf(self, index: tuple[Any, Any], numlabs: int) -> int | np.ndarray:
        """Lab (1-based) owning global element ``(i, j)`` (ints or broadcastable arrays)."""
        c = self._ready(numlabs)
        i, j = c._split(index)
        return index_out(c._lab_at(c._dim_map(i, 1)[0], c._dim_map(j, 2)[0]), *index)

    def globalToLocal(self, index: tuple[Any, Any], numlabs: int) -> tuple[Any, tuple[Any, Any]]:
        """``(lab, (local_row, local_col))`` for global ``(i, j)``."""
        c = self._ready(numlabs)
        i, j = c._split(index)
        (pr, li), (pc, lj) = c._dim_map(i, 1), c._dim_map(j, 2)
        return index_out(c._lab_at(pr, pc), *index), (index_out(li, index[0]), index_out(lj, index[1]))

    def localToGlobal(self, lab: int, local_index: tuple[Any, Any], numlabs: int) -> tuple[Any, Any]:
        """Global ``(i, j)`` of local ``(li, lj)`` in ``lab``'s part."""
        c = self._ready(numlabs)
        if not isinstance(local_index, tuple) or len(local_index) != 2:
            raise ValueError(f"codistributor2dbc needs a (row, col) index tuple, got {local_index!r}")
        shape = c.localShape(lab, numlabs)
        out = []
        for d, (li, coord) in enumerate(zip(local_index, c.gridCoords(lab, numlabs))):
            a = int_array(li)
            if a.size and (a.min() < 0 or a.max() >= shape[d]):
                raise IndexError(f"local index {li!r} is out of bounds for dimension {d + 1} "
                                 f"of lab {lab}'s part with size {shape[d]}")
            b, p = c.BlockSizes[d], c._grid[d]
            out.append(index_out((a // b) * (b * p) + coord * b + a % b, li))
        return tuple(out)

    def asBlocks(self) -> codistributorBlocks:
        """The same layout as a :class:`codistributorBlocks`: blocks of ``BlockSize`` in both
        dimensions, assigned by the grid of lab numbers (row by row for 'row' orientation,
        column by column for 'col')."""
        if self._grid is None:
            raise ValueError("asBlocks needs the LabGrid: give labgrid or call complete(gsize, numlabs) first")
        r, c = self._grid
        grid = np.arange(1, r * c + 1).reshape((r, c), order="C" if self._orient == "row" else "F")
        return codistributorBlocks(self.BlockSizes, grid, self._gsize)

    def describe_slice(self, lab: int, numlabs: int, name: str = "D") -> str:
        """e.g. ``This lab stores blocks of size 3 of D: rows [0:3, 6:8], columns [0:3, 6:8].``"""
        rows, cols = self.localIndices(lab, numlabs)
        size = "x".join(map(str, self.BlockSizes)) if self._mb != self._nb else str(self._mb)
        return (f"This lab stores blocks of size {size} of {name}: rows {runs_text(rows)}, "
                f"columns {runs_text(cols)}.")


# --------------------------------------------------------------------------- factory
Codistributor = codistributor1d | codistributor2dbc
Layout = codistributor1d | codistributor2dbc | codistributorBlocks | codistributorChunks
_KINDS = {"1d": codistributor1d, "2dbc": codistributor2dbc, "blocks": codistributorBlocks,
          "chunks": codistributorChunks}


def codistributor(kind: str = "1d", *args: Any, **kwargs: Any) -> Layout:
    """``codistributor('1d', ...)`` → codistributor1d, ``'2dbc'`` → codistributor2dbc,
    ``'blocks'`` → codistributorBlocks, ``'chunks'`` → codistributorChunks."""
    k = kind.lower() if isinstance(kind, str) else kind
    if k not in _KINDS:
        raise ValueError(f"unknown codistributor kind {kind!r}: use '1d', '2dbc', 'blocks' or 'chunks'")
    return _KINDS[k](*args, **kwargs)

"""Process grids: which labs form an ``nprow x npcol`` grid, and where each sits.

No MPI here (pure bookkeeping, like the rest of ``layouts``): the communicator of a grid
that is not the whole pool is made on the labs by ``spmdlab.arrays.subgrid``.

pbdBASE (``init.grid``, ``blacs_gridinit``) and ScaLAPACK's BLACS give every grid a
*context*: 0 the full grid (as near square as the process count allows, ``nprow <=
npcol``), 1 a single row of all processes, 2 a single column; users make more, on a
subset of the processes (a 2x1 grid on 4 processes). :class:`Grid` is that object:

- ``labs``: the pool's labs (1-based) in grid rank order; grid rank ``k`` (0-based)
  sits at ``divmod(k, npcol)`` for ``orientation='row'`` (BLACS' default row-major
  order), at ``(k % nprow, k // nprow)`` for ``'col'``;
- a grid is *full* on a pool of ``n`` labs when ``labs == (1, ..., n)``: arrays on it are
  ordinary codistributed arrays; on any other grid they live on the grid's labs alone
  (``spmdlab.arrays.subgrid``).

>>> g = make_grid(2, 1, (3, 4), numlabs=4)
>>> g.LabGrid, g.labs, g.coords(4), g.rank_of(1)
([2, 1], (3, 4), (1, 0), None)
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks import check_numlabs, is_int
from .blocks import codistributorBlocks

__all__ = ["Grid", "make_grid", "near_square", "parse_2dbc", "pool_blocks",
           "CONTEXT_FULL", "CONTEXT_ROW", "CONTEXT_COL"]

CONTEXT_FULL, CONTEXT_ROW, CONTEXT_COL = 0, 1, 2  # pbdBASE's three ready-made contexts


def near_square(n: int) -> tuple[int, int]:
    """``(r, n // r)`` with ``r`` the largest divisor of ``n`` not above ``sqrt(n)``: the
    grid pbdBASE's ``init.grid()`` and ScaLAPACK's users' guide advise (``nprow <= npcol``).

    >>> near_square(6), near_square(7), near_square(16)
    ((2, 3), (1, 7), (4, 4))
    """
    n = check_numlabs(n)
    r = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return r, n // r


class Grid:
    """An ``nprow x npcol`` process grid over some of the pool's labs (see the module
    docstring). Made by :func:`make_grid` (pure) or ``spmdlab.grid`` (on the labs, which
    also makes the grid's communicator)."""

    def __init__(self, nprow: int, npcol: int, labs: Sequence[int], orientation: str = "row",
                 context: int | None = None) -> None:
        self.nprow, self.npcol = int(nprow), int(npcol)
        self.labs = tuple(int(x) for x in labs)
        self.orientation = orientation
        self.context = context
        self.comm: Any = None  # the grid's communicator on a member lab (set on the labs)
        self.released = False  # gridexit was called

    # ---- facts
    @property
    def LabGrid(self) -> list[int]:
        """``[nprow, npcol]`` (codistributor2dbc's name)."""
        return [self.nprow, self.npcol]

    @property
    def size(self) -> int:
        """The number of labs in the grid."""
        return self.nprow * self.npcol

    def is_full(self, numlabs: int) -> bool:
        """True when the grid holds labs ``1..numlabs`` in rank order (the whole pool)."""
        return self.labs == tuple(range(1, int(numlabs) + 1))

    def rank_of(self, lab: int) -> int | None:
        """``lab``'s 1-based number inside the grid (its rank + 1), None if outside."""
        try:
            return self.labs.index(int(lab)) + 1
        except ValueError:
            return None

    def coords(self, lab: int) -> tuple[int, int] | None:
        """0-based ``(grid row, grid column)`` of pool lab ``lab``; None if outside."""
        k = self.rank_of(lab)
        if k is None:
            return None
        k -= 1
        return divmod(k, self.npcol) if self.orientation == "row" else (k % self.nprow, k // self.nprow)

    def lab_at(self, pr: int, pc: int) -> int:
        """The pool lab at 0-based grid coordinates ``(pr, pc)``."""
        k = pr * self.npcol + pc if self.orientation == "row" else pc * self.nprow + pr
        return self.labs[k]

    def lab_matrix(self) -> np.ndarray:
        """``nprow x npcol`` array of the pool's labs at each grid position (BLACS'
        ``usermap`` of ``blacs_gridmap``)."""
        flat = np.asarray(self.labs, dtype=np.int64)
        if self.orientation == "row":
            return flat.reshape((self.nprow, self.npcol))
        return flat.reshape((self.npcol, self.nprow)).T.copy()

    @property
    def key(self) -> tuple:
        """``(nprow, npcol, labs, orientation)``: what makes two grids the same."""
        return (self.nprow, self.npcol, self.labs, self.orientation)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Grid) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        ctx = "" if self.context is None else f", context={self.context}"
        gone = ", released" if self.released else ""
        return (f"Grid({self.nprow}x{self.npcol}, labs={list(self.labs)}, "
                f"orientation={self.orientation!r}{ctx}{gone})")

    def __reduce__(self) -> tuple:  # travels without its communicator
        return (Grid, (self.nprow, self.npcol, self.labs, self.orientation, self.context))


def _check_dim(x: Any, name: str) -> int | None:
    if x is None:
        return None
    if not is_int(x) or x < 1:
        raise ValueError(f"{name} must be a positive integer, got {x!r}")
    return int(x)


def _check_labs(labs: Any, numlabs: int) -> tuple[int, ...]:
    try:
        seq = list(np.asarray(labs).ravel().tolist()) if not isinstance(labs, (list, tuple)) else list(labs)
    except TypeError:
        raise TypeError(f"labs must be a sequence of lab numbers, got {labs!r}") from None
    if not seq:
        raise ValueError("labs is empty: a grid needs at least one lab")
    for x in seq:
        if not is_int(x):
            raise TypeError(f"labs must hold integer lab numbers, got {x!r}")
        if not 1 <= x <= numlabs:
            raise ValueError(f"lab {x} in labs is not in the pool: labs are numbered 1..{numlabs}")
    seen: dict[int, int] = {}
    for pos, x in enumerate(seq, start=1):
        if int(x) in seen:
            raise ValueError(f"lab {x} appears twice in labs (positions {seen[int(x)]} and {pos}): "
                             "a lab holds one place in a grid")
        seen[int(x)] = pos
    return tuple(int(x) for x in seq)


def make_grid(nprow: int | None = None, npcol: int | None = None, labs: Sequence[int] | None = None, *,
              numlabs: int, orientation: str = "row", context: int | None = None) -> Grid:
    """The :class:`Grid` ``nprow x npcol`` on a pool of ``numlabs`` labs, checked.

    ``labs`` (default: ``1..nprow*npcol``, BLACS' first processes) are placed in rank
    order. Missing sizes: both → :func:`near_square` of the number of labs; one → the
    other is the number of labs divided by it (it must divide). A grid larger than the
    pool, a lab outside the pool or a lab in two places is a ValueError naming it.
    """
    n = check_numlabs(numlabs)
    if not isinstance(orientation, str) or orientation.lower() not in ("row", "col"):
        raise ValueError(f"orientation must be 'row' or 'col', got {orientation!r}")
    r, c = _check_dim(nprow, "nprow"), _check_dim(npcol, "npcol")
    chosen = None if labs is None else _check_labs(labs, n)
    count = len(chosen) if chosen is not None else (r * c if r and c else n)
    if r is None and c is None:
        r, c = near_square(count)
    elif r is None or c is None:
        known = r or c
        assert known is not None
        if count % known:
            raise ValueError(f"a grid with {known} {'rows' if r else 'columns'} cannot hold {count} labs "
                             f"({count} is not a multiple of {known})")
        r, c = (known, count // known) if r else (count // known, known)
    assert r is not None and c is not None
    if r * c > n:
        raise ValueError(f"grid {r}x{c} needs {r * c} labs but the pool has {n}")
    if chosen is None:
        chosen = tuple(range(1, r * c + 1))
    elif len(chosen) != r * c:
        raise ValueError(f"grid {r}x{c} holds {r * c} labs but labs lists {len(chosen)}: {list(chosen)}")
    return Grid(r, c, chosen, orientation.lower(), context)


def _block_pair(blocksize: Any) -> tuple[int, int]:
    pair = (blocksize, blocksize) if is_int(blocksize) else blocksize
    try:
        mb, nb = pair
    except (TypeError, ValueError):
        raise TypeError(f"blocksize must be an integer or a pair (mb, nb) of integers, got {blocksize!r}") from None
    for x in (mb, nb):
        if not is_int(x):
            raise TypeError(f"blocksize must be an integer or a pair (mb, nb) of integers, got {blocksize!r}")
        if x < 1:
            raise ValueError(f"blocksize must be >= 1, got {blocksize!r}")
    return int(mb), int(nb)


def parse_2dbc(labgrid: Any, blocksize: Any, orientation: str | None) -> tuple:
    """``codistributor2dbc``'s arguments checked: ``(LabGrid or None, Grid or None,
    (mb, nb), orientation)``. A :class:`Grid` brings its own orientation (another one
    given explicitly is an error)."""
    gridobj = None
    if isinstance(labgrid, Grid):
        gridobj = labgrid
        if orientation is not None and orientation != labgrid.orientation:
            raise ValueError(f"orientation {orientation!r} differs from the grid's ({labgrid.orientation!r}): "
                             "a grid fixes where each lab sits; make the grid with orientation=")
        orientation = labgrid.orientation
        labgrid = labgrid.LabGrid
    elif labgrid is not None:
        g = list(labgrid)
        if len(g) != 2 or not all(is_int(x) and x >= 1 for x in g):
            raise ValueError(f"labgrid must be two positive integers [rows, cols], got {labgrid!r}")
        labgrid = [int(x) for x in g]
    orientation = "row" if orientation is None else orientation
    if not isinstance(orientation, str) or orientation.lower() not in ("row", "col"):
        raise ValueError(f"orientation must be 'row' or 'col', got {orientation!r}")
    return labgrid, gridobj, _block_pair(blocksize), orientation.lower()


def pool_blocks(codist: Any, numlabs: int) -> Any:
    """A complete ``codistributor2dbc`` on a :class:`Grid` as the same layout over the
    whole pool of ``numlabs`` labs: a ``codistributorBlocks`` of ``(mb, nb)`` blocks
    assigned by the grid's matrix of pool labs (labs outside the grid hold nothing).
    Local parts are the same arrays in both (each lab's rows and columns increasing),
    so an array moves between grids by the pool's ``redistribute`` of this view."""
    grid = codist.Grid
    if grid is None:
        r, c = codist.LabGrid
        grid = Grid(r, c, range(1, r * c + 1), codist.Orientation)
    owners = grid.lab_matrix()
    return codistributorBlocks(codist.BlockSizes, owners, codist.GlobalSize).complete(codist.GlobalSize, numlabs)

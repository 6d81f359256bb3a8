"""Block layouts: equal blocks assigned to labs by a rule, as Dagger.jl's ``Blocks``.

No MPI here (pure index math, like :mod:`spmdlab.layouts.codistributor`).

``codistributorBlocks(blocksize, assignment='blockrow', gsize=None, *, halo=0)`` cuts the
array into blocks of ``blocksize`` (the last block along a dimension may be shorter) and
gives each block to a lab, as Dagger.jl's ``distribute(A, Blocks(...), assignment)``.
How Dagger's names map to ours:

- ``Blocks(2, 3)`` -> ``blocksize=(2, 3)`` (an int is the same size in every dimension);
- ``:blockrow`` -> ``'blockrow'``: contiguous runs of row blocks (first dimension) per lab,
  the first ``nb % p`` labs one block more (nb row blocks, p labs); Dagger's workers in
  order are our labs 1..p;
- ``:cyclicrow`` -> ``'cyclicrow'``: row block i to lab ``i % p + 1``;
- ``:blockcol`` / ``:cycliccol`` -> ``'blockcol'`` / ``'cycliccol'``: the same over the
  column blocks. Dagger uses the array's *last* dimension for these; here they use the
  second dimension, as MATLAB's columns. For 2-D arrays the two agree, and for a 1-D
  array both use its only dimension, as Dagger's ``distribute(v, Blocks(3), :blockcol)``
  (so on a vector ``'blockcol'`` is ``'blockrow'`` and ``'cycliccol'`` is ``'cyclicrow'``);
- an integer array of worker ids -> an integer array of lab numbers with one dimension
  per array dimension: block ``(i, j, ...)`` goes to ``assignment[i % r, j % c, ...]``
  (Dagger's ``assignment[mod1(i, r), mod1(j, c), ...]`` with 1-based block indices);
- ``:arbitrary`` and arrays of ``Processor`` objects have no counterpart.

A lab's blocks form a *grid* when they are the Cartesian product of per-dimension sets of
block indices (always for the named rules; for an array, when the positions of the lab's
number in it form such a product). When every lab's blocks do, the layout is not chunked:
a lab's local part is its blocks packed in global order, as ``codistributor2dbc`` (which
is the 2-D case: see ``codistributor2dbc.asBlocks``). Otherwise (``isChunked``) every
lab's local part is the list of its blocks in C order of their block index.

``halo=w`` (only when every lab's blocks form one box): a lab also stores the ``w`` cells
around its box on every side that is not the array's edge.

>>> c = codistributorBlocks((1, 2), 'blockrow').complete((7, 11), 4)
>>> c.BlockOwners[:, 0].tolist()
[1, 1, 2, 2, 3, 3, 4]
>>> c.describe_slice(2, 4)
'This lab stores blocks of size 1x2 of D: rows [2:4], columns [0:11].'
"""
from __future__ import annotations

import math
from collections.abc import Sequence
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
    int_array,
    runs_text,
)

__all__ = ["codistributorBlocks", "ASSIGNMENTS"]

ASSIGNMENTS = ("blockrow", "blockcol", "cyclicrow", "cycliccol")
_NAME = "codistributorBlocks"
_EMPTY = np.zeros(0, dtype=np.int64)


def _selection(blocks: np.ndarray, b: int, m: int) -> Selection:
    """The global indices of sorted block indices ``blocks`` (size ``b``, dimension size ``m``):
    a slice when they are contiguous, else an increasing int64 array."""
    if blocks.size == 0:
        return slice(0, 0)
    if blocks[-1] - blocks[0] + 1 == blocks.size:
        return slice(int(blocks[0]) * b, min(m, (int(blocks[-1]) + 1) * b))
    g = (blocks[:, None] * b + np.arange(b, dtype=np.int64)).ravel()
    return g[g < m]


def _block_slices(index: Sequence[int], bs: Sequence[int], gsize: Sequence[int]) -> tuple[slice, ...]:
    return tuple(slice(int(i) * b, min(m, (int(i) + 1) * b)) for i, b, m in zip(index, bs, gsize))


class codistributorBlocks(SizedLayout):
    """Blocks of ``blocksize`` assigned to labs by a rule or an array (Dagger.jl's ``Blocks``).

    ``codistributorBlocks(blocksize, assignment='blockrow', gsize=None, *, halo=0)``; see
    the module docstring for the rules.
    """

    def __init__(self, blocksize: int | Sequence[int], assignment: Any = "blockrow",
                 gsize: Sequence[int] | None = None, *, halo: int = 0) -> None:
        if is_int(blocksize):
            if blocksize < 1:
                raise ValueError(f"block size must be >= 1, got {blocksize}")
            self._bs: int | tuple[int, ...] = int(blocksize)
        else:
            try:
                bs = tuple(blocksize)
            except TypeError:
                raise TypeError(f"block size must be an integer or a sequence of integers, got {blocksize!r}") from None
            for d, b in enumerate(bs, start=1):
                if not is_int(b):
                    raise TypeError(f"block size must be an integer or a sequence of integers, got {blocksize!r}")
                if b < 1:
                    raise ValueError(f"block size must be >= 1, got {b} in dimension {d}")
            if not bs:
                raise ValueError("block size needs one entry per dimension, got ()")
            self._bs = tuple(int(b) for b in bs)
        self._name: str | None = None
        self._array: np.ndarray | None = None
        if isinstance(assignment, str):
            if assignment.lower() not in ASSIGNMENTS:
                raise ValueError(f"unknown assignment {assignment!r}: use 'blockrow', 'blockcol', 'cyclicrow', "
                                 "'cycliccol' or an integer array of lab numbers")
            self._name = assignment.lower()
        else:
            a = np.array(assignment)
            if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
                raise TypeError(f"assignment must be one of {', '.join(map(repr, ASSIGNMENTS))} or an integer "
                                f"array of lab numbers, got {assignment!r}")
            if a.ndim == 0 or a.size == 0:
                raise ValueError(f"an assignment array needs at least one lab number in every dimension, "
                                 f"got shape {a.shape}")
            self._array = a.astype(np.int64)
            self._array.flags.writeable = False
        if not is_int(halo) or halo < 0:
            raise ValueError(f"halo must be a non-negative integer, got {halo!r}")
        self._halo = int(halo)
        self._gsize = None if gsize is None else check_gsize(gsize)
        if self._gsize is not None:
            self._check_shape(self._gsize)
        self._numlabs: int | None = None
        self._nb: tuple[int, ...] | None = None  # blocks per dimension (complete only)
        self._line: np.ndarray | None = None  # named rules: the owner of each row (column) block
        # per lab: per-dimension block indices (a grid) or an (nblocks, ndim) array of block indices
        self._grid: dict[int, tuple[np.ndarray, ...]] = {}
        self._offgrid: dict[int, np.ndarray] = {}

    def _check_shape(self, g: tuple[int, ...]) -> None:
        if not g:
            raise ValueError(f"{_NAME} cannot distribute a 0-d array (use shape (1,))")
        if isinstance(self._bs, tuple) and len(self._bs) != len(g):
            raise ValueError(f"block size {self._bs} has {len(self._bs)} entries but the array is {len(g)}-D")
        if self._array is not None and self._array.ndim != len(g):
            raise ValueError(f"the assignment array is {self._array.ndim}-D but the array is {len(g)}-D "
                             "(it needs one dimension per array dimension)")

    # ---- properties
    @property
    def BlockSize(self) -> tuple[int, ...]:
        """Block size per dimension (an int block size repeated once the number of
        dimensions is known from GlobalSize or an assignment array; else a 1-tuple)."""
        if isinstance(self._bs, tuple):
            return self._bs
        nd = len(self._gsize) if self._gsize is not None else (self._array.ndim if self._array is not None else 1)
        return (self._bs,) * nd

    @property
    def Assignment(self) -> str | np.ndarray:
        """The rule's name, or a copy of the array of lab numbers."""
        return self._name if self._name is not None else self._array.copy()

    @property
    def Halo(self) -> int:
        """Halo width (cells stored around a lab's box on each interior side)."""
        return self._halo

    @property
    def BlockOwners(self) -> np.ndarray | None:
        """The owner (1-based lab) of every block, shape ``ceil(size / blocksize)`` per
        dimension; None until the layout is complete."""
        return None if self._nb is None else self._owners_of(tuple(np.indices(self._nb, dtype=np.int64)))

    def _owners_of(self, blocks: tuple[np.ndarray, ...]) -> np.ndarray:
        """Owners of the blocks with (broadcast) block indices ``blocks``, without
        materialising one entry per block of the array."""
        if self._line is not None:
            d = self._line_dim()
            return self._line[blocks[d]] + np.zeros(np.broadcast_shapes(*(b.shape for b in blocks)), dtype=np.int64)
        return self._array[tuple(b % r for b, r in zip(blocks, self._array.shape))]

    def _line_dim(self) -> int:
        """The axis a named rule deals blocks along: rows, or columns (a vector's only axis)."""
        assert self._name is not None and self._gsize is not None
        return 0 if self._name.endswith("row") else min(1, len(self._gsize) - 1)

    def partitions_text(self) -> str:
        """Dagger's words for the blocks: ``with 2×2 partitions of size 50×50``."""
        c = self._ready(self._numlabs) if self._numlabs is not None else None
        if c is None or c._nb is None:
            raise ValueError(f"{_NAME}.partitions_text needs a complete layout")
        return (f"with {'×'.join(map(str, c._nb))} partitions of size "
                f"{'×'.join(map(str, (min(b, m) for b, m in zip(c.BlockSize, c._gsize))))}")

    def _key(self) -> tuple:
        a = self._name if self._array is None else (self._array.shape, tuple(self._array.ravel().tolist()))
        return (self.BlockSize, a, self._gsize, self._halo, self._numlabs)

    def __repr__(self) -> str:
        a = repr(self._name) if self._array is None else repr(self._array.tolist())
        halo = f", Halo={self._halo}" if self._halo else ""
        return (f"{_NAME}(BlockSize={self.BlockSize}, Assignment={a}, GlobalSize={self._gsize}, "
                f"NumLabs={self._numlabs}{halo})")

    # ---- completion
    def complete(self, gsize: Sequence[int], numlabs: int) -> codistributorBlocks:
        """Copy with GlobalSize and NumLabs set and the blocks assigned (labs of an
        assignment array checked against ``numlabs``; a halo needs one box per lab)."""
        g = check_gsize(gsize)
        n = check_numlabs(numlabs)
        if self._gsize is not None and self._gsize != g:
            raise ValueError(f"codistributor is for global size {self._gsize} but the array has size {g}")
        self._check_shape(g)
        if self._array is not None:
            bad = self._array[(self._array < 1) | (self._array > n)]
            if bad.size:
                check_lab(int(bad[0]), n, what="assignment lab")
        out = codistributorBlocks(self._bs, self._name if self._array is None else self._array, g, halo=self._halo)
        out._numlabs = n
        out._assign()
        return out


    def _assign(self) -> None:
        """BlockOwners and each lab's blocks (as a grid where they form one)."""
        g, bs, p = self._gsize, self.BlockSize, self._numlabs
        nb = self._nb = tuple(-(-m // b) for m, b in zip(g, bs))
        everything = [np.arange(k, dtype=np.int64) for k in nb]
        if self._name is not None:
            d = self._line_dim()
            if self._name.startswith("block"):
                q, r = divmod(nb[d], p)
                line = np.repeat(np.arange(1, p + 1), [q + 1] * r + [q] * (p - r))
            else:
                line = np.arange(nb[d], dtype=np.int64) % p + 1
            self._line = line.astype(np.int64)
            for lab in range(1, p + 1):
                sets = list(everything)
                sets[d] = np.flatnonzero(line == lab).astype(np.int64)
                self._grid[lab] = tuple(sets)
        else:
            A = self._array
            residues = [np.arange(k, dtype=np.int64) % r for k, r in zip(nb, A.shape)]
            owners = None
            for lab in range(1, p + 1):
                pos = np.argwhere(A == lab)
                sets = [np.unique(pos[:, d]) for d in range(A.ndim)]
                if pos.size == 0:
                    self._grid[lab] = tuple(_EMPTY for _ in nb)
                elif len(pos) == math.prod(len(s) for s in sets):
                    self._grid[lab] = tuple(np.flatnonzero(np.isin(res, s)).astype(np.int64)
                                            for res, s in zip(residues, sets))
                else:
                    if owners is None:  # only for a lab whose positions are not a product
                        owners = A[np.ix_(*residues)]
                    blocks = np.argwhere(owners == lab).astype(np.int64)
                    proj = [np.unique(blocks[:, d]) for d in range(A.ndim)]
                    if len(blocks) == math.prod(len(s) for s in proj):
                        self._grid[lab] = tuple(proj) if len(blocks) else tuple(_EMPTY for _ in nb)
                    else:
                        self._offgrid[lab] = blocks
        if self._halo:
            bad = [lab for lab, sets in self._grid.items()
                   if all(s.size for s in sets) and not all(s[-1] - s[0] + 1 == s.size for s in sets)]
            bad += list(self._offgrid)
            if bad:
                raise ValueError(f"halo={self._halo} needs every lab's blocks to form one box (contiguous along "
                                 f"every dimension), but lab {min(bad)}'s do not")

    def _blocks_of(self, lab: int) -> np.ndarray:
        """``lab``'s block indices in C order, an (nblocks, ndim) array."""
        if lab in self._offgrid:
            return self._offgrid[lab]
        sets = self._grid[lab]
        if not all(s.size for s in sets):
            return np.zeros((0, len(sets)), dtype=np.int64)
        return np.stack(np.meshgrid(*sets, indexing="ij"), axis=-1).reshape(-1, len(sets))

    def _owned_sel(self, lab: int) -> tuple[Selection, ...]:
        return tuple(_selection(s, b, m) for s, b, m in zip(self._grid[lab], self.BlockSize, self._gsize))

    def _stored_sel(self, lab: int) -> tuple[Selection, ...]:
        return self._grow(lab, self._owned_sel(lab))

    def _grow(self, lab: int, owned: tuple[Selection, ...]) -> tuple[Selection, ...]:
        """The stored box: ``owned`` grown by the halo (itself without halo or when empty)."""
        w = self._halo
        if not w or not all(s.size for s in self._grid[lab]):
            return owned
        return tuple(slice(max(0, s.start - w), min(m, s.stop + w)) for s, m in zip(owned, self._gsize))

    # ---- the protocol
    def isChunked(self, numlabs: int) -> bool:
        """True when some lab's blocks do not form a grid: every lab's local part is then
        the list of its blocks."""
        return bool(self._ready(numlabs)._offgrid)

    def _check(self, lab: int, numlabs: int, what: str) -> codistributorBlocks:
        c = self._ready(numlabs)
        check_lab(lab, numlabs)
        if c._offgrid:
            raise chunked_error(what, _NAME)
        return c

    def localIndices(self, lab: int, numlabs: int) -> tuple[np.ndarray, ...]:
        """Per-dimension 0-based global indices stored by ``lab``, in local order."""
        self._check(lab, numlabs, "localIndices")
        return super().localIndices(lab, numlabs)

    def localSelection(self, lab: int, numlabs: int) -> tuple[Selection, ...]:
        """Per dimension the global indices ``lab`` stores (its blocks', halo included): a
        slice when contiguous, else an increasing int64 array."""
        return self._check(lab, numlabs, "localSelection")._stored_sel(int(lab))

    def localShape(self, lab: int, numlabs: int) -> tuple[int, ...]:
        """Shape of the local part stored by ``lab`` (halo included)."""
        sel = self.localSelection(lab, numlabs)
        return tuple(s.stop - s.start if isinstance(s, slice) else len(s) for s in sel)

    def globalIndices(self, dim: int | None = None, lab: int | None = None,
                      numlabs: int | None = None, *, axis: int | None = None) -> np.ndarray:
        """0-based global indices along a dimension (required) stored by ``lab``, in local order."""
        if lab is None or numlabs is None:
            raise TypeError("globalIndices needs lab and numlabs")
        c = self._check(lab, numlabs, "globalIndices")
        s = c._stored_sel(int(lab))[c._resolve_dim(dim, axis) - 1]
        return np.arange(s.start, s.stop, dtype=np.int64) if isinstance(s, slice) else s.copy()

    def chunkSelections(self, lab: int, numlabs: int) -> list[tuple[Selection, ...]]:
        """``[localSelection]``, or for a chunked layout the slices of each of ``lab``'s
        blocks in C order of their block index (``[]`` for a lab without blocks)."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        if not c._offgrid:
            return [c._stored_sel(lab)]
        return [_block_slices(i, c.BlockSize, c._gsize) for i in c._blocks_of(lab)]

    def ownedPieces(self, lab: int, numlabs: int) -> list[Piece]:
        """``(k, global, local)`` for what ``lab`` owns: its whole part (without the halo,
        at its place in the stored box), or each of its blocks of a chunked layout."""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        if c._offgrid:
            return [(k, sel, tuple(slice(0, s.stop - s.start) for s in sel))
                    for k, sel in enumerate(c.chunkSelections(lab, numlabs))]
        owned = c._owned_sel(lab)
        stored = c._grow(lab, owned)
        if owned is stored:
            return [(0, owned, tuple(slice(0, s.stop - s.start) if isinstance(s, slice) else slice(0, len(s))
                                     for s in owned))]
        return [(0, owned, tuple(slice(o.start - s.start, o.stop - s.start) for o, s in zip(owned, stored)))]

    def ownerOf(self, index: IndexLike, numlabs: int) -> int | np.ndarray:
        """Lab owning a global index (a full tuple; an int or int array for a 1-D array)."""
        c = self._ready(numlabs)
        idx = broadcast_index(index, c._gsize)
        owner = c._owners_of(tuple(i // b for i, b in zip(idx, c.BlockSize)))
        return index_out(owner, *(index if isinstance(index, tuple) else (index,)))

    def globalToLocal(self, index: IndexLike, numlabs: int) -> tuple[Any, tuple[Any, ...]]:
        """``(lab, local index tuple)``: the owner of a global index and its position in the
        owner's stored part (layouts that are not chunked)."""
        c = self._ready(numlabs)
        if c._offgrid:
            raise chunked_error("globalToLocal", _NAME)
        idx = broadcast_index(index, c._gsize)
        owner = np.asarray(c.ownerOf(tuple(idx), numlabs))
        local = [np.zeros(owner.shape, dtype=np.int64) for _ in idx]
        for lab in np.unique(owner):
            m = owner == lab
            for d, s in enumerate(c._stored_sel(int(lab))):
                local[d][m] = idx[d][m] - s.start if isinstance(s, slice) else np.searchsorted(s, idx[d][m])
        likes = index if isinstance(index, tuple) else (index,)
        return index_out(owner, *likes), tuple(index_out(x, *likes) for x in local)

    def localToGlobal(self, lab: int, local_index: tuple[Any, ...], numlabs: int) -> tuple[Any, ...]:
        """Global index tuple of a position in ``lab``'s stored part (layouts that are not chunked)."""
        sel = self.localSelection(lab, numlabs)
        if not isinstance(local_index, tuple):
            local_index = (local_index,)
        if len(local_index) != len(sel):
            raise ValueError(f"index tuple has {len(local_index)} entries but the array is {len(sel)}-D")
        out = []
        for d, (li, s) in enumerate(zip(local_index, sel)):
            a = int_array(li)
            size = s.stop - s.start if isinstance(s, slice) else len(s)
            if a.size and (a.min() < 0 or a.max() >= size):
                raise IndexError(f"local index {li!r} is out of bounds for dimension {d + 1} "
                                 f"of lab {lab}'s part with size {size}")
            out.append(index_out(a + s.start if isinstance(s, slice) else s[a], li))
        return tuple(out)

    def describe_slice(self, lab: int, numlabs: int, name: str = "D") -> str:
        """e.g. ``This lab stores blocks of size 2x2 of D: rows [0:2, 4:6], columns [0:7].``"""
        c = self._ready(numlabs)
        lab = check_lab(lab, numlabs)
        if c._offgrid:
            blocks = [box_text(s) for s in c.chunkSelections(lab, numlabs)]
            if not blocks:
                return f"This lab stores nothing of {name} (it is assigned no block)."
            count = len(blocks)
            if count > 4:
                blocks = blocks[:2] + ["..."] + blocks[-1:]
            return f"This lab stores {count} block{'s' if count > 1 else ''} of {name}: {', '.join(blocks)}."
        owned = c._owned_sel(lab)
        stored = c._grow(lab, owned)
        if c._halo:
            grown = all(b.size for b in c._grid[lab]) and any(
                (s.start, s.stop) != (o.start, o.stop) for s, o in zip(stored, owned))
            halo = f" with {c._halo} halo cell{'s' if c._halo > 1 else ''} on each interior side" if grown else ""
            return f"This lab stores {name}{box_text(stored, c._gsize)}{halo}."
        nd = len(stored)
        labels = (["elements"] if nd == 1 else ["rows", "columns"] if nd == 2
                  else [f"dimension {d}" for d in range(1, nd + 1)])
        runs = [runs_text(c.globalIndices(d + 1, lab, numlabs)) for d in range(nd)]
        size = "x".join(str(b) for b in c.BlockSize)
        return (f"This lab stores blocks of size {size} of {name}: "
                + ", ".join(f"{t} {r}" for t, r in zip(labels, runs)) + ".")

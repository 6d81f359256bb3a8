"""What each lab reads and writes of a file: pure index math, no MPI, no files.

A lab's part is a list of stored arrays (``chunkSelections``: one for most layouts, several
for chunk maps), each a Cartesian product of increasing global index sets (slices or
index arrays); what it writes is its owned pieces (``ownedPieces``: disjoint over the
labs). Files are read and written in *rounds*: in round r every lab moves its r-th stored
array (or owned piece), so a collective call is made the same number of times on every
lab. Index sets become *runs* (``[start, start+length)`` ranges): MPI datatypes
(``mpitypes``) and box-by-box readers (zarr, HDF5) are built from them.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ...layouts.base import selection_size

__all__ = ["runs", "stored", "owned", "rounds", "boxes", "part_shape", "check_layout_fits", "aligned", "min_run_bytes"]


def runs(s: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, lengths)`` of the contiguous runs of a selection (a step-1 slice or an
    increasing index array).

    >>> runs(np.array([0, 1, 2, 6, 7]))
    (array([0, 6]), array([3, 2]))
    """
    if isinstance(s, slice):
        n = max(0, s.stop - s.start)
        return (np.array([s.start], dtype=np.int64), np.array([n], dtype=np.int64)) if n else \
            (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    idx = np.asarray(s, dtype=np.int64)
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(idx) != 1) + 1
    first = np.concatenate(([0], breaks))
    last = np.concatenate((breaks, [idx.size]))
    return idx[first], last - first


def part_shape(sel: Sequence[Any]) -> tuple[int, ...]:
    return tuple(selection_size(s) for s in sel)


def stored(codist: Any, lab: int, n: int) -> list[tuple]:
    """The global selections of the arrays ``lab`` stores (halo cells included)."""
    return list(codist.chunkSelections(lab, n))


def owned(codist: Any, lab: int, n: int) -> list[tuple]:
    """``(k, global_sel, local_sel)`` of each piece ``lab`` owns (writes)."""
    return list(codist.ownedPieces(lab, n))


def rounds(codist: Any, n: int, of: str = "stored") -> int:
    """How many collective rounds every lab takes: the most arrays (``of='stored'``) or
    owned pieces (``of='owned'``) any lab has. At least one (a lab with nothing still joins)."""
    count = (lambda lab: len(stored(codist, lab, n))) if of == "stored" else (lambda lab: len(owned(codist, lab, n)))
    return max([1] + [count(lab) for lab in range(1, n + 1)])


def boxes(gsel: Sequence[Any], lsel: Sequence[Any] | None = None) -> Iterator[tuple[tuple, tuple]]:
    """``(global slices, local slices)`` of every box (product of runs) of a selection;
    ``lsel`` (positions in the local array, default: all of it in order) maps them."""
    per_dim = []
    for d, s in enumerate(gsel):
        starts, lengths = runs(s)
        if lsel is None:
            local0 = np.concatenate(([0], np.cumsum(lengths)[:-1])) if lengths.size else lengths
        else:
            ls = lsel[d]
            base = ls.start if isinstance(ls, slice) else None
            pos = np.concatenate(([0], np.cumsum(lengths)[:-1])) if lengths.size else lengths
            local0 = pos + base if base is not None else np.asarray(ls)[pos] if lengths.size else pos
        per_dim.append([(slice(int(a), int(a + n)), slice(int(b), int(b + n)))
                        for a, b, n in zip(starts, local0, lengths)])
    for combo in itertools.product(*per_dim):
        yield tuple(g for g, _ in combo), tuple(lo for _, lo in combo)


def check_layout_fits(codist: Any, shape: tuple[int, ...], n: int, path: str) -> str | None:
    """Why ``codist`` cannot hold an array of ``shape`` from ``path`` on n labs, or None."""
    g = codist.GlobalSize
    if g is not None and tuple(g) != tuple(shape):
        return f"the file holds shape {tuple(shape)} but the codistributor is for shape {tuple(g)}"
    name = type(codist).__name__
    if name == "codistributor2dbc" and len(shape) != 2:
        return f"the file holds a {len(shape)}-D array {tuple(shape)}; codistributor2dbc lays out 2-D arrays only"
    if name == "codistributor1d" and codist.Dimension is not None and codist.Dimension > max(len(shape), 1):
        return (f"the file holds a {len(shape)}-D array {tuple(shape)}; codistributor1d({codist.Dimension}) "
                "needs that many dimensions")
    if len(shape) == 0:
        return "the file holds a 0-d array (a scalar); load it with np.load"
    return None


def aligned(codist: Any, n: int, chunks: Sequence[int]) -> bool:
    """True when every owned piece of every lab is a union of whole chunks of the grid
    ``chunks`` (edges of the array excepted): each lab can write its chunks alone."""
    shape = codist.GlobalSize
    for lab in range(1, n + 1):
        for _, gsel, _ in owned(codist, lab, n):
            for d, s in enumerate(gsel):
                starts, lengths = runs(s)
                ends = starts + lengths
                c = chunks[d]
                if np.any(starts % c) or np.any((ends % c) & (ends != shape[d])):
                    return False
    return True


def min_run_bytes(codist: Any, n: int, itemsize: int, fortran: bool = False, of: str = "stored") -> int:
    """The shortest contiguous stretch of file bytes any lab reads (C or Fortran order):
    how MPI-IO should read (data sieving pays for short stretches only)."""
    shape = codist.GlobalSize
    dims = list(range(len(shape))) if fortran else list(range(len(shape) - 1, -1, -1))
    best = None
    for lab in range(1, n + 1):
        sels = stored(codist, lab, n) if of == "stored" else [g for _, g, _ in owned(codist, lab, n)]
        for sel in sels:
            run = itemsize
            for d in dims:
                _, lengths = runs(sel[d])
                if lengths.size == 0:
                    run = 0
                    break
                run *= int(lengths.min())
                if lengths.size != 1 or lengths[0] != shape[d]:
                    break
            if run:
                best = run if best is None else min(best, run)
    return best or 0


def nbytes_of(shape: Sequence[int], itemsize: int) -> int:
    return math.prod(shape) * itemsize

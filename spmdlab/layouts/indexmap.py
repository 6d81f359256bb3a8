"""CuPy's ``make_2d_index_map`` with labs in place of devices (pure, no MPI).

``cupyx.distributed.array.make_2d_index_map(i_partitions, j_partitions, devices)`` cuts
a matrix at the row boundaries ``i_partitions`` and the column boundaries
``j_partitions`` and gives block ``(i, j)`` to every device of the set ``devices[i][j]``.
Here the sets hold lab numbers (1-based, as everywhere in spmdlab; CuPy's device 0 is
lab 1), and the result is the same kind of index map: a dict from lab to the list of
its chunks (tuples of two slices), in CuPy's order (blocks row by row, a block's labs in
increasing order), which ``codistributorChunks(index_map, gsize)`` lays an array out by.

>>> make_2d_index_map([0, 2, 4], [0, 3, 5], [[{1}, {2}], [{3}, {1, 2}]])[1]
[(slice(0, 2, None), slice(0, 3, None)), (slice(2, 4, None), slice(3, 5, None))]
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..checks import is_int

__all__ = ["make_2d_index_map"]


def _boundaries(p: Any, name: str) -> list[int]:
    try:
        b = list(p)
    except TypeError:
        raise TypeError(f"make_2d_index_map: {name} must be a list of block boundaries, got {p!r}") from None
    if not all(is_int(x) for x in b):
        raise TypeError(f"make_2d_index_map: {name} must hold integers, got {p!r}")
    b = [int(x) for x in b]
    if len(b) < 2:
        raise ValueError(f"make_2d_index_map: {name} needs at least two boundaries (one block), got {b}")
    if b[0] < 0 or any(y < x for x, y in zip(b, b[1:])):
        raise ValueError(f"make_2d_index_map: {name} must be non-negative and non-decreasing, got {b}")
    return b


def _labs(entry: Any, i: int, j: int) -> list[int]:
    """The labs of one block: a set (or any collection) of lab numbers, or one lab number."""
    labs = [entry] if is_int(entry) else entry
    try:
        labs = list(labs)
    except TypeError:
        raise TypeError(f"make_2d_index_map: devices[{i}][{j}] must be a set of lab numbers, got {entry!r}") from None
    if not all(is_int(k) for k in labs):
        raise TypeError(f"make_2d_index_map: devices[{i}][{j}] must hold lab numbers, got {entry!r}")
    bad = [int(k) for k in labs if int(k) < 1]
    if bad:
        raise ValueError(f"make_2d_index_map: labs are numbered from 1 as in MATLAB (CuPy's device 0 is lab 1); "
                         f"devices[{i}][{j}] holds {bad[0]}")
    return sorted({int(k) for k in labs})


def make_2d_index_map(i_partitions: Sequence[int], j_partitions: Sequence[int],
                      devices: Sequence[Sequence[Any]]) -> dict[int, list[tuple[slice, ...]]]:
    """An index map for a matrix cut at rows ``i_partitions`` and columns ``j_partitions``,
    block ``(i, j)`` held by the labs in ``devices[i][j]`` (CuPy's ``make_2d_index_map``
    with labs for devices). Pass it to ``codistributorChunks(index_map, gsize)``."""
    rows = _boundaries(i_partitions, "i_partitions")
    cols = _boundaries(j_partitions, "j_partitions")
    grid = [list(r) for r in devices] if not isinstance(devices, (str, bytes)) else None
    shape = (len(rows) - 1, len(cols) - 1)
    if grid is None or len(grid) != shape[0] or any(len(r) != shape[1] for r in grid):
        got = [len(r) for r in grid] if grid is not None else devices
        raise ValueError(f"make_2d_index_map: devices must be a {shape[0]}x{shape[1]} list of lists (one entry "
                         f"per block), got rows of lengths {got}")
    index_map: dict[int, list[tuple[slice, ...]]] = {}
    for i in range(shape[0]):
        for j in range(shape[1]):
            block = (slice(rows[i], rows[i + 1]), slice(cols[j], cols[j + 1]))
            for lab in _labs(grid[i][j], i, j):
                index_map.setdefault(lab, []).append(block)
    return index_map

"""The values of a distributed array as numpy's repr shows them, fetched without the rest.

numpy prints an array of more than ``threshold`` elements (1000) as the first and last
``edgeitems`` (3) indices along every axis longer than twice that, and a smaller array
whole. :func:`corner_index` picks those indices; each lab sends back only the elements
among them that it holds (:func:`corner_part`, one ``Call`` per lab, any layout and mode);
:func:`corner_text` prints them as numpy prints the whole array. The elements between the
corners are never printed, so a placeholder row (column, ...) stands for them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..arrays.base import parts_of
from ..layouts.base import Selection
from ..protocol.messages import Call
from ..protocol.seam import Pool

__all__ = ["corner_index", "corner_part", "fetch_corner", "corner_text"]

_COMBINE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def corner_index(shape: Sequence[int]) -> tuple[list[np.ndarray], bool]:
    """The global indices along each axis that numpy's repr of an array of ``shape``
    shows, and whether it summarises (leaves out the middle of the long axes)."""
    options = np.get_printoptions()
    edge = options["edgeitems"]
    if math.prod(shape) <= options["threshold"]:
        return [np.arange(n) for n in shape], False
    return [np.r_[0:edge, n - edge:n] if n > 2 * edge else np.arange(n) for n in shape], True


def _hits(sel: Selection, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which of the sorted indices ``want`` the selection ``sel`` holds: their positions
    in ``want`` and in ``sel``."""
    if isinstance(sel, slice):
        k = np.flatnonzero((want >= sel.start) & (want < sel.stop))
        return k, want[k] - sel.start
    if len(sel) == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    order = np.argsort(sel, kind="stable")
    j = np.minimum(np.searchsorted(sel[order], want), len(sel) - 1)
    k = np.flatnonzero(sel[order][j] == want)
    return k, order[j[k]]


def _at(pos: Selection, offsets: np.ndarray) -> np.ndarray:
    return pos.start + offsets if isinstance(pos, slice) else np.asarray(pos)[offsets]


def corner_part(value: Any, key: int, lab: int, index: list) -> tuple[str, list]:
    """``Call`` handler on lab ``lab``: the elements of ``index`` (sorted global indices,
    one array per axis) that this lab holds, as ``(mode, [(positions in index, values)])``:
    in replica mode those it owns, else every stored partial value (the client combines
    them as the mode says)."""
    codist = value.codistributor
    n = int(codist.NumLabs)
    if value.mode == "replica":
        pieces = codist.ownedPieces(lab, n)
    else:
        pieces = [(k, sel, tuple(slice(0, len(s) if not isinstance(s, slice) else s.stop - s.start) for s in sel))
                  for k, sel in enumerate(codist.chunkSelections(lab, n))]
    stored = parts_of(value)
    out = []
    for k, glob, loc in pieces:
        hits = [_hits(g, np.asarray(w)) for g, w in zip(glob, index)]
        if any(h[0].size == 0 for h in hits):
            continue
        where = np.ix_(*(_at(p, off) for p, (_, off) in zip(loc, hits)))
        out.append((tuple(h[0] for h in hits), np.ascontiguousarray(stored[k][where])))
    return value.mode, out


def fetch_corner(pool: Pool, key: int, nlabs: int, shape: tuple, dtype: np.dtype) -> tuple[np.ndarray, bool]:
    """The corner of the array stored under ``key`` on labs ``1..nlabs`` (each lab sends
    only its elements of it), with a placeholder between the corners of a summarised axis;
    and whether the array is summarised."""
    index, summarised = corner_index(shape)
    edge = np.get_printoptions()["edgeitems"]
    wide = [summarised and n > 2 * edge for n in shape]
    out = np.zeros(tuple(len(w) + 1 if s else len(w) for w, s in zip(index, wide)), dtype=dtype)
    if out.size == 0:
        return out, summarised
    replies = pool.request_many({lab: Call(corner_part, key, (key, lab, index)) for lab in range(1, nlabs + 1)})
    seen = np.zeros(out.shape, dtype=bool)
    for lab in sorted(replies):
        mode, parts = replies[lab].result
        for positions, values in parts:
            sub = np.ix_(*(np.where(p < edge, p, p + 1) if s else p for p, s in zip(positions, wide)))
            if mode != "replica":
                values = np.where(seen[sub], _COMBINE[mode](out[sub], values), values)
            out[sub] = values
            seen[sub] = True
    return out, summarised


def corner_text(corner: np.ndarray, summarised: bool) -> str:
    """``corner`` printed as numpy prints the whole array (``separator=", "``)."""
    if summarised:
        return np.array2string(corner, separator=", ", threshold=0)
    return np.array2string(corner, separator=", ")

"""Redistribution plans: which elements move from which lab to which (pure index math).

``transfer_regions(src, dst, numlabs)`` intersects every lab's old part with every lab's
new part, per dimension, as slices where the indices are contiguous;
``transfer_plan`` gives the same with index arrays. No MPI: unit-tested without processes.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..checks import check_lab, check_numlabs
from .codistributor import Codistributor, Selection
from .regions import sel_array, sel_len

__all__ = ["Transfer", "intersect", "transfer_regions", "transfer_plan"]


class Transfer(NamedTuple):
    """What moves from ``src_lab`` to ``dst_lab``: per-dimension aligned index sets (the
    k-th entries name the same global index). From :func:`transfer_plan` they are int
    arrays; from :func:`transfer_regions`, slices where contiguous.

    Sender:   ``chunk = src_local[np.ix_(*t.src_index)]``
    Receiver: ``dst_local[np.ix_(*t.dst_index)] = chunk``
    """
    src_lab: int
    dst_lab: int
    src_index: tuple[Selection, ...]
    dst_index: tuple[Selection, ...]
    global_index: tuple[Selection, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(sel_len(a) for a in self.global_index)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def intersect(gs: Selection, gd: Selection) -> tuple[Selection, Selection, Selection]:
    """(common global, positions in gs, positions in gd) of two increasing index sets."""
    if isinstance(gs, slice) and isinstance(gd, slice):
        lo, hi = max(gs.start, gd.start), min(gs.stop, gd.stop)
        hi = max(lo, hi)
        return slice(lo, hi), slice(lo - gs.start, hi - gs.start), slice(lo - gd.start, hi - gd.start)
    if isinstance(gs, slice) or isinstance(gd, slice):
        sl, arr = (gs, gd) if isinstance(gs, slice) else (gd, gs)
        i0, i1 = np.searchsorted(arr, [sl.start, sl.stop])
        common = np.asarray(arr[i0:i1], dtype=np.int64)
        in_slice, in_arr = common - sl.start, slice(int(i0), int(i1))
        return (common, in_slice, in_arr) if isinstance(gs, slice) else (common, in_arr, in_slice)
    common, ps, pd = np.intersect1d(gs, gd, assume_unique=True, return_indices=True)
    return common.astype(np.int64), ps.astype(np.int64), pd.astype(np.int64)


def transfer_regions(src: Codistributor, dst: Codistributor, numlabs: int,
                     gsize: Sequence[int] | None = None, *, lab: int | None = None) -> list:
    """:func:`transfer_plan` with slices wherever the indices are contiguous (1-D
    layouts need no index arrays at all; 2dbc dimensions use arrays of their length)."""
    n = check_numlabs(numlabs)
    g = gsize if gsize is not None else (src.GlobalSize or dst.GlobalSize)
    if g is None:
        raise ValueError("transfer_plan needs a global size: complete the codistributors or pass gsize")
    s, d = src.complete(g, n), dst.complete(g, n)
    if s.GlobalSize != d.GlobalSize:
        raise ValueError(f"source size {s.GlobalSize} and destination size {d.GlobalSize} differ")
    if lab is not None:
        lab = check_lab(lab, n)
    src_sel: dict = {}
    dst_sel: dict = {}
    plan: list = [[None] * n for _ in range(n)]
    for a in range(1, n + 1):
        for b in range(1, n + 1):
            if lab is not None and lab not in (a, b):
                continue
            if a not in src_sel:
                src_sel[a] = s.localSelection(a, n)
            if b not in dst_sel:
                dst_sel[b] = d.localSelection(b, n)
            per = [intersect(gs, gd) for gs, gd in zip(src_sel[a], dst_sel[b])]
            plan[a - 1][b - 1] = Transfer(a, b, tuple(p[1] for p in per),
                                          tuple(p[2] for p in per), tuple(p[0] for p in per))
    return plan


def transfer_plan(src: Codistributor, dst: Codistributor, numlabs: int,
                  gsize: Sequence[int] | None = None, *, lab: int | None = None) -> list:
    """Exchange plan for redistributing from layout ``src`` to layout ``dst``.

    Returns ``plan`` with ``plan[s-1][d-1]`` the :class:`Transfer` from lab s to
    lab d (possibly of size 0; s == d is the local copy), with int64 index arrays.
    Incomplete codistributors are completed with ``gsize`` (default: the other's
    GlobalSize). With ``lab=k`` only the pairs where k sends or receives are
    computed; the other entries are None.
    """
    plan = transfer_regions(src, dst, numlabs, gsize, lab=lab)
    return [[None if t is None else
             Transfer(t.src_lab, t.dst_lab, tuple(map(sel_array, t.src_index)),
                      tuple(map(sel_array, t.dst_index)), tuple(map(sel_array, t.global_index)))
             for t in row] for row in plan]


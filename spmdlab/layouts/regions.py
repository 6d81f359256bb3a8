"""Copying Cartesian regions of local parts: pure numpy, no MPI, no arrays of the package.

A *selection* is, per dimension, a ``slice`` with step 1 or an increasing int64 index
array (see ``codistributor.localSelection``); a tuple of selections names the Cartesian
product of those global or local indices. ``take``/``put`` read and write such regions,
and :class:`RegionCopy` copies between two aligned regions, as strided views where the
indices come in evenly spaced runs (block-cyclic layouts) instead of fancy indexing.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from .codistributor import Selection

__all__ = ["sel_len", "sel_array", "as_slice", "product_index", "ix", "RegionCopy",
           "run_groups", "copy_region", "take", "put"]


def sel_len(s: Selection) -> int:
    """Number of indices in a selection (slice with step 1, or index array)."""
    return s.stop - s.start if isinstance(s, slice) else len(s)


def sel_array(s: Selection) -> np.ndarray:
    """A selection as an int64 index array."""
    return np.arange(s.start, s.stop, dtype=np.int64) if isinstance(s, slice) else np.asarray(s, dtype=np.int64)



def as_slice(ix: Selection) -> slice | None:
    """A selection as a slice when it is one contiguous range, else None."""
    if isinstance(ix, slice):
        return ix
    ix = np.asarray(ix)
    if ix.size == 0:
        return slice(0, 0)
    lo, hi = int(ix[0]), int(ix[-1])
    if hi - lo + 1 == ix.size and (ix.size < 3 or bool(np.all(np.diff(ix) == 1))):
        return slice(lo, hi + 1)
    return None


def product_index(index: Sequence) -> tuple:
    """An indexing tuple selecting the Cartesian product of per-dimension selections
    (slices or index arrays): slices where contiguous (views), fancy indexing only where
    needed."""
    slices = [as_slice(ix) for ix in index]
    fancy = [k for k, s in enumerate(slices) if s is None]
    if len(fancy) <= 1:
        return tuple(s if s is not None else np.asarray(index[k]) for k, s in enumerate(slices))
    return np.ix_(*[sel_array(ix) for ix in index])



def ix(arrays: Sequence[np.ndarray]) -> tuple:
    """``np.ix_`` that also accepts a single dimension and keeps empty arrays integer."""
    return np.ix_(*[np.asarray(a, dtype=np.intp) for a in arrays])


_MAX_RUN_COMBOS = 4096


def _joint_runs(src: Selection, dst: Selection) -> list:
    """Maximal stretches where both aligned index sets step by one:
    ``[(src_start, src_stop, dst_start, dst_stop), ...]``."""
    if isinstance(src, slice) and isinstance(dst, slice):
        return [(src.start, src.stop, dst.start, dst.stop)] if src.stop > src.start else []
    src, dst = sel_array(src), sel_array(dst)
    if src.size == 0:
        return []
    breaks = np.flatnonzero((np.diff(src) != 1) | (np.diff(dst) != 1)) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    ends = np.concatenate((breaks, [src.size])).tolist()
    s0, d0 = src[starts].tolist(), dst[starts].tolist()
    return [(a, a + e - b, c, c + e - b) for a, c, b, e in zip(s0, d0, starts, ends)]


def run_groups(runs: list) -> list:
    """Consecutive runs of one length whose starts step evenly on both sides, as
    ``(count, length, src_start, src_step, dst_start, dst_step)``: the runs of a
    block-cyclic selection make one group, plus one for a short last block."""
    groups: list = []
    for a, b, c, d in runs:
        if groups:
            count, length, a0, sstep, c0, dstep = groups[-1]
            if b - a == length and (count == 1 or (a - a0 == count * sstep and c - c0 == count * dstep)):
                if count == 1:
                    sstep, dstep = a - a0, c - c0
                groups[-1] = (count + 1, length, a0, sstep, c0, dstep)
                continue
        groups.append((1, b - a, a, 0, c, 0))
    return groups


def _group_view(a: np.ndarray, combo: Sequence, side: int) -> np.ndarray:
    """What one group per dimension selects in ``a``, as a strided view of shape
    ``(count_1, length_1, count_2, length_2, ...)``; side 0 reads the groups' source
    positions, side 1 their destination positions (a writable view)."""
    shape, strides, start = [], [], []
    for g, n, st in zip(combo, a.shape, a.strides):
        first, step = g[2 + 2 * side], g[3 + 2 * side]
        if first + (g[0] - 1) * step + g[1] > n:
            raise ValueError("internal error: a copy reaches past the end of a local part")
        start.append(slice(first, None))
        shape += [g[0], g[1]]
        strides += [step * st, st]
    return np.lib.stride_tricks.as_strided(a[tuple(start)], shape, strides, writeable=side == 1)


class RegionCopy:
    """``dst[np.ix_(*dst_index)] = src[np.ix_(*src_index)]`` for aligned per-dimension
    selections (slices, index arrays, or None: all of that dimension, in order), worked
    out once and run on any arrays of those shapes. Evenly spaced runs of contiguous
    indices (a block-cyclic layout) are copied as one strided view per group; very
    irregular selections fall back to fancy indexing."""

    def __init__(self, dst_index: Sequence, src_index: Sequence, dst_shape: Sequence[int],
                 src_shape: Sequence[int]) -> None:
        full = lambda ix, n: slice(0, n) if ix is None else ix
        self.dst_index = [full(ix, n) for ix, n in zip(dst_index, dst_shape)]
        self.src_index = [full(ix, n) for ix, n in zip(src_index, src_shape)]
        self.combos: list | None = []
        groups, count = [], 1
        for d, (si, di) in enumerate(zip(self.src_index, self.dst_index)):
            if sel_len(si) != sel_len(di):
                raise ValueError(f"internal error: index lengths differ along dimension {d + 1}")
            g = run_groups(_joint_runs(si, di))
            if not g:
                return  # nothing to copy
            groups.append(g)
            count *= len(g)
        self.combos = list(itertools.product(*groups)) if count <= _MAX_RUN_COMBOS else None

    def run(self, dst: np.ndarray, src: np.ndarray) -> None:
        if dst.ndim == 0:
            dst[()] = src[()]
        elif self.combos is None:
            dst[product_index(self.dst_index)] = src[product_index(self.src_index)]
        else:
            for combo in self.combos:
                np.copyto(_group_view(dst, combo, 1), _group_view(src, combo, 0))


def copy_region(dst: np.ndarray, dst_index: Sequence, src: np.ndarray, src_index: Sequence) -> None:
    """``dst[np.ix_(*dst_index)] = src[np.ix_(*src_index)]`` (see :class:`RegionCopy`)."""
    RegionCopy(dst_index, src_index, dst.shape, src.shape).run(dst, src)



def take(a: np.ndarray, index: Sequence) -> np.ndarray:
    """``a[np.ix_(*index)]``: a view when every selection is a contiguous range, else a copy."""
    slices = [as_slice(s) for s in index]
    if all(s is not None for s in slices):
        return a[tuple(slices)]
    if sum(1 for s in slices if s is None) == 1:
        return a[tuple(s if s is not None else np.asarray(index[k]) for k, s in enumerate(slices))]
    out = np.empty(tuple(sel_len(s) for s in index), dtype=a.dtype)
    copy_region(out, [None] * out.ndim, a, index)
    return out


def put(a: np.ndarray, index: Sequence, value: np.ndarray) -> None:
    """``a[np.ix_(*index)] = value``."""
    copy_region(a, index, np.asarray(value), [None] * a.ndim)


"""``distributed(X)`` and ``gather(D)`` of large arrays on one machine by cross-memory
copies (``protocol.crossmem``): the labs lend their parts (for ``gather``, the pieces
each owns, in any layout), the client copies each straight between its region of the
client array and the lab's memory, one copy per byte, in a few threads. Everything else
(pools on several machines, a kernel that refuses, short runs, small arrays,
``SPMDLAB_CROSS_MEMORY=0``) returns False here, and the caller moves the parts over the
sockets (``parts``, ``scatter``)."""
from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..arrays.calls import empty_parts, lend_pieces, lend_stored
from ..protocol import crossmem
from ..protocol.messages import Call, Set
from .parts import stored

__all__ = ["gather_across", "scatter_across", "TOTAL_MIN"]

TOTAL_MIN = 4 << 20  # bytes: smaller arrays cost less over the sockets than the lending round trip


class _Refusals:
    """The pools whose labs the kernel would not let the client copy from (or that run on
    another machine), for the labs of that start of the pool: a restarted pool (a lab
    died in a copy, say) is asked again."""

    def __init__(self) -> None:
        self._at: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def add(self, pool: Any) -> None:
        self._at[pool] = pool.generation

    def discard(self, pool: Any) -> None:
        self._at.pop(pool, None)

    def __contains__(self, pool: Any) -> bool:
        return self._at.get(pool) == pool.generation


_refused = _Refusals()


def _usable(pool: Any, A: np.ndarray) -> bool:
    return bool(pool.settings.cross_memory) and pool not in _refused and A.nbytes >= TOTAL_MIN \
        and crossmem.available()


def _runs(A: np.ndarray, selections: dict[int, list]) -> dict[int, list] | None:
    """For each lab, its selections of the client array ``A`` as regions with their runs;
    None when one's runs are too short (the sockets then)."""
    regions: dict[int, list] = {}
    for lab, sels in selections.items():
        regions[lab] = []
        for sel in sels:
            region = crossmem.Region(A, sel)
            vec = region.iovecs()  # (None for an empty region too)
            if region.nbytes and vec is None:
                return None
            regions[lab].append((region, vec))
    return regions


def _lend(pool: Any, regions: dict[int, list], call: Callable[[int], Call]) -> list | None:
    """The copies: what each lab lends in answer to ``call(lab)`` (a list, one per region
    of ``regions[lab]``), paired with its region's runs; None if one cannot be lent."""
    labs = [lab for lab, found in regions.items() if any(r.nbytes for r, _ in found)]
    replies = pool.request_many({lab: call(lab) for lab in labs})
    here, jobs = crossmem.here(), []
    for lab in labs:
        lents = replies[lab].result
        if len(lents) != len(regions[lab]):
            return None
        for lent, (region, vec) in zip(lents, regions[lab]):
            if lent is not None and lent.where != here:
                _refused.add(pool)  # another machine (or pid namespace): never worth asking again
            if region.nbytes and (lent is None or lent.where != here or lent.nbytes != region.nbytes):
                return None
            if region.nbytes:
                jobs.append((lent, vec))
    return jobs


def _copied(pool: Any, copy: Any, jobs: list) -> bool:
    try:
        copy(jobs)
    except crossmem.CrossMemoryError:
        _refused.add(pool)  # EPERM, ENOSYS, ...: the sockets from now on
        return False
    return True


def gather_across(pool: Any, key: int, out: np.ndarray, codist: Any, n: int) -> bool:
    """Fill ``out`` with the array stored under ``key`` (any layout ``codist``: each lab's
    ``ownedPieces``, so halo cells and copies are skipped) by cross-memory copies; False
    (``out`` then filled in part or not at all) if this path does not apply."""
    if not _usable(pool, out):
        return False
    regions = _runs(out, {lab: [glob for _, glob, _ in codist.ownedPieces(lab, n)] for lab in range(1, n + 1)})
    if regions is None:
        return False
    jobs = _lend(pool, regions, lambda lab: Call(lend_pieces, key, (key, lab, n)))
    return jobs is not None and _copied(pool, crossmem.read_into, jobs)


class _Empty:
    """Unpickles on a lab as its empty part of the array (``calls.empty_parts``)."""

    __slots__ = ("shapes", "dtype", "codist")

    def __init__(self, shapes: list, dtype: np.dtype, codist: Any) -> None:
        self.shapes, self.dtype, self.codist = shapes, dtype, codist

    def __reduce__(self) -> tuple:
        return empty_parts, (self.shapes, self.dtype, self.codist)


def scatter_across(pool: Any, X: np.ndarray, codist: Any, key: int) -> bool:
    """Store each lab's part of ``X`` (any layout ``codist``: halo cells and chunks
    included, as ``parts.stored`` says) under ``key``: empty parts made on each lab, then
    filled by cross-memory copies. False if this path does not apply (the key may then
    hold empty parts: the caller stores the parts again)."""
    n = pool.numlabs
    if not _usable(pool, X):
        return False
    chunked = codist.isChunked(n)
    regions = _runs(X, {lab: stored(codist, lab, n) if chunked else [stored(codist, lab, n)]
                        for lab in range(1, n + 1)})
    if regions is None:
        return False
    pool.request_many({lab: Set(key, _Empty([r.shape for r, _ in regions[lab]], X.dtype, codist))
                       for lab in range(1, n + 1)})
    jobs = _lend(pool, regions, lambda lab: Call(lend_stored, key, (key,)))
    return jobs is not None and _copied(pool, crossmem.write_from, jobs)

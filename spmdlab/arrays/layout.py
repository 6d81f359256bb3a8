"""Layout facts: which global indices this lab holds, for a complete codistributor on the
labs of the running block (slices where contiguous, see ``codistributor.localSelection``),
and the layouts the operations choose for their results. Pure index math on top of
``base``: no communication, no MPI.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..layouts.codistributor import Codistributor, codistributor1d
from ..layouts.regions import take
from .base import CodistArray, here, labs_for

__all__ = ["is1d", "labs_of", "local_sel", "sel_global", "default_layout", "replicated_result", "concatenates",
           "flat_layout", "flat_ranges"]


def is1d(codist: Codistributor) -> bool:
    return isinstance(codist, codistributor1d)


def labs_of(D: CodistArray, what: str) -> tuple[int, int]:
    """``(labindex, numlabs)``, checking the array is laid out for this block's labs."""
    return labs_for(D.codistributor, what)


@functools.lru_cache(maxsize=256)
def local_sel(codist: Codistributor, lab: int, n: int) -> tuple:
    """Per-dimension global indices of ``lab``'s part: slices where contiguous (always for
    1-D layouts), increasing read-only index arrays otherwise (cached)."""
    sel = codist.localSelection(lab, n)
    for a in sel:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)
    return sel


def sel_global(s: Any, pos: Any) -> np.ndarray:
    """Global indices of the local positions ``pos`` along a dimension selected by ``s``."""
    if isinstance(s, slice):
        return np.asarray(pos, dtype=np.int64) + s.start
    return np.asarray(s)[pos]


@functools.lru_cache(maxsize=256)
def default_layout(shape: tuple, n: int) -> codistributor1d:
    """The default (complete) codistributor1d of ``shape`` on n labs."""
    return codistributor1d().complete(shape, n)



def concatenates(codist: Codistributor, G: tuple) -> bool:
    """True when the local parts, in lab order, are the array's elements in C order."""
    return is1d(codist) and math.prod(G[:codist.Dimension - 1]) == 1


def flat_layout(shape: tuple, n: int) -> codistributor1d:
    """A 1-D layout of ``shape`` in which every lab holds a contiguous range of C-order
    flat indices: along the first dimension longer than 1, default partition."""
    k = next((e for e, s in enumerate(shape) if s > 1), len(shape) - 1)
    return codistributor1d(k + 1).complete(shape, n)


def flat_ranges(codist: codistributor1d, shape: tuple) -> np.ndarray:
    """``[start, end)`` flat ranges of every lab for a layout where ``concatenates``."""
    k = codist.Dimension - 1
    inner = math.prod(shape[k + 1:])
    bounds = np.concatenate(([0], np.cumsum(codist.Partition))).astype(np.int64) * inner
    return np.stack([bounds[:-1], bounds[1:]], axis=1)



def replicated_result(like: CodistArray, full: Any) -> Any:
    """A result every lab has whole, as the caller expects: 0-d → a numpy scalar, else
    an array of ``like``'s class with the default layout (each lab keeps its slice)."""
    full = np.asarray(full)
    if full.ndim == 0:
        return full[()]
    lab, n = here()
    codist = default_layout(full.shape, n)
    return type(like).from_parts(np.array(take(full, local_sel(codist, lab, n)), copy=True), codist)

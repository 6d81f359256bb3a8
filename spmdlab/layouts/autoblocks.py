"""Dagger.jl's ``AutoBlocks()``: a block size chosen for the pool (pure, no MPI).

Dagger's ``auto_blocks(dims)`` cuts only the *last* dimension, into as many partitions as
there are processors: block size ``cld(dims[end], nprocs)`` there and the whole extent
in every other dimension (``rand(AutoBlocks(), 100, 100)`` on 7 processors is "1x7
partitions of size 100x15"). ``AutoBlocks()`` does the same with the labs for processors
and gives partition k to lab k (Dagger's scheduler places them; here one per lab, so
with fewer partitions than labs the last labs hold nothing, as ``cld`` leaves them).
It is an incomplete ``codistributorBlocks``: completing it for a size and a number of
labs (``codistributed(X, AutoBlocks())``, ``redistribute(D, AutoBlocks())``, the
constructors) gives the plain block layout it chose, so the array's codistributor is a
``codistributorBlocks``.

>>> AutoBlocks().complete((100, 100), 7).partitions_text()
'with 1×7 partitions of size 100×15'
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..checks import check_numlabs
from .base import check_gsize
from .blocks import codistributorBlocks

__all__ = ["AutoBlocks"]


class AutoBlocks(codistributorBlocks):
    """Dagger.jl's ``AutoBlocks()``: the last dimension in one block per lab (see the module)."""

    def __init__(self) -> None:
        super().__init__(1)

    def _key(self) -> tuple:
        return ("AutoBlocks",)

    def __repr__(self) -> str:
        return "AutoBlocks()"

    @property
    def BlockSize(self) -> tuple[int, ...]:
        """Not known until the layout is completed for a size and a number of labs."""
        raise ValueError("AutoBlocks() chooses its block size for a size and a number of labs: use "
                         "complete(gsize, numlabs) (or the codistributor of an array made with it)")

    def complete(self, gsize: Sequence[int], numlabs: int) -> codistributorBlocks:
        """The block layout ``AutoBlocks()`` chooses for ``gsize`` on ``numlabs`` labs."""
        g = check_gsize(gsize)
        n = check_numlabs(numlabs)
        if not g:
            raise ValueError("AutoBlocks cannot distribute a 0-d array (use shape (1,))")
        last = max(1, -(-g[-1] // n))
        size = tuple(max(1, m) for m in g[:-1]) + (last,)
        if len(g) <= 2:  # the rules by name: a vector's only dimension, a matrix's columns
            return codistributorBlocks(size, "blockcol", g).complete(g, n)
        labs = np.arange(1, n + 1, dtype=np.int64).reshape((1,) * (len(g) - 1) + (n,))
        return codistributorBlocks(size, labs, g).complete(g, n)

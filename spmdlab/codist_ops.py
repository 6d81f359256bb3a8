"""numpy semantics for codistributed arrays (arithmetic, ufuncs, reductions, @, indexing)."""
from __future__ import annotations


class CodistOps:
    """Mixin of ``codistributed``: the numpy operations. (Being written.)"""

"""Sorting, sets and search of codistributed arrays: a parallel sample sort
(``samplesort``), ``np.sort``/``argsort``/``partition`` (``sort``), ``unique``/``isin``
(``sets``) and ``searchsorted`` (``search``), registered with ``registry.implements``."""
from __future__ import annotations

from . import samplesort, search, sets, sort

__all__ = ["samplesort", "search", "sets", "sort"]

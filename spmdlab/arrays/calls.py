"""Functions the client's ``distributed`` asks the labs to call on codistributed arrays.

Module-level, so that pickle sends them by name.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SpmdError
from .array import codistributed, getLocalPart
from .collectives import allgather
from .transfer import redistribute

__all__ = ["construct", "to_codistributed", "local_rows", "nnz_per_lab"]


def construct(name: str, args: tuple, kwargs: dict) -> Any:
    """``codistributed.<name>(*args, **kwargs)``."""
    return getattr(codistributed, name)(*args, **kwargs)


def to_codistributed(value: Any, codist: Any) -> Any:
    """``distributed(D, codist)`` on the labs: a copy, or a redistribution."""
    return value.copy() if codist is None else redistribute(value, codist)


def local_rows(value: Any, key: int, lo: int, hi: int) -> np.ndarray:
    """``Call`` handler: rows lo:hi of this lab's local part (a view: sent without a copy)."""
    if not isinstance(value, codistributed):
        raise SpmdError(f"the distributed array's data (key {key}) is gone from this lab")
    return np.ascontiguousarray(getLocalPart(value)[lo:hi])


def nnz_per_lab(S: Any) -> list[int]:
    """Every lab's number of stored entries of the sparse codistributed matrix ``S`` (one
    allgather; the client's display of a sparse ``distributed``)."""
    return [int(c) for c in allgather(np.array([S.local_nnz()], dtype=np.int64), "nnz")[:, 0]]

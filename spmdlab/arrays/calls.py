"""Functions the client's ``distributed`` asks the labs to call on codistributed arrays.

Module-level, so that pickle sends them by name.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SpmdError
from .array import codistributed
from .transfer import redistribute

__all__ = ["construct", "to_codistributed", "local_rows"]


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
    return np.ascontiguousarray(value._local[lo:hi])

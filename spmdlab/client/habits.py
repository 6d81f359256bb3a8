"""MATLAB's ``delete(gcp)`` at the client (the decisions on MATLAB's spellings are in the
README's "From MATLAB" section)."""
from __future__ import annotations

from typing import Any

from .pool import Pool, gcp

__all__ = ["delete"]


def delete(obj: Any) -> None:
    """MATLAB's ``delete(gcp)``: close a pool. Takes a ``Pool`` (``pool.delete()`` is the
    same); ``gcp`` itself, meaning the current pool if there is one (none is started just
    to be closed); or None (``delete(gcp('nocreate'))`` without a pool), which does nothing."""
    if obj is gcp:
        obj = gcp("nocreate")
    if obj is None:
        return
    if not isinstance(obj, Pool):
        raise TypeError(f"delete() closes a pool (MATLAB's delete(gcp)), not a {type(obj).__name__}; values on "
                        "the labs are freed when the client's last reference to them goes: del x")
    obj.close()

"""Functions the client's ``distributed`` asks the labs to call on codistributed arrays.

Module-level, so that pickle sends them by name.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import SpmdError
from ..layouts.base import LayoutBase
from ..layouts.codistributor import codistributor1d
from ..protocol import crossmem
from ..protocol.inplace import Part
from . import threads
from .array import codistributed, getLocalPart
from .base import Chunks, complete, numlabs_of, parts_of
from .collectives import allgather
from .transfer import redistribute

__all__ = ["construct", "to_codistributed", "local_rows", "lend_stored", "lend_pieces", "empty_parts", "nnz_per_lab",
           "placed", "labs_holding", "most_actual"]


def placed(codist: Any, shape: tuple, n: int, small: float) -> Any:
    """``codist`` completed for ``shape`` on n labs; with no codist and fewer than ``small``
    elements (``SPMDLAB_DISTRIBUTE_SIZE``), the default layout with the whole extent on
    lab 1: spreading a small array costs more in messages than it saves."""
    if codist is None and n > 1 and 0 < math.prod(shape) < small:
        default = complete(None, tuple(shape), n)
        assert isinstance(default, codistributor1d) and default.Dimension is not None
        dim = default.Dimension
        return codistributor1d(dim, [shape[dim - 1]] + [0] * (n - 1), tuple(shape))
    return complete(codist, tuple(shape), n)


def labs_holding(codist: Any, n: int) -> int:
    """How many of the n labs hold a part of an array laid out by ``codist``."""
    return sum(1 for k in range(1, n + 1) if math.prod(codist.localShape(k, n)) > 0)


def construct(name: str, args: tuple, kwargs: dict, small: float = 0) -> Any:
    """``codistributed.<name>(*args, **kwargs)``; a dense result of fewer than ``small``
    elements built without a codistributor moves whole to lab 1 (``placed``)."""
    D = getattr(codistributed, name)(*args, **kwargs)
    explicit = any(isinstance(v, LayoutBase) for v in (*args, *kwargs.values()))
    if explicit or not isinstance(D, codistributed) or D.codistributor != complete(None, D.shape, _numlabs(D)):
        return D
    target = placed(None, D.shape, _numlabs(D), small)
    return D if target == D.codistributor else redistribute(D, target)


def _numlabs(D: codistributed) -> int:
    return numlabs_of(D.codistributor)


def to_codistributed(value: Any, codist: Any) -> Any:
    """``distributed(D, codist)`` on the labs: a copy, or a redistribution."""
    return value.copy() if codist is None else redistribute(value, codist)


def _held(value: Any, key: int) -> codistributed:
    """The codistributed array a ``Call`` names by ``key`` (its stored value)."""
    if not isinstance(value, codistributed):
        raise SpmdError(f"the distributed array's data (key {key}) is gone from this lab")
    return value


def local_rows(value: Any, key: int, lo: int, hi: int) -> Part:
    """``Call`` handler: rows lo:hi of this lab's local part (a view: sent without a copy,
    and received at the client straight into its place in the result)."""
    return Part(getLocalPart(_held(value, key))[lo:hi])


def lend_stored(value: Any, key: int) -> list[crossmem.Lent | None]:
    """``Call`` handler: each array this lab stores for the codistributed array (its local
    part, or each of its chunks) lent for a cross-memory copy by the client
    (``protocol.crossmem``); None for one that cannot be (not contiguous, no such calls)."""
    return [crossmem.lend(part) for part in parts_of(_held(value, key))]


def lend_pieces(value: Any, key: int, lab: int, n: int) -> list[crossmem.Lent | None]:
    """``Call`` handler: each piece this lab owns of the array (``ownedPieces``: its part
    without halo cells, or each of its chunks' own boxes) lent for a cross-memory copy
    into the client's result, in ``ownedPieces`` order; None for a piece that cannot be
    (not contiguous in memory)."""
    stored = parts_of(_held(value, key))
    return [crossmem.lend(stored[k][tuple(local)]) for k, _, local in value.codistributor.ownedPieces(lab, n)]


def empty_parts(shapes: list, dtype: Any, codist: Any) -> codistributed:
    """The array ``distributed(X)`` stores before the client writes this lab's part into
    it: ``np.empty`` of each stored array's shape (the local part, or each chunk of a
    chunked layout; no pages touched before the copy)."""
    empty = [np.empty(shape, dtype=dtype) for shape in shapes]
    return codistributed.from_parts(Chunks(empty, dtype) if codist.isChunked(numlabs_of(codist)) else empty[0], codist)


def nnz_per_lab(S: Any) -> list[int]:
    """Every lab's number of stored entries of the sparse codistributed matrix ``S`` (one
    allgather; the client's display of a sparse ``distributed``)."""
    return [int(c) for c in allgather(np.array([S.local_nnz()], dtype=np.int64), "nnz")[:, 0]]


def most_actual() -> int:
    """The most threads any lab used in its last operation (``get_autothread_actual`` at the
    client; one allgather)."""
    return int(allgather(np.array([threads.actual()], dtype=np.int64), "get_autothread_actual").max())

"""Scattering a client numpy array over the labs (``distributed(X)``): one ``set``
request per lab, each carrying only that lab's part as an ``inplace.Part``: its bytes go
out of band straight from ``X``'s memory, a strided part (a column block) piece by piece
(``sendmsg``), so the client makes no copy of a part whose selection is slices. Large
arrays on labs of this machine go by cross-memory copies instead (``crosscopy``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..arrays.array import codistributed
from ..arrays.base import Chunks
from ..layouts.regions import take
from ..protocol.inplace import Part
from ..protocol.messages import Set
from .crosscopy import scatter_across
from .parts import stored

__all__ = ["scatter_parts"]


class _SendPart:
    """One lab's part of a client array, cut out only when pickled (a view where the
    selection is slices: no copy at all)."""

    __slots__ = ("X", "index", "codist")

    def __init__(self, X: np.ndarray, index: Any, codist: Any) -> None:
        self.X, self.index, self.codist = X, index, codist

    def __reduce_ex__(self, protocol: Any) -> Any:
        if isinstance(self.index, list):  # a chunked layout: the lab's list of chunks
            chunks = Chunks([np.ascontiguousarray(take(self.X, sel)) for sel in self.index], self.X.dtype)
            return (codistributed.from_parts, (chunks, self.codist))
        return (codistributed.from_parts, (Part(take(self.X, self.index)), self.codist))


def scatter_parts(pool: Any, X: np.ndarray, codist: Any) -> int:
    """Store each lab's part of ``X`` in layout ``codist`` on the labs of ``pool`` as a
    codistributed array; the key it is stored under (freed again if a lab fails)."""
    n = pool.numlabs
    pool.flush_frees()  # a loop of distributed(X) must not keep the dropped arrays
    key = pool.new_key()
    try:
        if not scatter_across(pool, X, codist, key):  # one machine, large: copied across; else the sockets
            pool.request_many({lab: Set(key, _SendPart(X, stored(codist, lab, n), codist)) for lab in range(1, n + 1)})
    except BaseException:
        pool.free_later(key, pool.generation)
        raise
    return key

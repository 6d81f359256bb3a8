"""Other systems' names on the client's ``distributed`` handle (a base of the class).

CuPy's ``DistributedArray``: ``D.mode``, ``D.get()`` (its name for gathering to the
host), ``D.all_chunks()`` (CuPy: a dict device -> list of that device's chunks; here lab
-> list of the arrays that lab stores: its local part, or its chunks in a chunked
layout, as stored, so partial values in a combining mode), ``D.itemsize``, ``D.mT``.
Dagger.jl's ``map(f, D)`` and ``rand!(D)``: ``D.map(f, dtype=None)``, ``D.rand_(seed=)``,
``D.randn_(seed=)``. pbdDMAT's ``print(x, all=TRUE)``: ``D.show(all=True)``. Each runs
the codistributed array's method on the labs (``spmdlab.arrays.habits``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol.calls import call_method, get_attr
from ..protocol.messages import Call

__all__ = ["DistributedHabits"]


class DistributedHabits:
    """CuPy's, Dagger's and pbdDMAT's names on ``distributed`` (see the module)."""

    _dtype: np.dtype
    _key: int
    _nlabs: int

    def _on_labs(self, fn: Any, args: tuple, kwargs: dict | None = None) -> Any:
        raise NotImplementedError  # distributed runs it on the labs

    def _live_pool(self) -> Any:
        raise NotImplementedError

    def gather(self) -> np.ndarray:
        raise NotImplementedError

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes."""
        return int(self._dtype.itemsize)

    @property
    def mT(self) -> Any:
        """The transpose of the last two axes (numpy 2's and CuPy's ``mT``), on the labs."""
        return self._on_labs(get_attr, (self, "mT"))

    @property
    def mode(self) -> str:
        """CuPy's mode: ``'replica'``, or how partial copies combine (``'sum'`` ...)."""
        return str(self._on_labs(get_attr, (self, "mode")))

    def get(self, out: np.ndarray | None = None) -> np.ndarray:
        """CuPy's name for fetching the whole array (``gather(D)``); ``out=`` a numpy
        array of the same shape to copy it into (returned)."""
        whole = self.gather()
        if out is None:
            return whole
        if not isinstance(out, np.ndarray) or out.shape != whole.shape:
            raise ValueError(f"D.get(out=): out must be a numpy array of shape {whole.shape}, got "
                             f"{getattr(out, 'shape', type(out).__name__)}")
        np.copyto(out, whole, casting="same_kind")
        return out

    def all_chunks(self) -> dict[int, list[np.ndarray]]:
        """CuPy's ``all_chunks()``: ``{lab: [arrays that lab stores]}``, each lab's own
        part (one array, or its chunks), fetched from every lab."""
        pool = self._live_pool()
        replies = pool.request_many({lab: Call(get_attr, self._key, ("_local",)) for lab in range(1, self._nlabs + 1)})
        return {lab: list(r.result) if isinstance(r.result, list) else [r.result] for lab, r in sorted(replies.items())}

    def map(self, f: Any, dtype: Any = None) -> Any:
        """Dagger's ``map(f, D)``: ``f`` on every element, on the labs (``arrays.habits``)."""
        return self._on_labs(call_method, (self, "map", f), {"dtype": dtype})

    def rand_(self, seed: Any = None) -> Any:
        """Dagger's ``rand!(D)``: fill in place with uniform [0, 1) values; returns ``D``."""
        self._on_labs(call_method, (self, "rand_"), {"seed": seed})
        return self

    def randn_(self, seed: Any = None) -> Any:
        """Dagger's ``randn!(D)``: fill in place with standard normal values; returns ``D``."""
        self._on_labs(call_method, (self, "randn_"), {"seed": seed})
        return self

    def show(self, all: bool = False) -> None:
        """The header, and with ``all=True`` every element row by row, printed by lab 1
        (streamed in blocks: no lab and not the client holds the whole array)."""
        self._on_labs(call_method, (self, "show"), {"all": all})

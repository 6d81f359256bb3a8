"""Other systems' habits on a codistributed array: CuPy's ``itemsize`` and ``mT``,
Dagger.jl's ``map(f, D)`` and ``rand!(D)``, pbdDMAT's ``print(x, all=TRUE)``.

- ``D.itemsize``, ``D.mT`` (numpy 2 / CuPy: the transpose of the last two axes).
- ``D.map(f, dtype=None)``: ``f`` applied to every element, each lab on its own part
  (Dagger's ``map(f, D)``; through ``np.vectorize``, or ``f`` itself when it is one).
  ``np.vectorize(f)(D)`` cannot work: ``np.vectorize`` turns its input into a numpy array
  before anything could dispatch, and a codistributed array refuses that; so the
  spelling is ``D.map(f)`` (``D.map(np.vectorize(f, otypes=...))`` keeps numpy's options).
  The result's dtype is ``dtype`` when given (or the ``otypes`` of an ``np.vectorize``),
  else numpy's rule for the whole array: the dtype of ``f`` of the first element, which
  the lab storing it tells the others (one small collective), so the result is what
  ``np.vectorize(f)`` gives on the gathered array. The layout is kept; an array in a
  combining mode is made ``replica`` first (``f`` needs the values, not partial sums).
- ``D.rand_(seed=None)`` / ``D.randn_(seed=None)``: Dagger's ``rand!(D)`` / ``randn!(D)``,
  filling ``D`` in place (float32/float64) with the values ``codistributed.rand(D.shape,
  codist, seed=seed)`` would have: lab k draws from ``SeedSequence(seed, spawn_key=(k-1,))``.
  The trailing underscore is the in-place mark of PyTorch's ``uniform_``; there is no
  module-level ``rand_`` (one spelling, on the array).
- ``D.show(all=False)``: the header from lab 1; ``all=True`` every element, streamed
  (``printing``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import Chunks, CodistArray, check_dtype, here, is_plain, numlabs_of, parts_of
from .collectives import allgather_objects
from .creation import CodistConstructors
from .printing import show
from .reshard import changeMode, reshard

__all__ = ["CodistHabits"]


class CodistHabits(CodistArray):
    """``itemsize``, ``mT``, ``map``, ``rand_``, ``randn_`` and ``show`` (a base of
    ``codistributed``; see the module)."""

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes (numpy's and CuPy's ``itemsize``)."""
        return int(self.dtype.itemsize)

    @property
    def mT(self) -> Any:
        """The transpose of the last two axes (numpy 2's ``ndarray.mT``, CuPy's ``mT``)."""
        if self.ndim < 2:
            raise ValueError(f"matrix transpose with ndim < 2 is undefined (this array is {self.ndim}-D)")
        axes = tuple(range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2)
        return np.transpose(self, axes)  # type: ignore[call-overload]

    def map(self, f: Any, dtype: Any = None) -> Any:
        """``f`` applied to every element (Dagger's ``map(f, D)``), each lab on its part;
        the same layout. See the module for the result's dtype."""
        what = "D.map(f)"
        if not callable(f):
            raise TypeError(f"{what}: f must be callable, got {type(f).__name__}")
        D: Any = self if self.mode == "replica" else changeMode(self, "replica")
        pyfunc = f.pyfunc if isinstance(f, np.vectorize) else f
        given = dtype if dtype is not None else (f.otypes[0] if isinstance(f, np.vectorize) and f.otypes else None)
        result = np.dtype(given) if given is not None else _first_result_dtype(D, pyfunc, what)
        error = check_dtype(result)
        if error:
            raise TypeError(f"{what}: f returns Python objects: {error}; pass dtype= or make f return those")
        fn = np.vectorize(pyfunc, otypes=[result])  # a flexible type loses its length here (numpy's way)
        arrays = [fn(x) if x.size else np.empty(x.shape, dtype=result) for x in parts_of(D)]
        if given is None and result.kind in "SU":  # numpy: as long as the longest, over every lab
            longest = max([a.dtype.itemsize for a in arrays if a.size] or [0])
            longest = max(allgather_objects(longest, what)) if here()[1] > 1 else longest
            result = np.dtype((result.type, longest // np.dtype((result.type, 1)).itemsize))
        arrays = [a.astype(result, copy=False) for a in arrays]
        layout = D.codistributor
        local = Chunks(arrays, result) if layout.isChunked(numlabs_of(layout)) else arrays[0]
        return self._from_local(local, layout)

    def rand_(self, seed: Any = None) -> Any:
        """Fill in place with uniform values on [0, 1) (Dagger's ``rand!``); returns ``D``."""
        return self._fill_random("D.rand_", "rand", "random", seed)

    def randn_(self, seed: Any = None) -> Any:
        """Fill in place with standard normal values (Dagger's ``randn!``); returns ``D``."""
        return self._fill_random("D.randn_", "randn", "standard_normal", seed)

    def _fill_random(self, what: str, constructor: str, method: str, seed: Any) -> Any:
        if self.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"{what}: fills float32 or float64 arrays, this one is {self.dtype} "
                            "(codistributed.randi makes random integers)")
        if not isinstance(self, CodistConstructors):
            raise TypeError(f"{what} needs a codistributed array")
        local = self._local
        if is_plain(self.codistributor) and isinstance(local, np.ndarray) and local.flags.c_contiguous:
            draw = getattr(self._rng(seed), method)
            draw(out=local, dtype=self.dtype)  # the values of codistributed.rand(..., seed=seed)
        else:
            fresh = getattr(type(self), constructor)(self.shape, dtype=self.dtype, seed=seed)
            moved: Any = reshard(fresh, self.codistributor, what)
            for mine, theirs in zip(parts_of(self), parts_of(moved)):
                mine[...] = theirs
        self._mode = "replica"
        return self

    def show(self, all: bool = False) -> None:
        """Print the array's header from lab 1; ``all=True``: then every element, row by
        row, streamed to lab 1 in blocks (pbdDMAT's ``print(x, all=TRUE)``). Collective
        when ``all=True``."""
        show(self, all=all)


def _first_result_dtype(D: Any, f: Any, what: str) -> np.dtype:
    """numpy's ``np.vectorize`` rule, for the whole array: the dtype of ``f`` of the
    first element (C order). The labs storing that element compute it; one small
    allgather tells the others."""
    found = None
    for x, sel in zip(parts_of(D), D.codistributor.chunkSelections(here()[0], numlabs_of(D.codistributor))):
        starts = [s.start if isinstance(s, slice) else (int(s[0]) if len(s) else -1) for s in sel]
        if x.size and all(start == 0 for start in starts):
            value = np.asarray(f(x[(0,) * x.ndim]))
            found = value.dtype.str if value.ndim == 0 else ("error", value.shape)
            break
    infos = allgather_objects(found, what) if here()[1] > 1 else [found]
    kinds = [k for k in infos if k is not None]
    if not kinds:
        raise ValueError(f"{what}: cannot infer the result's dtype of an empty array (neither can np.vectorize); "
                         "pass dtype=")
    if isinstance(kinds[0], tuple):
        raise TypeError(f"{what}: f must return one value per element, it returned an array of shape {kinds[0][1]}")
    return np.dtype(kinds[0])

"""``distributedGrid``: the client's handle to an array on a process grid of some labs
(pbdBASE's BLACS contexts, issue 24), a ``distributed`` whose lab values are
``SubgridArray`` s (``spmdlab.arrays.subgrid``).

A block that assigns an array on a grid of some labs on every lab gives one back, and
``distributed.zeros/ones/eye/rand/...(..., codist=codistributor2dbc(g, blocks))`` builds
one on the labs (``g`` from ``spmdlab.grid`` at the client: the labs make its
communicator the first time). Everything else is ``distributed``'s: operators, ufuncs,
numpy functions, indexing and ``redistribute`` run on the labs (on the grid's labs only);
here only what reads the parts directly: ``gather`` fetches each grid lab's part (the labs
outside hold nothing and are not asked), the display names the grid and fetches only the
corners of a big array, ``all_chunks`` and ``numlabs_used`` count the grid's labs.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arrays.base import is_plain
from ..arrays.collectives import allgather_objects
from ..arrays.subgrid import SubgridArray, grid_layout, subgrid_facts, subgrid_local
from ..errors import labs_words
from ..layouts.codistributor import codistributor2dbc
from ..layouts.regions import copy_region
from ..protocol.calls import get_attr
from ..protocol.messages import Call
from .distributed import _run, distributed
from .execute import register_handle
from .preview import corner_index, corner_part, corner_text

__all__ = ["distributedGrid", "grid_corner", "GridCall"]


class GridCall:
    """On the labs, ``fn(*args)`` for an operation on sub-grid arrays that may give a tuple
    (``np.linalg.qr``, ``np.divmod``, ``np.nonzero``): the grid's labs compute it; labs
    outside, which never see the result, get its length from the grid's first lab (one
    small allgather of the block, which the client runs on every lab) and hold as many
    empty arrays, so every lab returns the same kind of value."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self.fn(*args, **kwargs)
        grid = next(v.grid for v in (*args, *kwargs.values()) if isinstance(v, SubgridArray))
        mine = len(result) if type(result) is tuple else -1
        length = allgather_objects(mine, "the operation")[grid.labs[0] - 1]
        if length >= 0 and type(result) is not tuple:
            return tuple(SubgridArray(grid, None) for _ in range(length))
        return result


def grid_corner(D: Any, key: int, rank: int, index: list) -> tuple[str, list]:
    """``Call`` handler on a grid's lab: ``corner_part`` of its part (grid rank ``rank``)."""
    return corner_part(D.inner, key, rank, index)


class distributedGrid(distributed):
    """A client handle to an array on a process grid of some labs (see the module)."""

    _grid: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # made by from_labs

    @classmethod
    def from_labs(cls, pool: Any, key: int, summary: Any) -> distributedGrid:
        """The handle for sub-grid arrays stored under ``key``; a lab outside the grid that
        does not know the shape (the result of an operation) leaves it to the grid's first lab."""
        codist, grid, nlabs = summary.layout
        if codist is None:
            shape, dtype, codist = pool.request(grid.labs[0], Call(subgrid_facts, key, ())).result
        else:
            shape, dtype = summary.shape, summary.type_name
        self = cls.__new__(cls)
        self._bind(pool, key, shape, dtype, codist)
        self._nlabs, self._grid = int(nlabs), grid  # the block's labs (a layout's count is the grid's)
        return self

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return super().__array_function__(GridCall(func), types, args, kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "__call__" and ufunc.nout > 1 and kwargs.get("out") is None:
            return _run(GridCall(ufunc), inputs, kwargs, nout=ufunc.nout)
        return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)

    def __divmod__(self, other: Any) -> Any:
        return np.divmod(self, other)

    def __rdivmod__(self, other: Any) -> Any:
        return np.divmod(other, self)

    def nonzero(self) -> Any:
        """The indices of the nonzero elements (numpy's ``nonzero``), computed on the grid."""
        return np.nonzero(self)

    @property
    def grid(self) -> Any:
        """The process grid the array lives on (``spmdlab.grid``)."""
        return self._grid

    @property
    def numlabs_used(self) -> int:
        """How many labs hold a part (of the grid's labs)."""
        c, size = grid_layout(self._codist), self._grid.size
        return sum(1 for r in range(1, size + 1) if math.prod(c.localShape(r, size)) > 0)

    def _spmdlab_gather(self) -> np.ndarray:
        """Each grid lab's part, fetched from it alone and copied into place (the labs
        outside are not asked). A layout with halos or chunks first moves to 2dbc blocks."""
        pool = self._live_pool()
        c, g = grid_layout(self._codist), self._grid
        if not is_plain(c):
            return self.redistribute(codistributor2dbc(g, 64)).gather()
        out = np.empty(self._shape, dtype=self._dtype)
        if out.size == 0:
            return out
        replies = pool.request_many({lab: Call(subgrid_local, self._key, (self._key,)) for lab in g.labs})
        for lab, reply in replies.items():
            rank = g.rank_of(lab)
            copy_region(out, c.localSelection(rank, g.size), reply.result, [None] * out.ndim)
        return out

    def all_chunks(self) -> dict[int, list[np.ndarray]]:
        """CuPy's ``all_chunks()``: ``{lab: [its part]}`` for every lab of the block (an
        empty array for a lab outside the grid)."""
        pool = self._live_pool()
        replies = pool.request_many({lab: Call(get_attr, self._key, ("local",)) for lab in range(1, self._nlabs + 1)})
        return {lab: [r.result] for lab, r in sorted(replies.items())}

    def _head(self) -> str:
        """The grid's labs and shape, and the block's labs outside it (``distributed.__repr__``)."""
        g = self._grid
        outside = [k for k in range(1, self._nlabs + 1) if g.rank_of(k) is None]
        return f"on labs {list(g.labs)} as a {g.nprow}x{g.npcol} grid ({labs_words(outside)} hold nothing)"

    def _values_text(self) -> str | None:
        """numpy's repr of the values: only the corners shown are fetched, each element
        from the grid lab that holds it."""
        if self._pool.state != "idle" or self._pool.generation != self._generation:
            return None
        try:
            index, summarised = corner_index(self._shape)
            edge = np.get_printoptions()["edgeitems"]
            wide = [summarised and n > 2 * edge for n in self._shape]
            out = np.zeros(tuple(len(w) + 1 if s else len(w) for w, s in zip(index, wide)), dtype=self._dtype)
            if out.size:
                g = self._grid
                calls = {lab: Call(grid_corner, self._key, (self._key, g.rank_of(lab), index)) for lab in g.labs}
                for reply in self._pool.request_many(calls).values():
                    for positions, values in reply.result[1]:
                        out[np.ix_(*(np.where(p < edge, p, p + 1) if s else p
                                     for p, s in zip(positions, wide)))] = values
            return corner_text(out, summarised)
        except Exception:  # a display must not fail
            return None

    def _repr_html_(self) -> str:
        return "<pre>" + self.__repr__().replace("&", "&amp;").replace("<", "&lt;") + "</pre>"


register_handle("subgrid", distributedGrid.from_labs)  # a block's arrays on a grid of some labs

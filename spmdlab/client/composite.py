"""``Composite``: the client's handle to one value per lab (DESIGN §3)."""
from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

from ..checks import check_lab
from ..errors import NoDataError, SpmdError
from ..protocol.messages import Get, Input, Set, Summary
from ..protocol.values import describe, is_handle, summarize
from .display import composite_html
from .pool import gcp

__all__ = ["NoDataError", "Composite", "exist"]


class Composite:
    """One value per lab of a pool; ``c[i]`` is lab i's value (labs numbered from 1).

    >>> c = Composite()          # doctest: +SKIP
    >>> c[1] = 10; c[1]
    10
    """

    def __init__(self, n: int | None = None, *, pool=None):
        pool = pool if pool is not None else gcp()
        if n is None:
            n = pool.numlabs
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= pool.numlabs:
            raise ValueError(f"a Composite on this pool has 1..{pool.numlabs} elements, got {n!r}")
        self._bind(pool, pool.new_key(), n, {})

    def _bind(self, pool, key: int, n: int, summaries: dict[int, Summary]) -> None:
        self._pool = pool
        self._key = key
        self._n = n
        self._summaries = summaries
        self._local: dict[int, Any] | None = None
        self._generation = pool.generation if pool is not None else 0
        if pool is not None:
            weakref.finalize(self, pool.free_later, key, self._generation)

    @classmethod
    def _from_labs(cls, pool, key: int, summaries: dict[int, Summary]) -> Composite:
        self = cls.__new__(cls)
        self._bind(pool, key, pool.numlabs, summaries)
        return self

    @classmethod
    def _from_client(cls, value: Any) -> Composite:
        """The one-element Composite that ``spmd(0)`` produces at the client."""
        self = cls.__new__(cls)
        self._bind(None, 0, 1, {1: summarize(value)})
        self._local = {1: value}
        return self

    # ---- checks ----------------------------------------------------------------------

    def _live_pool(self):
        pool = self._pool
        if pool.state == "closed" or pool.generation != self._generation:
            how = "was closed" if pool.state == "closed" else "stopped"
            raise SpmdError(f"this Composite's values were lost: the pool that held them {how}")
        return pool

    def _spmdlab_input(self, pool) -> Input:
        """How this value enters an spmd block on ``pool``: each lab its own element."""
        if self._local is not None:
            return Input("val", self._local.get(1))
        self._live_pool()  # a closed pool is the likelier story: say that first
        if pool is not self._pool:
            raise ValueError("a Composite can only be used on the pool that created it")
        return Input("ref", self._key)

    # ---- the MATLAB-like interface ----------------------------------------------------

    def __len__(self) -> int:
        return self._n

    def exist(self, lab: int) -> bool:
        """True if lab ``lab`` holds a value for this Composite."""
        lab = check_lab(lab, self._n)
        return lab in self._summaries

    def __getitem__(self, lab: int) -> Any:
        lab = check_lab(lab, self._n)
        if self._local is not None:
            return self._local[lab]
        if lab not in self._summaries:
            raise NoDataError(f"Composite element {lab} is not defined: lab {lab} has no data")
        reply = self._live_pool().request(lab, Get(self._key))
        if reply.kind != "value":
            raise NoDataError(f"Composite element {lab} is not defined: lab {lab} has no data")
        return reply.result

    def __setitem__(self, lab: int, value: Any) -> None:
        lab = check_lab(lab, self._n)
        if self._local is not None:
            self._local[lab] = value
            self._summaries[lab] = summarize(value)
            return
        if is_handle(value):
            raise TypeError("a Composite element must be a plain value, not a Composite or distributed array")
        reply = self._live_pool().request(lab, Set(self._key, value))
        self._summaries[lab] = reply.result

    def __iter__(self) -> Iterator[Any]:
        for lab in range(1, self._n + 1):
            yield self[lab]

    def __repr__(self) -> str:
        head = f"Composite with {self._n} element{'s' if self._n != 1 else ''}"
        pool = self._pool
        if pool is not None and (pool.state == "closed" or pool.generation != self._generation):
            return f"{head} (its pool was {'closed' if pool.state == 'closed' else 'restarted'}: the values are lost)"
        return "\n".join([f"{head}:"] + [f"Lab {lab}: {describe(self._summaries.get(lab))}"
                                         for lab in range(1, self._n + 1)])

    def _repr_html_(self) -> str:
        return composite_html(self._n, self._summaries, self._pool, self._generation)

    def __bool__(self) -> bool:
        raise TypeError("a Composite has one value per lab; index it (c[1]) to test a value")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("cannot pickle a Composite: it is a handle to values held by the labs, which end "
                        "with the pool; save it with spmdlab.save('c.npz', c) (spmdlab.load gives back a "
                        "Composite), or pickle its values: list(c), or c[i] for lab i's")


def exist(c: Composite, lab: int | None = None) -> bool:
    """MATLAB's ``exist(c, lab)``; without ``lab``, True if any lab holds a value."""
    if lab is None:
        return any(c.exist(i) for i in range(1, len(c) + 1))
    return c.exist(lab)

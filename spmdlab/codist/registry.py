"""The numpy functions that codistributed arrays implement: one table, filled where each
function is implemented and consulted by ``codistributed.__array_function__``.

A module that adds an operation registers it where it defines it::

    @implements(np.linalg.solve)
    def solve(a, b): ...

and is imported by ``spmdlab/codist/__init__.py`` so the registration happens whenever
``spmdlab`` is imported.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, TypeVar

__all__ = ["HANDLED_FUNCTIONS", "implements"]

F = TypeVar("F", bound=Callable[..., Any])

HANDLED_FUNCTIONS: Dict[Callable[..., Any], Callable[..., Any]] = {}


def implements(*numpy_functions: Callable[..., Any]) -> Callable[[F], F]:
    """Register the decorated function as the codistributed implementation of each of
    ``numpy_functions`` (called with the numpy function's arguments)."""
    def register(fn: F) -> F:
        for f in numpy_functions:
            if f in HANDLED_FUNCTIONS:
                raise ValueError(f"{getattr(f, '__name__', f)} is implemented twice for codistributed arrays")
            HANDLED_FUNCTIONS[f] = fn
        return fn

    return register

"""The numpy functions that codistributed arrays implement: one table, filled where each
function is implemented and consulted by ``codistributed.__array_function__``.

A module that adds an operation registers it where it defines it::

    @implements(np.linalg.solve)
    def solve(a, b): ...

and is imported by ``spmdlab/arrays/__init__.py`` so the registration happens whenever
``spmdlab`` is imported. A module whose imports are slow (the FFT and linear algebra pull
in scipy, about a second of every lab's start) is named instead with
``implemented_in(module, *numpy_functions)`` and imported by ``lookup`` on first use.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["HANDLED_FUNCTIONS", "implemented_in", "implements", "lookup"]

F = TypeVar("F", bound=Callable[..., Any])

HANDLED_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {}
# numpy function -> the module that registers it when imported (on first use)
LATER: dict[Callable[..., Any], str] = {}


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


def implemented_in(module: str, *numpy_functions: Callable[..., Any]) -> None:
    """Name the module (absolute, e.g. ``"spmdlab.arrays.fft"``) that implements
    ``numpy_functions``; ``lookup`` imports it the first time one of them is called."""
    for f in numpy_functions:
        LATER[f] = module


def lookup(numpy_function: Callable[..., Any]) -> Callable[..., Any] | None:
    """The codistributed implementation of ``numpy_function``, or None."""
    handler = HANDLED_FUNCTIONS.get(numpy_function)
    if handler is None and numpy_function in LATER:
        importlib.import_module(LATER[numpy_function])
        handler = HANDLED_FUNCTIONS.get(numpy_function)
    return handler

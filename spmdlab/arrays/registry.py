"""The numpy functions that codistributed arrays implement: one table, filled where each
function is implemented and consulted by ``codistributed.__array_function__``.

The one way to add an operation is to register it where it is defined::

    @implements(np.linalg.solve)
    def solve(a, b): ...

A module imported by ``spmdlab/arrays/__init__.py`` registers whenever ``spmdlab`` is
imported. A module whose imports are slow (the FFT and linear algebra pull in scipy, about
a second of every lab's start) is named once in :data:`LAZY_MODULES` instead; ``lookup``
imports those the first time it misses, and their decorators fill the table.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["HANDLED_FUNCTIONS", "LAZY_MODULES", "implements", "lookup", "numpy_names"]

F = TypeVar("F", bound=Callable[..., Any])

HANDLED_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {}
# modules that register with @implements when imported, imported on the first miss
LAZY_MODULES: tuple[str, ...] = ("spmdlab.arrays.fft", "spmdlab.arrays.linalg")


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


def numpy_names(namespace: Any, *names: str) -> tuple[Callable[..., Any], ...]:
    """The functions of ``namespace`` (e.g. ``np.linalg``) among ``names`` that this numpy
    has: ``@implements(*numpy_names(np.linalg, "matrix_norm"))`` for numpy >= 2's names."""
    return tuple(getattr(namespace, name) for name in names if hasattr(namespace, name))


def lookup(numpy_function: Callable[..., Any]) -> Callable[..., Any] | None:
    """The codistributed implementation of ``numpy_function``, or None."""
    handler = HANDLED_FUNCTIONS.get(numpy_function)
    if handler is None:
        for module in LAZY_MODULES:  # cached by importlib after the first miss
            importlib.import_module(module)
        handler = HANDLED_FUNCTIONS.get(numpy_function)
    return handler

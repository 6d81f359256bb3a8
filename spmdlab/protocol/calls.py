"""Functions the client asks the labs to call (``Block.call`` and ``Call`` requests): the
generic ones; the array package's are in ``spmdlab.arrays.calls``.

Module-level, so that pickle sends them by name; the client imports this module only to
name them, and nothing here imports MPI at import time.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MAX_TUPLE", "Ref", "Outputs", "map_leaves", "fill", "split", "call_method", "get_attr", "ufunc_method"]

MAX_TUPLE = 8


class Ref:
    """In a ``Block.call``'s arguments: the block input ``name`` (resolved on the lab)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __reduce__(self):
        return (Ref, (self.name,))

    def __repr__(self) -> str:
        return f"Ref({self.name!r})"


class Outputs(dict):
    """A call's result that binds several names (``R0``, ``R1``, ...) instead of ``ans``."""


def map_leaves(x: Any, leaf: Callable[[Any], Any]) -> Any:
    """``x`` with ``leaf`` applied to everything inside its lists, tuples, dicts and slices."""
    if type(x) in (list, tuple):
        return type(x)(map_leaves(v, leaf) for v in x)
    if type(x) is dict:
        return {k: map_leaves(v, leaf) for k, v in x.items()}
    if type(x) is slice:
        return slice(map_leaves(x.start, leaf), map_leaves(x.stop, leaf), map_leaves(x.step, leaf))
    return leaf(x)


def fill(x: Any, ns: dict) -> Any:
    """``x`` with every :class:`Ref` replaced by the namespace's value."""
    return map_leaves(x, lambda v: ns[v.name] if type(v) is Ref else v)


def split(fn: Any, nout: int, tuples: bool, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; ``nout > 1``: its results as ``R0..``; ``tuples``: a short
    tuple result as ``R0..`` too, with ``ans`` saying how many."""
    result = fn(*args, **kwargs)
    if nout > 1:
        return Outputs({f"R{i}": v for i, v in enumerate(result)})
    if tuples and type(result) is tuple and len(result) <= MAX_TUPLE:
        out = Outputs({f"R{i}": v for i, v in enumerate(result)})
        out["ans"] = ("__tuple__", len(result))
        return out
    return result


def call_method(obj: Any, name: str, /, *args: Any, **kwargs: Any) -> Any:
    """``obj.name(*args, **kwargs)``."""
    return getattr(obj, name)(*args, **kwargs)


def get_attr(obj: Any, name: str) -> Any:
    """``obj.name``."""
    return getattr(obj, name)


def ufunc_method(ufunc: Any, method: str, /, *args: Any, **kwargs: Any) -> Any:
    """``ufunc.method(*args, **kwargs)`` (``reduce``, ``accumulate``, ...)."""
    return getattr(ufunc, method)(*args, **kwargs)

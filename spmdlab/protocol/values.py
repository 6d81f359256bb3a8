"""How values travel between the client and the labs: one declared protocol.

A client value enters a block as a ``protocol.Input``: ``val`` (pickled), ``mod`` (a
module, imported by name) or ``ref`` (a value already stored on each lab). A value type
takes part by defining, on its class:

- ``_spmdlab_input(self, pool) -> Input``: at the client, how it enters a block;
- ``_spmdlab_summary(self) -> Summary | tuple``: on a lab, what the client learns of it
  (a tuple is read as ``(kind, shape, type_name, text, layout)``);
- ``_spmdlab_gather(self)``: at the client, what ``gather`` returns for it;

and its client handle registers a factory for its summary kind with
``spmdlab.client.execute.register_handle``: a name every lab of a block assigned such a value
comes back as that handle, any other name as a ``Composite``.
"""
from __future__ import annotations

import types
from typing import Any

import numpy as np

from .messages import Input, Summary
from .seam import Pool

__all__ = ["input_spec", "is_handle", "summarize", "describe"]

def input_spec(value: Any, pool: Pool) -> Input:
    """How the client value ``value`` enters a block on ``pool``."""
    if isinstance(value, types.ModuleType) and value.__name__ != "__main__":
        return Input("mod", value.__name__)
    hook = getattr(type(value), "_spmdlab_input", None)
    if hook is not None:
        return hook(value, pool)
    return Input("val", value)


def is_handle(value: Any) -> bool:
    """True for client handles to values on the labs (Composite, distributed)."""
    return getattr(type(value), "_spmdlab_input", None) is not None


def summarize(value: Any) -> Summary:
    """What the client shows for a stored value without fetching it."""
    hook = getattr(type(value), "_spmdlab_summary", None)
    if hook is not None:
        s = hook(value)
        if isinstance(s, Summary):
            return s
        kind, shape, type_name, text, layout = (tuple(s) + (None,) * 5)[:5]
        return Summary(kind, str(type_name), tuple(shape) if shape is not None else None, text, layout)
    if isinstance(value, (np.generic, np.ndarray)) and value.ndim == 0:  # D.sum(), gplus(x), a 0-d array
        kind = "scalar" if isinstance(value, np.generic) else "array"
        return Summary(kind, _scalar_type(value), () if kind == "array" else None, _scalar_text(value))
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        try:
            return Summary("array", str(dtype), tuple(shape))
        except TypeError:
            pass
    if isinstance(value, (bool, int, float, complex, str, bytes)) or value is None:
        text = repr(value)
        return Summary("scalar", type(value).__name__, text=text if len(text) <= 60 else text[:57] + "...")
    return Summary("object", type(value).__name__)


def _scalar_type(value: Any) -> str:
    """``float64`` for ``np.float64(1.0)`` and ``np.array(1.0)``; ``str_`` for a numpy string."""
    return type(value).__name__ if isinstance(value, np.generic) and value.dtype.kind in "USV" else str(value.dtype)


def _scalar_text(value: Any) -> str:
    """A numpy scalar's value as numpy prints it (``66.0``, ``(1+2j)``), strings quoted."""
    item = value[()] if isinstance(value, np.ndarray) else value
    text = repr(item.item()) if value.dtype.kind in "USV" else str(item)
    return text if len(text) <= 60 else text[:57] + "..."


def describe(summary: Summary | None) -> str:
    """``Summary("array", "float64", (4, 4))`` -> ``"class = float64, size = (4, 4)"``."""
    if summary is None:
        return "No data"
    if summary.kind == "array":
        value = f", value = {summary.text}" if summary.text is not None else ""
        return f"class = {summary.type_name}, size = {summary.shape}{value}"
    if summary.kind == "scalar":
        return f"class = {summary.type_name}, value = {summary.text}"
    if summary.kind == "codist":
        return f"class = codistributed {summary.type_name}, size = {summary.shape}"
    return f"class = {summary.type_name}"

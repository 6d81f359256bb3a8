"""``pmode lab2client`` and ``pmode client2lab``: one implementation for the terminal REPL
and the notebook's ``%pmode``.

Both front ends hold a lab variable at the client as a Composite (the REPL fetches one for
the name from its lab workspace, the notebook keeps them in its namespace), so copying
to the client is indexing it; copying to the labs stores the value under a fresh key with
``Set`` requests, then a block binds the name on those labs (the other labs keep theirs).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from ..errors import labs_words
from ..protocol.messages import Set
from ..protocol.seam import Pool

__all__ = ["CopyError", "value_from_lab", "lab2client_message", "send_to_labs", "client2lab_message", "TMP"]

TMP = "__spmdlab_client2lab"  # the stored value's name on the labs until the block binds it


class CopyError(ValueError):
    """A copy that cannot be made (the message says why); nothing was changed."""


def value_from_lab(handle: Any, labvar: str, lab: int) -> Any:
    """Lab ``lab``'s value of the lab variable ``labvar``, held at the client by
    ``handle`` (a Composite, or None when no lab has it)."""
    if handle is not None and not hasattr(handle, "exist"):
        raise CopyError(f"{labvar} is a distributed array: use gather({labvar}) for the whole array")
    if handle is None or not handle.exist(lab):
        raise CopyError(f"{labvar!r} is not defined on lab {lab}")
    return handle[lab]


def lab2client_message(labvar: str, lab: int, clientvar: str) -> str:
    return f"{labvar} from lab {lab} is now client variable {clientvar}."


def send_to_labs(pool: Pool, value: Any, labs: list[int], labvar: str,
                 bind: Callable[[str, dict[str, int]], Any],
                 guard: contextlib.AbstractContextManager[Any] | None = None) -> Any:
    """Store ``value`` on ``labs`` (holding ``guard``, the front end's lock on its pool,
    while the requests go out) and bind it to ``labvar`` there: ``bind(source, refs)``
    runs the binding block (``refs``: the stored value's key by name) and its result is
    returned. The stored copy is freed afterwards, whatever happened."""
    key = pool.new_key()
    generation = pool.generation
    source = f"if {TMP!r} in globals():\n    {labvar} = globals().pop({TMP!r})\n"
    try:
        with guard if guard is not None else contextlib.nullcontext():
            pool.request_many({lab: Set(key, value) for lab in labs})
        return bind(source, {TMP: key})
    finally:
        pool.free_later(key, generation)


def client2lab_message(clientvar: str, labvar: str, labs: list[int]) -> str:
    return f"Client variable {clientvar} is now {labvar} on {labs_words(labs)}."

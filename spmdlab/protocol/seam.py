"""The pool as the code above it sees it: a ``Pool`` Protocol at the seams (``run_block``,
``spmd``'s body, the handles, pmode's copies), so they are typed without importing the
client's pool (and the REPL's fake pool in the tests stands in for it)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from .messages import Block, Call, Get, Reply, Set

__all__ = ["Pool", "Sink"]

Sink = Callable[[int, str, str], None]  # (lab, stream, text): a lab's output as it arrives


@runtime_checkable
class Pool(Protocol):
    """What the seams use of a pool of labs (``spmdlab.client.pool.Pool`` implements it)."""

    numlabs: int  # labs 1..numlabs
    generation: int  # bumped at each (re)start: keys of an older generation are gone
    state: str  # "closed", "idle", "running", "dead"

    def ensure_running(self) -> None:
        """Start the labs if they are not running."""

    def new_key(self) -> int:
        """A fresh key to store a value under on the labs."""

    def free_later(self, key: int, generation: int) -> None:
        """Free ``key`` (of ``generation``) on every lab, with the next request."""

    def run(self, block: Block, sink: Sink | None = None, timeout: float | None = None) -> dict[int, Reply]:
        """Run ``block``; each lab's reply. Raises SpmdError for lab errors."""

    def request(self, lab: int, message: Get | Set | Call) -> Reply:
        """One request to one lab."""

    def request_many(self, messages: dict[int, Get | Set | Call]) -> dict[int, Reply]:
        """One request to each of several labs, sent together."""

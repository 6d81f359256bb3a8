"""Where code is running: on a lab inside a block, or at the client.

Imports no MPI (the lab's MPI module is ``spmdlab.lab.comm``), so ``labindex()`` and
``numlabs()`` work at the client (they return 1).
The worker fills in the lab state; the interrupt thread sets ``abort``.
"""
from __future__ import annotations

import threading

__all__ = ["labindex", "numlabs", "spmdIndex", "spmdSize", "LabAbort", "state", "check_abort"]


class LabAbort(BaseException):
    """Raised inside a lab's block when the client aborts it (Ctrl-C, another lab's
    error, a timeout). A BaseException, so user ``except Exception`` does not swallow it."""

    def __init__(self, reason: str, waiting: str = ""):
        super().__init__(reason)
        self.reason = reason
        self.waiting = waiting  # the library call it was blocked in, if any


class _LabState:
    def __init__(self) -> None:
        self.on_lab = False
        self.index = 1  # labindex() of the running block (1-based)
        self.size = 1  # numlabs() of the running block
        self.epoch = 0  # the block being run
        self.abort = threading.Event()
        self.abort_reason = ""
        self.waiting = ""  # what a blocked library call waits for, for timeout reports
        self.waits = 0  # library waits entered so far (stall checks compare it)
        self.in_user_code = False
        self.namespace: dict | None = None  # the running block's names (displays use them)


state = _LabState()


def check_abort() -> None:
    """Raise :class:`LabAbort` if the client has aborted the running block."""
    if state.abort.is_set():
        raise LabAbort(state.abort_reason, state.waiting)


def labindex() -> int:
    """This lab's number, 1..numlabs() (1 at the client).

    >>> labindex()
    1
    """
    return state.index


def numlabs() -> int:
    """The number of labs running the current block (1 at the client)."""
    return state.size


spmdIndex = labindex
spmdSize = numlabs


def refuse_on_lab(what: str) -> None:
    """Raise the "nested spmd" error when ``what`` (spmd, parpool, ...) is reached on a lab:
    a lab never starts a pool of its own."""
    if state.on_lab:
        raise RuntimeError(f"nested spmd: {what} was reached inside an spmd block, on a lab; spmd blocks "
                           "cannot be nested (run the inner code directly, it already runs on every lab)")

"""The labs' interruptible waits (``comm.wait``, ``wait_every``, ``probe``), by policy
(``SPMDLAB_WAIT``; default ``poll``, see ``POLICY`` for the measurements behind it):

- ``poll``: test, yield for 2 ms, then sleep (up to 1 ms) between tests, checking the
  abort flag; ``spin`` and ``yield`` spin or yield longer first;
- ``block``: test in a tight loop for 50 µs, then block in MPI's own ``Waitany`` on the
  requests together with a wake-up receive that the interrupt thread completes, with a
  message to this lab itself, when it sets the abort flag (:class:`WakingEvent`): Ctrl-C,
  another lab's error and a timeout end it at once, and it costs what ``MPI_Wait`` does;
- ``auto``: ``block`` with a core for every lab of this machine, else ``yield``.

``probe`` always polls (matched probes have no request).

This module imports no MPI: ``lab.comm`` (the only importer of mpi4py) hands it the MPI
module and its ``abandon`` in :func:`init`.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import runtime, settings

__all__ = ["init", "WakingEvent", "wait", "wait_all", "wait_every", "probe", "give_up"]

SPIN_SECONDS = 5e-5
# The default policy. Measured side by side (bench_waits, 2 labs / 2 cores, load 3.6):
# alone, block is 2-14% faster than poll; beside two idle polling MPI processes poll wins
# (block 1.16-1.65x, yield up to 3.3x slower on 200 scalar reductions: a lab that sleeps
# is woken ahead of the spinning neighbours, one that spins or yields waits out their
# time slices), and with more labs than cores block lost 1.3-5.8x. So poll stays the
# default; ``auto`` (block with a core per lab, else yield) and the others are opt-in.
POLICY = "poll"
# the polling policies: (seconds of tight loop, seconds of yielding) before sleeping
_SPINS = {"poll": (0.0, 0.002), "spin": (0.005, 0.002), "yield": (5e-5, 0.05)}
YIELD_SECONDS = 0.002
_WAKE_TAG = 1
_WAKE_BYTE = bytes(1)  # the interrupt thread's message (constant: MPI may read it later)
_wake_buffer = bytearray(1)
MPI: Any = None
_abandon: Callable[..., None] = lambda request, keep=(): None
_wake_comm: Any = None  # a Dup of COMM_SELF, never renewed
_wake_request: Any = None


class WakingEvent(threading.Event):
    """The lab's abort flag: setting it also completes the main thread's wake-up receive,
    so a wait blocked inside MPI returns and sees the abort. Set from the interrupt
    thread (MPI is initialised with ``MPI_THREAD_MULTIPLE``)."""

    def set(self) -> None:
        super().set()
        wake = _wake_comm
        if wake is not None:
            try:
                wake.Isend([_WAKE_BYTE, MPI.BYTE], 0, _WAKE_TAG).Free()
            except MPI.Exception:
                pass  # MPI finalised: the lab is ending anyway


def init(mpi: Any, abandon: Callable[..., None], labs_here: int) -> None:
    """Called once by ``comm.init``: the MPI module, ``comm.abandon`` (keeps an aborted
    request and its buffers until it completes) and how many labs share this machine;
    makes the wake-up communicator and flag.

    The policies (``SPMDLAB_WAIT``, default ``POLICY``); ``auto``: with a core for every lab of this
    machine, ``block`` (MPI's own wait: it spins, so it keeps its core against idle
    neighbours); with more labs than cores, ``yield`` (a lab that waits hands its core to
    one that still computes: MPI's spinning wait kept the computing lab off the core for
    whole time slices, 200 scalar reductions on 4 labs / 2 cores took 5.8 times as long)."""
    global MPI, _abandon, _wake_comm, SPIN_SECONDS, YIELD_SECONDS
    MPI, _abandon = mpi, abandon
    policy = settings.wait_policy(POLICY)
    if policy == "auto":
        policy = "block" if labs_here <= settings.cpu_cores() else "yield"
    if policy in _SPINS:  # no blocking MPI wait: test (spinning first), yield, sleep
        SPIN_SECONDS, YIELD_SECONDS = _SPINS[policy]
        return
    _wake_comm = mpi.COMM_SELF.Dup()
    runtime.state.abort = WakingEvent()


def _wake() -> Any:
    """The posted wake-up receive (posted again after each wake-up it delivered)."""
    global _wake_request
    if _wake_request is None or _wake_request == MPI.REQUEST_NULL:
        _wake_request = _wake_comm.Irecv([_wake_buffer, MPI.BYTE], 0, _WAKE_TAG)
    return _wake_request


def _spin(ready: Callable[[], Any], seconds: float) -> Any:
    """``ready()`` in a tight loop for up to ``seconds``; its value, or None."""
    until = time.perf_counter() + seconds
    while True:
        result = ready()
        if result is not None or time.perf_counter() >= until:
            return result


def _poll(ready: Callable[[], Any], what: str) -> Any:
    """Call ``ready()`` until it returns something other than None, checking for an abort
    in between; return that value. Spins, then yields, then sleeps (up to 1 ms)."""
    result = _spin(ready, SPIN_SECONDS)
    if result is not None:
        return result
    runtime.state.waits += 1
    runtime.state.waiting = what
    try:
        spin_until = time.perf_counter() + YIELD_SECONDS
        delay = 2e-5
        while True:
            result = ready()
            if result is not None:
                return result
            runtime.check_abort()
            if time.perf_counter() < spin_until:
                os.sched_yield()
            else:
                time.sleep(delay)
                delay = min(delay * 1.5, 1e-3)
    finally:
        runtime.state.waiting = ""


def _blocking_wait(requests: list, what: str, status: Any = None) -> None:
    """Wait until every request of ``requests`` (completed ones become ``REQUEST_NULL``)
    has completed, inside MPI's blocking ``Waitany`` beside the wake-up receive; raise
    LabAbort when the abort flag is set. ``status``: the completion's of one request."""
    global _wake_request
    if _wake_comm is None:  # SPMDLAB_WAIT=poll
        _poll(lambda: True if MPI.Request.Testall(requests) else None, what)
        return
    runtime.state.waits += 1
    runtime.state.waiting = what
    try:
        left = sum(1 for r in requests if r != MPI.REQUEST_NULL)
        while left:
            runtime.check_abort()
            both = [*requests, _wake()]
            i = MPI.Request.Waitany(both, status)  # completes the Python objects in place
            if i == len(requests):
                _wake_request = None  # delivered: post another at the next wait
            elif i == MPI.UNDEFINED:
                return
            else:
                left -= 1
    finally:
        runtime.state.waiting = ""


def wait(request: Any, what: str, keep: tuple = ()) -> Any:
    """Wait for ``request``, abandoning it (with ``keep``, its buffers) on abort; return
    its ``MPI.Status``."""
    status = MPI.Status()
    try:
        if not _spin(lambda: True if request.Test(status) else None, SPIN_SECONDS):
            _blocking_wait([request], what, status)
        return status
    except BaseException:
        give_up([request], keep)
        raise


def give_up(requests: list, keep: tuple) -> None:
    """Cancel unfinished requests and keep them, with ``keep``, until they complete."""
    for request in requests:
        if request == MPI.REQUEST_NULL:
            continue
        try:
            request.Cancel()
        except MPI.Exception:
            pass
        _abandon(request, (keep,))


def wait_all(requests: list, what: str, keep: tuple = ()) -> None:
    for request in requests:
        wait(request, what, keep)


def wait_every(requests: list, what: str, keep: tuple = ()) -> None:
    """Wait for all of ``requests`` at once; on an abort every unfinished one is
    cancelled and kept, with ``keep``, until it completes."""
    if not requests:
        return
    pending = list(requests)
    try:
        if not _spin(lambda: True if MPI.Request.Testall(pending) else None, SPIN_SECONDS):
            _blocking_wait(pending, what)
    except BaseException:
        give_up(pending, keep)
        raise


def probe(comm: Any, source: int, tag: int, what: str) -> tuple[Any, Any]:
    """Wait for a matching message (matched probe), interruptibly."""
    status = MPI.Status()

    def ready() -> Any:
        message = comm.improbe(source, tag, status)
        return None if message is None else (message, status)

    return _poll(ready, what)

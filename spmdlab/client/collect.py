"""When the client stops waiting for the labs' replies to one request, and which labs it
aborts on the way: the state machine of ``Pool._collect``, without sockets.

A wait runs until every lab replied, or ends early:
- Ctrl-C aborts the labs still running and ends the wait once they stopped, or
  ``interrupt_grace`` seconds later (labs stuck in compiled code then still owe their
  reply);
- ``timeout`` aborts the labs still running and, the same grace later, gives up on those
  that did not stop (they get an ``aborted`` reply saying they are stuck);
- a lab's error aborts the others ``ERROR_ABORT_DELAY`` later (labs raising the same
  error a moment later are reported, not aborted), and gives up on them
  ``max(interrupt_grace, ERROR_GIVE_UP)`` seconds after that (or by the timeout's end);
- a stall (``StallWatch``: a collective some labs of the block never reach) aborts the
  labs as an error does;
- ``give_up`` (a time) ends the wait with the replies received by then.

The pool reads the sockets and sends the aborts; :class:`ReplyWait` only decides.
"""
from __future__ import annotations

from typing import Any

from ..protocol.messages import Reply

__all__ = ["ReplyWait", "ERROR_ABORT_DELAY", "ERROR_GIVE_UP", "STUCK"]

ERROR_ABORT_DELAY = 0.1  # seconds the other labs get to report their own error
# Seconds labs get to stop after another lab's error before they are given up on (then
# finished, or the pool restarted, before the next command): longer than the interrupt
# grace, since they may be in a long numpy call, but a lab blocked for good (say in a
# blocking MPI call the failed lab never joins) must not hang the session.
ERROR_GIVE_UP = 10.0
STUCK = "busy and not stopping (in compiled code?)"


class ReplyWait:
    """The replies of ``labs`` to the request of ``epoch`` as they arrive, and the
    decisions of the wait (see the module doc). ``watch`` is the block's ``StallWatch``
    (or None); times are ``time.monotonic()`` seconds."""

    def __init__(self, labs: set[int], epoch: int, now: float, grace: float, timeout: float | None = None,
                 give_up: float | None = None, watch: Any = None) -> None:
        self.waiting = set(labs)
        self.epoch = epoch
        self.replies: dict[int, Reply] = {}
        self.grace = grace
        self.deadline = now + timeout if timeout is not None else None
        self.give_up = give_up
        self.watch = watch
        self.aborted_for: str | None = None  # "interrupt", "timeout" or "error" (a stall too)
        self.interrupted_at: float | None = None
        self.error_at: float | None = None  # when the others are (or were) aborted after an error
        self.owing_why = ""  # why labs still owe a reply when the wait ended early
        self.over = False
        self.held: dict[int, tuple[Reply, int]] = {}  # lab -> (its gathered reply, frames of it to come first)

    def tick(self, now: float, interrupted: bool) -> list[str]:
        """Advance the wait to ``now`` (``interrupted``: Ctrl-C was pressed). Returns the
        reasons to abort the labs still waiting (in order); sets ``over`` when the wait
        ends with labs still waiting."""
        aborts = []
        watch = self.watch
        if watch and watch.due(now) and self.aborted_for is None and self.error_at is None:
            watch.look(now)
        if watch and watch.verdict and self.aborted_for is None:
            self.aborted_for, self.error_at = "error", now
            aborts.append("stall")
        if interrupted and self.interrupted_at is None:
            self.interrupted_at, self.aborted_for = now, "interrupt"
            aborts.append("interrupt")
        if self._ends(now):
            self.over = True
            return aborts
        if self.deadline is not None and now > self.deadline and self.aborted_for is None:
            self.aborted_for = "timeout"
            aborts.append("timeout")
        if self.error_at is not None and now >= self.error_at and self.aborted_for is None:
            self.aborted_for = "error"
            aborts.append("error")
        return aborts

    def _ends(self, now: float) -> bool:
        if self.interrupted_at is not None and now - self.interrupted_at > self.grace:
            self.owing_why = "after Ctrl-C"
            return True
        if self.give_up is not None and now > self.give_up:
            return True
        if self._stuck(now):
            self.owing_why = f"after the {self.aborted_for}"
            for lab in self.waiting:
                self.replies[lab] = Reply("aborted", lab, self.epoch, STUCK)
            return True
        return False

    def _stuck(self, now: float) -> bool:
        """True once the labs aborted for a timeout or an error had their time to stop."""
        if self.aborted_for == "timeout":
            assert self.deadline is not None
            return now > self.deadline + self.grace
        if self.aborted_for != "error" or self.error_at is None:
            return False
        give_up = self.error_at + max(self.grace, ERROR_GIVE_UP)
        if self.deadline is not None:
            give_up = min(give_up, self.deadline + self.grace)  # timeout= bounds it all
        return now > give_up

    def seconds(self, now: float) -> float:
        """How long the next wait for a message may last."""
        if self.error_at is None or self.aborted_for:
            return 0.1
        return max(0.0, min(0.1, self.error_at - now))

    def received(self, lab: int, reply: Reply, now: float) -> None:
        """``lab``'s reply to this request arrived."""
        self.replies[lab] = reply
        self.waiting.discard(lab)
        if self.watch:
            self.watch.finished_lab(lab, reply.kind, now)
        if reply.kind == "error" and self.error_at is None:
            # Labs raising the same error a moment later are reported too (collapsed as
            # "labs 1-4"), rather than aborted.
            self.error_at = now + ERROR_ABORT_DELAY

    def received_many(self, replies: dict[int, Reply], now: float) -> None:
        """Done replies of many labs at once (lab 1's ``Gathered``: no errors among them)."""
        fresh = {lab: r for lab, r in replies.items() if lab in self.waiting}
        self.replies.update(fresh)
        self.waiting.difference_update(fresh)
        if self.watch:
            self.watch.finished_together(set(fresh), now)

    def gathered(self, replies: dict[int, Reply], sent: tuple[int, ...], received: dict[int, int],
                 now: float) -> None:
        """Lab 1's ``Gathered``: lab k had sent ``sent[k-1]`` frames on its own connection
        when it replied (``received[k]`` are in); a reply whose lab's output is not all in
        yet is held until it is (``frame_in``), so a block never returns before its output."""
        ready = {}
        for lab, reply in replies.items():
            if sent and received[lab] < sent[lab - 1]:
                self.held[lab] = (reply, sent[lab - 1])
            else:
                ready[lab] = reply
        self.received_many(ready, now)

    def frame_in(self, lab: int, received: int, now: float) -> None:
        """A frame of ``lab`` was read (``received`` in all): its held reply counts once
        every frame it had sent before replying is in."""
        held = self.held.get(lab)
        if held is not None and received >= held[1]:
            del self.held[lab]
            self.received_many({lab: held[0]}, now)

    def release_held(self, now: float) -> None:
        """A wait that ends early keeps the replies it holds (their output comes later)."""
        held, self.held = self.held, {}
        self.received_many({lab: reply for lab, (reply, _) in held.items()}, now)

    def stopped_where(self) -> dict[int, Any]:
        """Where each stopped lab was (``aborted`` replies), and the labs still busy."""
        where: dict[int, Any] = {lab: r.result for lab, r in self.replies.items() if r.kind == "aborted"}
        where.update({lab: STUCK for lab in self.waiting})
        return where

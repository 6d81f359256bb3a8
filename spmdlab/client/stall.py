"""Noticing a block that can never end: a collective only some labs reach, or labs that
wait in different collectives (issue 19).

Costs nothing on the normal path: no message is sent for a block that ends within
``FIRST_LOOK`` seconds and whose labs finish together. Labs already tell the client when
they finish a block; when some labs of a block have finished while others are still
busy, or a block runs long, the client asks the busy labs where they are (a
:class:`~spmdlab.protocol.Where` on their control connection, answered by the lab's
control thread from the wait state every library wait keeps: the wait's name, a count of
waits entered, and the user line read from the stack). The block is stalled when, in
``STABLE_LOOKS + 1`` answers in a row, every busy lab waits in the same collective wait
it was in before (the count did not move) and either some lab of the block has finished
(it will never join) or the labs wait in differently named operations. The labs are
then aborted and one :class:`~spmdlab.errors.SpmdError` says which lab waits where.

Point-to-point waits (``labSend``, ``labReceive``, ...) never count: labs legitimately
wait in different ones, and a large message between two labs may take seconds while a
third has finished.
"""
from __future__ import annotations

import selectors
import time
from collections.abc import Callable

from ..errors import labs_verb, where_lines
from ..protocol.channel import Channel, ChannelClosed, Undecodable
from ..protocol.messages import Waiting, Where

__all__ = ["StallWatch", "ask_where", "read_waiting", "finished_labs", "FIRST_LOOK", "AFTER_FINISH", "INTERVAL",
           "STABLE_LOOKS"]

ENABLED = True  # off only to time the check against its absence (benchmarks/bench_stall_check.py)
FIRST_LOOK = 0.4  # seconds a block runs before the labs are first asked (none finished)
AFTER_FINISH = 0.15  # seconds after a lab finished while others are busy
INTERVAL = 0.3  # seconds between two looks
SLOW_AFTER = 5.0  # a block running longer is looked at less often ...
SLOW_INTERVAL = 1.0  # ... once a second
STABLE_LOOKS = 2  # answers that must repeat the first unchanged
_POINT_TO_POINT = ("labSend(", "labReceive(", "labSendReceive(", "labProbe(")


def _collective(what: str) -> bool:
    return bool(what) and not what.startswith(_POINT_TO_POINT)


def _operation(what: str) -> str:
    """A wait's operation name: ``gop(add)`` -> ``gop``."""
    return what.split("(", 1)[0]


class StallWatch:
    """The stall check of one block's collection (see the module docstring).

    ``members``: the labs running the block (the others sit it out and finish at once);
    ``ask(labs)``: send them a Where; ``started``: when the block was sent."""

    def __init__(self, members: set[int], ask: Callable[[set[int]], None], started: float) -> None:
        self.members = set(members)
        self.ask = ask
        self.started = started
        self.next_look: float | None = started + FIRST_LOOK
        self.finished: set[int] = set()
        self.busy = set(members)
        self._answers: dict[int, Waiting] = {}
        self._last: dict[int, tuple] | None = None
        self._stable = 0
        self.verdict: str | None = None
        self.where: dict[int, str] = {}

    def finished_lab(self, lab: int, kind: str, now: float) -> None:
        """Lab ``lab`` replied (``kind``): a finished member makes the others' waits suspect."""
        self.busy.discard(lab)
        if lab not in self.members:
            return
        if kind != "done":  # an error or abort: the pool's own handling takes over
            self.next_look = None
            return
        self.finished.add(lab)
        if self.busy and self.next_look is not None:
            self.next_look = min(self.next_look, now + AFTER_FINISH)

    def finished_together(self, labs: set[int], now: float) -> None:
        """Labs that replied ``done`` together (the tree fan-out's gathered replies)."""
        self.busy -= labs
        self.finished |= labs & self.members
        if self.busy and self.next_look is not None:
            self.next_look = min(self.next_look, now + AFTER_FINISH)

    def due(self, now: float) -> bool:
        return self.verdict is None and bool(self.busy) and self.next_look is not None and now >= self.next_look

    def look(self, now: float) -> None:
        """Ask the busy labs where they are."""
        self._answers = {}
        slow = now - self.started > SLOW_AFTER
        self.next_look = now + (SLOW_INTERVAL if slow else INTERVAL)
        self.ask(set(self.busy))

    def answer(self, msg: Waiting) -> None:
        """A lab's answer; the verdict is reached once the answers of a look are all in."""
        if msg.lab not in self.busy or self.verdict is not None:
            return
        if msg.done:  # finished, its reply still on its way (the tree fan-out gathers it)
            self.finished_lab(msg.lab, "done", time.monotonic())
            self._answers.pop(msg.lab, None)
            if not self.busy:
                return
        else:
            self._answers[msg.lab] = msg
        if set(self._answers) != self.busy:
            return
        snapshot = {lab: (a.what, a.at, a.seq) for lab, a in self._answers.items()}
        if not all(_collective(what) for what, _, _ in snapshot.values()):
            self._last, self._stable = None, 0  # a lab computes or messages: no stall yet
            return
        self._stable = self._stable + 1 if snapshot == self._last else 0
        self._last = snapshot
        operations = {_operation(what) for what, _, _ in snapshot.values()}
        if self._stable >= STABLE_LOOKS and (self.finished or len(operations) > 1):
            self._decide(snapshot)

    def _decide(self, snapshot: dict[int, tuple]) -> None:
        self.where = {lab: f"waiting in {what}" + (f" at {at}" if at else "")
                      for lab, (what, at, _) in snapshot.items()}
        waiting = sorted(snapshot)
        if self.finished:
            head = (f"the spmd block cannot finish: {labs_verb(sorted(self.finished), 'finished', 'finished')} "
                    f"the block while {labs_verb(waiting, 'waits', 'wait')} in a collective operation that "
                    "every lab must call (called on some labs only, e.g. under `if labindex() == ...`?)")
        else:
            head = ("the spmd block cannot finish: the labs wait in different collective operations "
                    "(every lab must call the same ones, in the same order, with the same arguments)")
        self.verdict = f"{head}:\n{where_lines(self.where)}"


def ask_where(ctrl: dict[int, Channel], labs: set[int], epoch: int, sel: selectors.BaseSelector) -> None:
    """Ask ``labs`` where they wait; their control connections join ``sel`` (data
    ``("ctrl", channel)``) so the answers are read with the replies."""
    for lab in labs:
        chan = ctrl[lab]
        if chan.sock not in sel.get_map():
            sel.register(chan.sock, selectors.EVENT_READ, ("ctrl", chan))
        try:
            chan.send(Where(epoch))
        except ChannelClosed:
            pass


def read_waiting(chan: Channel, epoch: int, sel: selectors.BaseSelector, watch: StallWatch | None) -> None:
    """Read one answer from a control connection (one of an earlier block is dropped)."""
    try:
        msg = chan.recv()
    except (ChannelClosed, Undecodable):
        sel.unregister(chan.sock)  # a dead lab shows on its main connection
        return
    if isinstance(msg, Waiting) and msg.epoch == epoch and watch is not None:
        watch.answer(msg)


def finished_labs(ctrl: dict[int, Channel], labs: set[int], epoch: int, seconds: float = 0.5) -> set[int]:
    """The labs of ``labs`` that say (a Where's answer) they finished the block of
    ``epoch``: under the tree fan-out their replies wait in lab 1's gather for a lab that
    did not stop, so a wait that ends early asks before it calls them stuck."""
    done: set[int] = set()
    answered: set[int] = set()
    with selectors.DefaultSelector() as sel:
        for lab in labs:
            try:
                ctrl[lab].send(Where(epoch))
            except ChannelClosed:
                continue
            sel.register(ctrl[lab].sock, selectors.EVENT_READ, lab)
        deadline = time.monotonic() + seconds
        while len(answered) < len(sel.get_map()) and time.monotonic() < deadline:
            for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
                lab = key.data
                try:
                    msg = ctrl[lab].recv()
                except (ChannelClosed, Undecodable):
                    answered.add(lab)
                    continue
                if isinstance(msg, Waiting) and msg.epoch == epoch:
                    answered.add(lab)
                    if msg.done:
                        done.add(lab)
    return done

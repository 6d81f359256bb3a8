"""The decisions of a wait for replies (``spmdlab.client.collect.ReplyWait``), without
labs: which aborts go out when, and when the wait ends early."""
from __future__ import annotations

import pytest

from spmdlab.client.collect import ERROR_ABORT_DELAY, ERROR_GIVE_UP, STUCK, ReplyWait
from spmdlab.protocol.messages import Reply

pytestmark = pytest.mark.nompi


def reply(lab: int, kind: str = "done", result: object = None) -> Reply:
    return Reply(kind, lab, 7, result)


def test_all_replies_no_abort():
    wait = ReplyWait({1, 2}, 7, now=0.0, grace=1.0)
    assert wait.tick(0.0, False) == []
    wait.received(1, reply(1), 0.5)
    wait.received(2, reply(2), 0.6)
    assert not wait.waiting and not wait.over
    assert set(wait.replies) == {1, 2}


def test_ctrl_c_aborts_once_then_ends_after_the_grace():
    wait = ReplyWait({1, 2}, 7, now=0.0, grace=1.0)
    assert wait.tick(0.1, True) == ["interrupt"]
    assert wait.tick(0.5, True) == [] and not wait.over
    wait.received(1, reply(1, "aborted", "line 3"), 0.6)
    assert wait.tick(1.2, True) == [] and wait.over
    assert wait.owing_why == "after Ctrl-C"
    assert wait.stopped_where() == {1: "line 3", 2: STUCK}


def test_timeout_aborts_then_gives_up_on_stuck_labs():
    wait = ReplyWait({1, 2}, 7, now=0.0, grace=1.0, timeout=2.0)
    assert wait.tick(1.9, False) == []
    assert wait.tick(2.1, False) == ["timeout"]
    wait.received(2, reply(2, "aborted", "line 9"), 2.2)
    assert wait.tick(2.9, False) == [] and not wait.over
    assert wait.tick(3.1, False) == [] and wait.over
    assert wait.owing_why == "after the timeout"
    assert wait.replies[1] == Reply("aborted", 1, 7, STUCK)


def test_error_aborts_the_others_after_a_moment():
    wait = ReplyWait({1, 2, 3}, 7, now=0.0, grace=1.0)
    wait.received(2, reply(2, "error", "boom"), 1.0)
    assert wait.seconds(1.0) == pytest.approx(ERROR_ABORT_DELAY)
    wait.received(3, reply(3, "error", "boom"), 1.0 + ERROR_ABORT_DELAY / 2)  # reported, not aborted
    assert wait.tick(1.0 + ERROR_ABORT_DELAY, False) == ["error"]
    assert wait.seconds(1.2) == 0.1
    assert wait.tick(1.0 + ERROR_ABORT_DELAY + ERROR_GIVE_UP - 0.01, False) == [] and not wait.over
    assert wait.tick(1.0 + ERROR_ABORT_DELAY + ERROR_GIVE_UP + 0.01, False) == [] and wait.over
    assert wait.owing_why == "after the error"
    assert wait.replies[1].result == STUCK


def test_the_timeout_bounds_the_wait_after_an_error():
    wait = ReplyWait({1, 2}, 7, now=0.0, grace=1.0, timeout=3.0)
    wait.received(2, reply(2, "error", "boom"), 1.0)
    assert wait.tick(1.5, False) == ["error"]
    assert wait.tick(3.9, False) == [] and not wait.over
    assert wait.tick(4.1, False) == [] and wait.over


def test_give_up_ends_the_wait_without_stuck_replies():
    wait = ReplyWait({1}, 7, now=0.0, grace=1.0, give_up=0.5)
    assert wait.tick(0.6, False) == [] and wait.over
    assert wait.replies == {} and wait.owing_why == ""


class FakeWatch:
    def __init__(self) -> None:
        self.verdict: str | None = None
        self.looked: list[float] = []
        self.finished: list[tuple] = []

    def due(self, now: float) -> bool:
        return True

    def look(self, now: float) -> None:
        self.looked.append(now)
        self.verdict = "stalled"

    def finished_lab(self, lab: int, kind: str, now: float) -> None:
        self.finished.append((lab, kind))


def test_a_stall_aborts_as_an_error_does():
    watch = FakeWatch()
    wait = ReplyWait({1, 2}, 7, now=0.0, grace=1.0, watch=watch)
    wait.received(1, reply(1), 0.1)
    assert watch.finished == [(1, "done")]
    assert wait.tick(0.2, False) == ["stall"]
    assert watch.looked == [0.2]
    assert wait.aborted_for == "error"
    assert wait.tick(0.3, False) == []  # no second abort, no second look
    assert watch.looked == [0.2]


def test_a_gathered_reply_waits_for_the_output_its_lab_sent_before_it():
    wait = ReplyWait({1, 2, 3}, 7, now=0.0, grace=1.0)
    # lab 1 had sent 4 frames (all in), lab 2 six (four in), lab 3 two (two in)
    wait.gathered({1: reply(1), 2: reply(2), 3: reply(3)}, (4, 6, 2), {1: 4, 2: 4, 3: 2}, 0.1)
    assert wait.waiting == {2} and set(wait.held) == {2}
    wait.frame_in(2, 5, 0.2)
    assert wait.waiting == {2}
    wait.frame_in(2, 6, 0.3)
    assert not wait.waiting and not wait.held and set(wait.replies) == {1, 2, 3}


def test_a_wait_that_ends_early_keeps_the_replies_it_holds():
    wait = ReplyWait({1, 2}, 7, now=0.0, grace=1.0)
    wait.gathered({1: reply(1), 2: reply(2)}, (1, 9), {1: 1, 2: 3}, 0.1)
    wait.release_held(0.2)
    assert not wait.waiting and set(wait.replies) == {1, 2}

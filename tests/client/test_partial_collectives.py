"""A collective only some labs reach, or labs in different collectives, is an error
naming where each lab waits, never a hang (issue 19, item 4)."""
import time

import pytest

from spmdlab import (
    SpmdError,
    codistributed,
    codistributor1d,
    codistributor2dbc,
    gplus,
    labBarrier,
    labindex,
    redistribute,
    spmd,
)
from spmdlab.client.stall import AFTER_FINISH, FIRST_LOOK, StallWatch
from spmdlab.protocol.messages import Waiting

pytestmark = pytest.mark.timeout(90)


def still_works(pool) -> None:
    with spmd(pool=pool):
        total = gplus(labindex())
    assert total[1] == pool.numlabs * (pool.numlabs + 1) // 2


def _line(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line)


def test_a_collective_only_one_lab_reaches_ends_with_an_error(pool4):
    with spmd(pool=pool4):
        D = codistributed.rand(40, 40)
    start = time.monotonic()
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            if labindex() == 1:
                s = D.sum()  # only lab 1
    took = time.monotonic() - start
    text = str(info.value)
    assert took < 2.5, took
    assert "labs 2-4 finished the block" in text, text
    assert f"lab 1: waiting in sum at {__file__}:{_line('# only lab 1')}" in text, text
    still_works(pool4)


def test_in_a_smaller_block_only_its_own_labs_count(pool4):
    with pytest.raises(SpmdError) as info:
        with spmd(2, pool=pool4):
            if labindex() == 1:
                gplus(1)  # lab 1 of 2
    text = str(info.value)
    assert "lab 2 finished the block while lab 1 waits" in text, text
    assert "labs 3" not in text and "lab 3" not in text, text
    with spmd(2, pool=pool4):  # a long block of the two labs: the sitting-out labs do not count
        if labindex() == 1:
            time.sleep(1.5)
        total = gplus(1)
    assert total[1] == 2
    still_works(pool4)


def test_labs_in_different_collectives_end_with_an_error(pool4):
    start = time.monotonic()
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            if labindex() <= 2:
                labBarrier()  # labs 1 and 2
            else:
                gplus(1)  # labs 3 and 4
    took = time.monotonic() - start
    text = str(info.value)
    assert took < 2.5, took
    assert f"lab 1: waiting in labBarrier() at {__file__}:{_line('# labs 1 and 2')}" in text, text
    assert f"lab 3: waiting in gop(add) at {__file__}:{_line('# labs 3 and 4')}" in text, text
    still_works(pool4)


def test_redistribute_to_different_targets_is_one_error(pool4):
    with spmd(pool=pool4):
        D = codistributed.rand(300, 200, codist=codistributor1d(1))
    for target in ("codistributor2dbc() if labindex() == 1 else codistributor1d(2)",
                   "codistributor1d(2) if labindex() == 1 else codistributor1d(1, [100, 100, 50, 50])"):
        ns = {"labindex": labindex, "codistributor1d": codistributor1d, "codistributor2dbc": codistributor2dbc}
        with pytest.raises(SpmdError) as info:
            with spmd(pool=pool4):
                E = redistribute(D, eval(target, ns))
        assert sorted(info.value.errors) == [1, 2, 3, 4]
        text = str(info.value)
        assert "redistribute: every lab must ask for the same size, dtype and layout; got lab 1: " in text, text
        assert "; labs 2, 3, 4: size (300, 200), dtype float64, codistributor1d(" in text, text
    still_works(pool4)


def test_redistribute_on_one_lab_only_ends_with_an_error(pool4):
    with spmd(pool=pool4):
        D = codistributed.rand(300, 200, codist=codistributor1d(1))
    start = time.monotonic()
    with pytest.raises(SpmdError) as info:
        with spmd(pool=pool4):
            if labindex() == 3:
                E = redistribute(D, codistributor1d(2))  # lab 3 alone
    assert time.monotonic() - start < 2.5
    text = str(info.value)
    assert "labs 1, 2 and 4 finished the block while lab 3 waits" in text, text
    assert f"lab 3: waiting in redistribute at {__file__}:{_line('# lab 3 alone')}" in text, text
    still_works(pool4)


def test_a_long_computation_on_one_lab_is_not_a_stall(pool4):
    with spmd(pool=pool4):
        if labindex() == 1:
            time.sleep(2.5)
        total = gplus(1)
    assert total[1] == 4
    with spmd(pool=pool4):
        if labindex() == 1:
            time.sleep(2.5)
    still_works(pool4)


def _answers(watch, now, states):
    watch.look(now)
    for lab, (what, seq) in states.items():
        watch.answer(Waiting(0, lab, what, "f.py:1" if what else "", seq))


@pytest.mark.nompi
def test_stall_needs_unchanged_waits_and_a_finished_lab_or_different_operations():
    asked = []
    watch = StallWatch({1, 2, 3}, asked.append, 0.0)
    assert not watch.due(0.1) and watch.due(FIRST_LOOK)
    _answers(watch, 0.5, {1: ("sum", 5), 2: ("sum", 5), 3: ("sum", 5)})
    _answers(watch, 0.8, {1: ("sum", 5), 2: ("sum", 5), 3: ("sum", 5)})
    _answers(watch, 1.1, {1: ("sum", 5), 2: ("sum", 5), 3: ("sum", 5)})
    assert watch.verdict is None  # one long collective of every lab: a big transfer, say
    watch.finished_lab(3, "done", 1.2)
    assert watch.due(1.2 + AFTER_FINISH) and asked[-1] == {1, 2, 3}
    _answers(watch, 1.4, {1: ("sum", 5), 2: ("sum", 5)})
    _answers(watch, 1.7, {1: ("sum", 6), 2: ("sum", 5)})  # lab 1 moved on
    _answers(watch, 2.0, {1: ("sum", 6), 2: ("", 9)})  # lab 2 computes
    _answers(watch, 2.3, {1: ("sum", 6), 2: ("gop", 10)})
    _answers(watch, 2.6, {1: ("sum", 6), 2: ("gop", 10)})
    assert watch.verdict is None
    _answers(watch, 2.9, {1: ("sum", 6), 2: ("gop", 10)})
    assert watch.verdict is not None and asked[-1] == {1, 2}
    assert watch.verdict.startswith("the spmd block cannot finish: lab 3 finished the block while labs 1 and 2 wait")
    assert watch.where == {1: "waiting in sum at f.py:1", 2: "waiting in gop at f.py:1"}


@pytest.mark.nompi
def test_point_to_point_waits_are_never_a_stall():
    """Labs receiving from themselves, or a large message between two labs while a third
    finished: slow, not stuck."""
    watch = StallWatch({1, 2, 3}, lambda labs: None, 0.0)
    for t in (0.4, 0.7, 1.0, 1.3):
        _answers(watch, t, {1: ("labReceive(source=1, tag=any)", 3), 2: ("labReceive(source=2, tag=any)", 4),
                            3: ("labSend(dest=1, tag=0)", 2)})
    watch.finished_lab(3, "done", 1.4)
    for t in (1.6, 1.9, 2.2, 2.5):
        _answers(watch, t, {1: ("labReceive(source=2, tag=any)", 5), 2: ("labSend(dest=1, tag=0)", 6)})
    assert watch.verdict is None


@pytest.mark.nompi
def test_labs_in_different_operations_stall_without_a_finished_lab():
    watch = StallWatch({1, 2}, lambda labs: None, 0.0)
    for t in (0.4, 0.7, 1.0):
        _answers(watch, t, {1: ("gop(max)", 3), 2: ("gop(add)", 4)})
    assert watch.verdict is None  # one operation, say, with other arguments: not told apart
    for t in (1.3, 1.6, 1.9):
        _answers(watch, t, {1: ("labBarrier()", 3), 2: ("gop(add)", 4)})
    assert watch.verdict is not None and "different collective operations" in watch.verdict
    watch = StallWatch({1, 2}, lambda labs: None, 0.0)
    watch.finished_lab(2, "error", 0.1)  # an error: the pool's own handling, no look
    assert not watch.due(10.0)


def test_blocks_that_end_together_send_no_stall_message(pools, monkeypatch):
    # the check costs no message on the normal path: the client asks no lab where it is
    # for blocks that end within FIRST_LOOK with every lab finishing together
    from spmdlab.protocol.channel import Channel
    from spmdlab.protocol.messages import Where

    pool = pools(4)
    with spmd(pool=pool):
        D = codistributed.rand(400, 400)
    asked = []
    send = Channel.send

    def counting(self, obj, *args, **kwargs):
        if isinstance(obj, Where):
            asked.append(obj)
        return send(self, obj, *args, **kwargs)

    monkeypatch.setattr(Channel, "send", counting)
    fast = []  # blocks shorter than AFTER_FINISH, which no look can reach
    for k in range(100):
        before, t = len(asked), time.monotonic()
        with spmd(pool=pool):
            if k >= 50:
                s = D.sum()
        if time.monotonic() - t < AFTER_FINISH:
            fast.append(len(asked) - before)
    assert len(fast) >= 10, "the machine was too busy for blocks to end together"
    assert fast == [0] * len(fast)
    assert float(s[1]) == float(s[4])
    # and the counting itself works: a block that stalls is asked
    with pytest.raises(SpmdError):
        with spmd(pool=pool):
            if labindex() == 1:
                labBarrier()
    assert asked
    still_works(pool)

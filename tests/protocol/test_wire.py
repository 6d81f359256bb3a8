"""The wire form of the messages (plain tuples, issue 22) and the tree fan-out's slots:
every message survives the trip unchanged, a user's value is never touched, and what
lab 1 gathers decodes to the replies the labs gave."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from spmdlab import settings
from spmdlab.protocol import messages as protocol
from spmdlab.protocol import tree
from spmdlab.protocol.channel import Channel, Undecodable, loads
from spmdlab.protocol.messages import (
    Abort,
    Block,
    Call,
    Done,
    Exec,
    Fanout,
    Gathered,
    Get,
    Hello,
    Input,
    Output,
    Reply,
    Set,
    Shutdown,
    Summary,
    Waiting,
    Where,
)

pytestmark = pytest.mark.nompi

TAGGED = ("\x00spmdlab", 1, "looks like a message")  # a user value shaped like the wire form

MESSAGES = [
    Exec(Block(source="x = 1\n", filename="/f.py", firstlineno=3, inputs={"a": Input("val", TAGGED),
                                                                        "m": Input("mod", "numpy")},
               outputs={"x": 4}, nlabs=2, workspace="w", echo=True).stamped(7, True, (1, 2))),
    Reply("done", 2, 7, Done({"x": Summary("scalar", "int", None, "3"), "y": Summary("array", "float64", (2, 3))},
                             "echo")),
    Reply("done", 1, 7, Done()),
    Reply("ok", 1, 7, Summary("scalar", "float", None, "1.5")),
    Reply("value", 3, 7, TAGGED),
    Reply("missing", 3, 7, 12),
    Reply("aborted", 3, 7, "waiting in gop(add)"),
    Output("stdout", "Lab 1: hi\n"),
    Get(5, 7), Set(5, TAGGED, 7), Call(len, 5, (1,), {"k": 2}, 7), Shutdown(),
    Abort(7, "interrupt"), Where(7), Waiting(7, 2, "gop(add)", "f.py:3", 4, True),
    Hello("main", 0, 2, 123), Fanout(7, b"\x00\x01"), Gathered(7, bytes([0, 1, 2]), {2: b"x"}),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_crosses_unchanged_and_as_plain_values(message):
    wire = protocol.encode(message)
    assert type(wire) is tuple and wire[0] == "\x00spmdlab"
    text = pickle.dumps(wire, protocol=5)
    assert b"spmdlab.protocol" not in text or isinstance(message, Call)  # no class lookups (Call's fn is len)
    back = protocol.decode(pickle.loads(text))
    assert back == message and type(back) is type(message)


def test_user_values_shaped_like_the_wire_form_are_left_alone():
    # only a frame's top-level object is decoded, and that is always a message
    assert protocol.decode(protocol.encode(Reply("value", 1, 2, TAGGED))).result == TAGGED
    assert protocol.encode("ping") == "ping"


def test_a_frame_with_numpy_buffers_decodes_whole_from_bytes():
    x = np.arange(12.0).reshape(3, 4)
    block = Block(inputs={"x": Input("val", x)}).stamped(9, False, ())
    data = b"".join(protocol.dumps(Exec(block), False, 9))
    back = loads(data)
    np.testing.assert_array_equal(back.block.inputs["x"].value, x)
    back.block.inputs["x"].value[0, 0] = 5  # writable, as a received buffer
    with pytest.raises(Undecodable) as info:
        loads(data[:len(data) - 200] + b"\xff" * 200)  # payload cut: the epoch still known
    assert info.value.epoch == 9


def test_slots_carry_plain_and_packed_replies_and_send_the_rest_directly():
    replies = {
        1: Reply("done", 1, 4, Done()),
        2: Reply("done", 2, 4, Done({"x": Summary("scalar", "int", None, "2")}, "2")),
        3: Reply("error", 3, 4, "boom"),
        4: Reply("done", 4, 4, Done({"D": Summary("codist", "codistributed", (4,), None, layout=object())})),
        5: Reply("done", 5, 4, Done({}, "e" * 1000)),
    }
    slots = [tree.slot(r) for r in replies.values()]
    assert [direct for _, direct in slots] == [False, False, True, True, True]
    assert all(len(s) == tree.SLOT for s, _ in slots)
    gathered = tree.combine(4, b"".join(tree.with_sent(s, 10 * k) for k, (s, _) in enumerate(slots, 1)), 5)
    assert list(gathered.codes) == [tree.PLAIN, tree.PACKED, tree.DIRECT, tree.DIRECT, tree.DIRECT]
    assert gathered.sent == (10, 20, 30, 40, 50)  # frames each lab had sent: its output comes first
    found, direct = tree.replies(protocol.decode(pickle.loads(pickle.dumps(protocol.encode(gathered)))))
    assert found == {1: replies[1], 2: replies[2]} and direct == [3, 4, 5]


def test_the_tree_setting_reads_on_and_off_and_refuses_anything_else(monkeypatch):
    monkeypatch.setenv("SPMDLAB_TREE", "on")
    assert settings.load().tree is True
    assert settings.load(tree=False).lab_environment()["SPMDLAB_TREE"] == "0"
    monkeypatch.setenv("SPMDLAB_TREE", "0")
    assert settings.load().tree is False
    monkeypatch.setenv("SPMDLAB_TREE", "maybe")
    with pytest.raises(ValueError, match="SPMDLAB_TREE='maybe' is not valid: SPMDLAB_TREE takes 1 or 0"):
        settings.load()


def test_a_channel_carries_messages_in_their_wire_form():
    import socket

    a, b = socket.socketpair()
    left, right = Channel(a), Channel(b)
    for message in MESSAGES[:4]:
        left.send(message)
        assert right.recv() == message
    a.close()
    b.close()


def test_a_send_to_an_end_that_went_away_is_closed_not_broken():
    """The other end gone mid-send (a lab killed by MPI's launcher) is ChannelClosed, and
    the channel is not marked broken (which means "cut short by us", a pool restart)."""
    import socket

    from spmdlab.protocol.channel import ChannelClosed

    a, b = socket.socketpair()
    chan = Channel(a)
    b.close()
    with pytest.raises(ChannelClosed):
        chan.send(np.ones(1_000_000))
    assert not chan.broken
    chan.close()

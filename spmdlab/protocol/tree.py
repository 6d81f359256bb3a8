"""What the tree fan-out puts on MPI: each lab's reply to a broadcast request in one fixed
slot of the leader's gather, and the leader's one :class:`Gathered` answer for them all.

A slot is ``SLOT`` bytes: a code byte, a 2-byte length, the number of frames the lab had
sent on its own connection when it replied (its output; ``with_sent``) and the packed
:class:`Done`. The client counts the reply in only once that many frames of the lab are
in, so a block's output is never overtaken by lab 1's answer.
``PLAIN`` (done, nothing stored, no echo: an empty block, a block of a lab outside
``spmd(n)``) has no body; ``PACKED`` carries the summaries as plain tuples (no class
references, so most fit); a reply that does not fit (an error, an abort, a value with a
codistributor in its summary, a long echo) is ``DIRECT``: the lab sends it on its own
connection, as without the tree, and its slot only says so. Pure: no sockets, no MPI.
"""
from __future__ import annotations

import pickle
import struct

from .messages import Done, Gathered, Reply, Summary

__all__ = ["SLOT", "PLAIN", "PACKED", "DIRECT", "MAX_FANOUT", "slot", "with_sent", "combine", "replies"]

SLOT = 256
PLAIN, PACKED, DIRECT = 0, 1, 2
MAX_FANOUT = 1 << 20  # bytes: a larger request goes to every lab directly
_HEAD = struct.Struct("!BHQ")  # code, body length, frames sent


def _packed(reply: Reply) -> bytes | None:
    """The body of a done reply's slot, or None when it does not fit."""
    done = reply.result
    rows = {}
    for name, s in done.summaries.items():
        if s.layout is not None:
            return None
        rows[name] = (s.kind, s.type_name, s.shape, s.text)
    try:
        body = pickle.dumps((rows, done.echo), protocol=5)
    except Exception:
        return None
    return body if len(body) <= SLOT - _HEAD.size else None


def slot(reply: Reply) -> tuple[bytes, bool]:
    """``(slot bytes, direct)``: the lab's slot for ``reply``; ``direct`` says the lab must
    send ``reply`` itself."""
    if reply.kind == "done":
        done = reply.result
        if not done.summaries and done.echo is None:
            return _HEAD.pack(PLAIN, 0, 0).ljust(SLOT, b"\0"), False
        body = _packed(reply)
        if body is not None:
            return (_HEAD.pack(PACKED, len(body), 0) + body).ljust(SLOT, b"\0"), False
    return _HEAD.pack(DIRECT, 0, 0).ljust(SLOT, b"\0"), True


def with_sent(slot: bytes, sent: int) -> bytes:
    """``slot`` saying its lab had sent ``sent`` frames on its connection (after a direct reply)."""
    code, size, _ = _HEAD.unpack_from(slot)
    return _HEAD.pack(code, size, sent) + slot[_HEAD.size:]


def combine(epoch: int, gathered: bytes | bytearray, nlabs: int) -> Gathered:
    """The leader's answer from the gathered slots of labs 1..nlabs (in rank order)."""
    view = memoryview(gathered)
    codes = bytes(view[0:nlabs * SLOT:SLOT])
    packed = {}
    sent = []
    for k in range(nlabs):
        _, size, frames = _HEAD.unpack_from(view, k * SLOT)
        sent.append(frames)
        if codes[k] == PACKED:
            packed[k + 1] = bytes(view[k * SLOT + _HEAD.size:k * SLOT + _HEAD.size + size])
    return Gathered(epoch, codes, packed, tuple(sent))


def _reply(lab: int, epoch: int, done: Done) -> Reply:
    reply = object.__new__(Reply)  # a frozen dataclass built without its __init__'s cost
    reply.__dict__.update(kind="done", lab=lab, epoch=epoch, result=done)
    return reply


_EMPTY = Done()


def replies(msg: Gathered) -> tuple[dict[int, Reply], list[int]]:
    """The replies ``msg`` carries, and the labs that sent theirs directly."""
    found, direct = {}, []
    epoch = msg.epoch
    for k, code in enumerate(msg.codes, 1):
        if code == PLAIN:
            found[k] = _reply(k, epoch, _EMPTY)
        elif code == PACKED:
            rows, echo = pickle.loads(msg.packed[k])
            found[k] = _reply(k, epoch, Done({name: Summary(*row) for name, row in rows.items()}, echo))
        else:
            direct.append(k)
    return found, direct

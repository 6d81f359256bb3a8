"""The client <-> lab protocol: the typed messages that travel on authenticated sockets.

Each lab opens two connections to the client: ``main`` (requests, replies, output) and
``ctrl`` (aborts from the client). The fork shim around each lab opens a third, ``watch``:
its end-of-file tells the shim the client is gone (the shim then kills its lab, even one
stuck in compiled code), and the shim reports the lab's exit status on it.

How messages cross (frames, ``Channel``, the handshake, addresses) is ``channel.py``'s;
its names are re-exported here, where the pool, the labs and the benchmarks import them.

Messages are the frozen dataclasses below:

- client -> lab (main): :class:`Exec` (a :class:`Block`), :class:`Get`, :class:`Set`,
  :class:`Call`, :class:`Shutdown`; each request carries the epoch its reply must carry.
- client -> lab (ctrl): :class:`Abort`, :class:`Where` (only while a block looks stalled);
  lab -> client (ctrl): :class:`Waiting`, the answer to :class:`Where`.
- lab -> client (main): :class:`Output`, and one :class:`Reply` per request.
- lab/shim -> client at start-up: :class:`Hello`; shim -> client (watch): :class:`Exit`.
- the tree fan-out (``SPMDLAB_TREE``): client -> lab 1 (main): :class:`Fanout`, a request
  lab 1 broadcasts to every lab over MPI; lab 1 -> client (main): :class:`Gathered`, the
  replies of every lab, gathered over MPI (a lab whose reply does not fit sends it itself).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from .channel import (
    Channel,
    ChannelClosed,
    Undecodable,
    connect,
    dumps,
    join_address,
    loads,
    server_handshake,
    split_address,
    use_codec,
)

__all__ = ["ChannelClosed", "Undecodable", "Summary", "Done", "ReplyKind", "Reply", "Output", "Get", "Set", "Call",
           "Shutdown", "Abort", "Where", "Waiting", "Hello", "Exit", "Input", "Block", "Exec", "Request", "stamp",
           "needs_user_pickle", "needs_cloudpickle", "dumps", "loads", "Channel", "Fanout", "Gathered",
           "encode", "decode", "server_handshake", "split_address",
           "join_address", "connect"]

# ---- messages --------------------------------------------------------------------------

@dataclass(frozen=True)
class Summary:
    """What the client knows of one value stored on a lab, without fetching it.

    ``kind``: ``array`` (shape, dtype in ``type_name``), ``scalar`` (``text`` is its repr),
    ``object``, or a value type's own kind (``codist``: ``layout`` is its codistributor).
    """

    kind: str
    type_name: str
    shape: tuple | None = None
    text: str | None = None
    layout: Any = None


@dataclass(frozen=True)
class Done:
    """A finished block: the summaries of the names it stored, and a trailing expression's
    repr (pmode's echo)."""

    summaries: dict[str, Summary] = field(default_factory=dict)
    echo: str | None = None


ReplyKind = Literal["done", "error", "aborted", "value", "missing", "ok"]


@dataclass(frozen=True)
class Reply:
    """A lab's answer to the request of ``epoch``. ``result`` by kind: ``done`` a
    :class:`Done`, ``error`` a ``RemoteError``, ``aborted`` where the lab was (text),
    ``value`` the value, ``missing`` the key, ``ok`` the stored value's :class:`Summary`."""

    kind: ReplyKind
    lab: int
    epoch: int
    result: Any = None


@dataclass(frozen=True)
class Output:
    """Lines a lab wrote to ``stream`` (``stdout`` or ``stderr``)."""

    stream: str
    text: str


@dataclass(frozen=True)
class Get:
    """The value stored under ``key``. (``epoch``: filled in by the pool when sent.)"""

    key: int
    epoch: int = 0


@dataclass(frozen=True)
class Set:
    """Store ``value`` under ``key``."""

    key: int
    value: Any
    epoch: int = 0


@dataclass(frozen=True)
class Call:
    """``fn(stored value or None, *args, **kwargs)`` on a lab, outside any block."""

    fn: Any
    key: int | None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    epoch: int = 0


@dataclass(frozen=True)
class Shutdown:
    epoch: int = 0


@dataclass(frozen=True)
class Abort:
    """Stop the block of ``epoch``; ``reason`` is ``interrupt``, ``error`` or ``timeout``."""

    epoch: int
    reason: str


@dataclass(frozen=True)
class Where:
    """Ask a lab where it waits in the block of ``epoch`` (sent only when some labs of a
    block finished while others are still busy, or a block runs long)."""

    epoch: int


@dataclass(frozen=True)
class Waiting:
    """A lab's answer to :class:`Where`: the library wait it is in (``what``, empty when
    it is not waiting), at the user's ``file:line`` (``at``), and ``seq``, the number of
    waits it has entered so far (a lab that moved on between two answers has another)."""

    epoch: int
    lab: int
    what: str
    at: str
    seq: int
    done: bool = False  # the lab finished the block of ``epoch`` (its reply may be on its way)


@dataclass(frozen=True)
class Hello:
    """The first message on a new connection. A shim's (``watch``) ``pid`` is its own and
    ``child`` its lab's; ``rank`` is -1 when the launcher did not say."""

    role: str  # main | ctrl | watch
    rank: int
    size: int
    pid: int
    child: int = 0


@dataclass(frozen=True)
class Exit:
    rank: int
    status: int


@dataclass(frozen=True)
class Input:
    """How one name enters a block: ``kind`` ``val`` (``value`` pickled), ``mod`` (a
    module, imported by the name in ``value``) or ``ref`` (the value each lab stores
    under the key in ``value``: a Composite element or a distributed array's part)."""

    kind: Literal["val", "mod", "ref"]
    value: Any


@dataclass(frozen=True)
class Block:
    """One piece of code for the labs to run.

    ``inputs`` maps a name to its :class:`Input`.
    ``outputs`` maps each name the block assigns to the key the lab stores it under.
    ``workspace`` names a namespace that persists between blocks (pmode), else a fresh one.
    ``call`` replaces the source with a call ``(function, args, kwargs)``, in whose
    arguments ``labcalls.Ref(name)`` stands for the input ``name``; its result is bound
    to ``ans`` (or, a ``labcalls.Outputs``, to each of its names). The pool fills in
    ``epoch``, ``renew_comm`` and ``frees``.
    """

    epoch: int = 0
    source: str = ""
    filename: str = "<spmd>"
    firstlineno: int = 1
    inputs: dict[str, Input] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)
    nlabs: int = 0
    workspace: str | None = None
    echo: bool = False
    call: tuple | None = None
    renew_comm: bool = False
    frees: tuple = ()

    def stamped(self, epoch: int, renew_comm: bool, frees: tuple) -> Block:
        """This block as the pool sends it."""
        return stamp(self, epoch=epoch, renew_comm=renew_comm, frees=frees)


@dataclass(frozen=True)
class Exec:
    block: Block

    @property
    def epoch(self) -> int:
        return self.block.epoch


@dataclass(frozen=True)
class Fanout:
    """A request for every lab, sent to lab 1 alone: ``data`` is the request's whole frame
    (``b"".join(dumps(...))``), which lab 1 broadcasts to the labs over MPI."""

    epoch: int
    data: bytes


@dataclass(frozen=True)
class Gathered:
    """Lab 1's one answer for every lab to a :class:`Fanout` of ``epoch``: ``codes[k]`` is
    lab k+1's (``tree.PLAIN``: done, nothing stored; ``tree.PACKED``: done, its
    :class:`Done` packed in ``packed[lab]``; ``tree.DIRECT``: the lab sent its reply
    itself, on its own connection)."""

    epoch: int
    codes: bytes
    packed: dict[int, bytes] = field(default_factory=dict)
    sent: tuple[int, ...] = ()  # sent[k]: frames lab k+1 had sent on its connection when it replied


Request = Exec | Get | Set | Call | Shutdown


def stamp(message: Any, **changes: Any) -> Any:
    """A copy of a frozen message with ``changes`` (``dataclasses.replace`` without its
    cost: this is on every request's path)."""
    copy = object.__new__(type(message))
    copy.__dict__.update(message.__dict__, **changes)
    return copy


def needs_user_pickle(message: Any) -> bool:
    """True if a request carries values only cloudpickle sends faithfully."""
    if isinstance(message, Set):
        return needs_cloudpickle(message.value)
    if isinstance(message, Call):
        return True
    return False

# ---- serialisation ---------------------------------------------------------------------

_PLAIN_TYPES = (int, float, complex, str, bytes, bool, type(None))


def needs_cloudpickle(value: Any) -> bool:
    """False for values plain pickle sends faithfully (it would send client-defined
    functions and classes by a reference the labs cannot resolve)."""
    if isinstance(value, _PLAIN_TYPES):
        return False
    if type(value) in (list, tuple) and len(value) < 64:
        return any(needs_cloudpickle(v) for v in value)
    dtype = getattr(value, "dtype", None)
    return not (type(value).__module__ == "numpy" and dtype is not None and not dtype.hasobject)

# ---- the wire form -----------------------------------------------------------------------
# Messages travel as plain tuples ``(_TAG, class number, field values...)``: pickling a
# dataclass costs a class lookup (an import check) per class and its field names, about
# 0.1 ms a block on this path (issue 22); a tuple of plain values pickles in a few µs.
# Nested messages (a Block's Inputs, a Reply's Done and Summaries) are flattened too; a
# user's value (``Set.value``, a ``value`` reply) is left as it is.

_TAG = "\x00spmdlab"
_CLASSES: tuple[type, ...] = (Summary, Done, Reply, Output, Get, Set, Call, Shutdown, Abort, Where, Waiting, Hello,
                              Exit, Input, Block, Exec, Fanout, Gathered)
_NUMBER = {cls: k for k, cls in enumerate(_CLASSES)}
_FIELDS = {cls: tuple(f.name for f in fields(cls)) for cls in _CLASSES}


def _row(summary: Summary) -> tuple:
    values = summary.__dict__
    return tuple(values[name] for name in _FIELDS[Summary])


def _flat(obj: Any) -> tuple:
    cls = type(obj)
    values = obj.__dict__
    if cls is Exec:
        return (_TAG, _NUMBER[Exec], _flat(obj.block))
    if cls is Block:
        values = {**values, "inputs": {name: (i.kind, i.value) for name, i in obj.inputs.items()}}
    elif cls is Reply and obj.kind in ("done", "ok"):
        result = obj.result
        flat = (result.summaries and {n: _row(s) for n, s in result.summaries.items()},
                result.echo) if obj.kind == "done" else _row(result)
        values = {**values, "result": flat}
    return (_TAG, _NUMBER[cls], *[values[name] for name in _FIELDS[cls]])


def _make(cls: type, values: Any) -> Any:
    obj: Any = object.__new__(cls)
    obj.__dict__.update(zip(_FIELDS[cls], values))
    return obj


def _summary(row: tuple) -> Summary:
    return _make(Summary, row)


def encode(obj: Any) -> Any:
    """What is pickled for ``obj``: a plain tuple for a message, anything else as it is."""
    return _flat(obj) if type(obj) in _NUMBER else obj


def decode(obj: Any) -> Any:
    """The message ``encode`` gave, rebuilt (anything else as it is)."""
    if type(obj) is not tuple or len(obj) < 2 or obj[0] != _TAG:
        return obj
    cls = _CLASSES[obj[1]]
    values = list(obj[2:])
    if cls is Exec:
        return _make(Exec, (decode(values[0]),))
    if cls is Block:
        at = _FIELDS[Block].index("inputs")
        values[at] = {name: _make(Input, pair) for name, pair in values[at].items()}
    elif cls is Reply and values[0] in ("done", "ok"):
        if values[0] == "done":
            summaries, echo = values[3]
            values[3] = _make(Done, ({n: _summary(row) for n, row in summaries.items()} if summaries else {}, echo))
        else:
            values[3] = _summary(values[3])
    return _make(cls, values)


use_codec(encode, decode)

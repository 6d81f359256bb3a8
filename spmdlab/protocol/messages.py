"""The client <-> lab protocol: authenticated sockets carrying framed pickles of typed messages.

Each lab opens two connections to the client: ``main`` (requests, replies, output) and
``ctrl`` (aborts from the client). The fork shim around each lab opens a third, ``watch``:
its end-of-file tells the shim the client is gone (the shim then kills its lab, even one
stuck in compiled code), and the shim reports the lab's exit status on it.

A frame is ``!QIQ`` (payload length, buffer count, epoch), the buffer lengths, the pickle
payload, then the raw out-of-band buffers (pickle protocol 5), so numpy arrays cross
without copies into the pickle stream. The epoch in the frame head lets the receiver
answer (or discard) a message whose payload it cannot unpickle without losing frame sync.

Messages are the frozen dataclasses below:

- client -> lab (main): :class:`Exec` (a :class:`Block`), :class:`Get`, :class:`Set`,
  :class:`Call`, :class:`Shutdown`; each request carries the epoch its reply must carry.
- client -> lab (ctrl): :class:`Abort`, :class:`Where` (only while a block looks stalled);
  lab -> client (ctrl): :class:`Waiting`, the answer to :class:`Where`.
- lab -> client (main): :class:`Output`, and one :class:`Reply` per request.
- lab/shim -> client at start-up: :class:`Hello`; shim -> client (watch): :class:`Exit`.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ChannelClosed", "Undecodable", "Summary", "Done", "ReplyKind", "Reply", "Output", "Get", "Set", "Call",
           "Shutdown", "Abort", "Where", "Waiting", "Hello", "Exit", "Input", "Block", "Exec", "Request", "stamp",
           "needs_user_pickle", "needs_cloudpickle", "dumps", "Channel", "server_handshake", "split_address",
           "join_address", "connect"]

_HEAD = struct.Struct("!QIQ")
_CHALLENGE = 32


class ChannelClosed(EOFError):
    """The other end of a channel went away."""


class Undecodable(Exception):
    """A whole frame arrived but its payload could not be unpickled here."""

    def __init__(self, epoch: int, error: BaseException):
        super().__init__(f"{type(error).__name__}: {error}")
        self.epoch = epoch
        self.error = error


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


def dumps(obj: Any, user: bool = False, epoch: int = 0) -> list:
    """Serialise to the list of frames ``Channel.send_frames`` writes.

    ``user=True`` uses cloudpickle, so functions and classes defined at the client travel.
    """
    buffers: list[pickle.PickleBuffer] = []
    if user:
        from . import shipping  # cloudpickle: not needed by the shim, which imports this module too

        payload = shipping.dumps(obj, buffer_callback=buffers.append)
    else:
        payload = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    head = _HEAD.pack(len(payload), len(raws), epoch) + b"".join(struct.pack("!Q", r.nbytes) for r in raws)
    return [head, payload, *raws]


class Channel:
    """One framed, bidirectional connection. ``send`` is thread-safe.

    A send cut short by an exception (Ctrl-C while the labs are fed a large input) leaves
    the stream mid-frame: the channel is then ``broken`` and its owner must drop it.
    """

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._send_lock = threading.Lock()
        self.broken = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, obj: Any, user: bool = False, epoch: int = 0) -> None:
        self.send_frames(dumps(obj, user, epoch))

    def send_frames(self, frames: list) -> None:
        if len(frames) == 2 and len(frames[1]) < 65536:
            frames = [frames[0] + frames[1]]  # one system call for small messages
        with self._send_lock:
            if self.broken:
                raise ChannelClosed("channel broken by an interrupted send")
            done = False
            try:
                for frame in frames:
                    self.sock.sendall(frame)
                done = True
            except OSError as exc:
                raise ChannelClosed(str(exc)) from None
            finally:
                if not done:
                    self.broken = True

    def _recv_into(self, view: memoryview) -> None:
        got = 0
        total = len(view)
        while got < total:
            try:
                n = self.sock.recv_into(view[got:], min(total - got, 1 << 24))
            except InterruptedError:
                continue
            except OSError as exc:
                raise ChannelClosed(str(exc)) from None
            if n == 0:
                raise ChannelClosed("connection closed")
            got += n

    def _recv_exact(self, n: int) -> bytearray:
        buf = bytearray(n)
        self._recv_into(memoryview(buf))
        return buf

    def recv(self) -> Any:
        """The next message. Raises ``Undecodable`` (the frame consumed, so the stream
        stays in sync) when its payload cannot be unpickled here."""
        length, nbuf, epoch = _HEAD.unpack(self._recv_exact(_HEAD.size))
        sizes = struct.unpack(f"!{nbuf}Q", self._recv_exact(8 * nbuf)) if nbuf else ()
        payload = self._recv_exact(length)
        buffers = [self._recv_exact(size) for size in sizes]
        try:
            return pickle.loads(payload, buffers=buffers)
        except Exception as exc:
            raise Undecodable(epoch, exc) from None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# ---- connections -------------------------------------------------------------------

def _digest(authkey: bytes, challenge: bytes) -> bytes:
    return hmac.new(authkey, challenge, hashlib.sha256).digest()


def server_handshake(sock: socket.socket, authkey: bytes, timeout: float = 2.0) -> Channel:
    """Challenge a freshly accepted connection; raise ``ChannelClosed`` if it fails or
    does not answer within ``timeout`` seconds."""
    sock.settimeout(timeout)
    chan = Channel(sock)
    challenge = os.urandom(_CHALLENGE)
    try:
        chan.send_frames([challenge])
        answer = chan._recv_exact(hashlib.sha256().digest_size)
    except (ChannelClosed, OSError):
        sock.close()
        raise ChannelClosed("no answer to the challenge") from None
    if not hmac.compare_digest(bytes(answer), _digest(authkey, challenge)):
        sock.close()
        raise ChannelClosed("authentication failed")
    sock.settimeout(None)
    return chan


def split_address(address: str) -> tuple[str, int] | None:
    """``host:port`` or ``[v6]:port`` -> ``(host, port)``; None for a socket path."""
    if address.startswith("/") or ":" not in address:
        return None
    host, port = address.rsplit(":", 1)
    return host.strip("[]"), int(port)


def join_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def connect(address: str, authkey: bytes, timeout: float = 30.0) -> Channel:
    """Connect to the client at ``address`` (a path, ``host:port`` or ``[v6]:port``) and
    authenticate."""
    tcp = split_address(address)
    if tcp is not None:
        sock = socket.create_connection(tcp, timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(address)
    chan = Channel(sock)
    challenge = chan._recv_exact(_CHALLENGE)
    chan.send_frames([_digest(authkey, bytes(challenge))])
    sock.settimeout(None)
    return chan

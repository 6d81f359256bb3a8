"""The client <-> lab protocol: authenticated sockets carrying framed pickles.

Each lab opens two connections to the client: ``main`` (commands, replies, output) and
``ctrl`` (interrupts from the client; its end-of-file tells the lab the client is gone).
The fork shim around each lab opens a third, short one to report the lab's exit status.

A frame is ``!QI`` (payload length, buffer count), the buffer lengths, the pickle
payload, then the raw out-of-band buffers (pickle protocol 5), so numpy arrays cross
without copies into the pickle stream.

Messages are tuples whose first item names the kind:

client -> lab (main): ``("exec", Block)``, ``("get", key)``, ``("set", key, value)``,
``("call", name, args)``, ``("shutdown",)``.
client -> lab (ctrl): ``("abort", epoch, reason)`` with reason ``interrupt|error|timeout``.
lab -> client (main): ``("out", stream, text)``, ``("done", epoch, result)``,
``("error", epoch, RemoteError)``, ``("aborted", epoch, where)``.
shim -> client: ``("exit", rank, status)``.
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
from typing import Any

import cloudpickle

_HEAD = struct.Struct("!QI")
_CHALLENGE = 32


class ChannelClosed(EOFError):
    """The other end of a channel went away."""


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


def dumps(obj: Any, user: bool = False) -> list:
    """Serialise to the list of frames ``Channel.send_frames`` writes.

    ``user=True`` uses cloudpickle, so functions and classes defined at the client travel.
    """
    buffers: list[pickle.PickleBuffer] = []
    if user:
        payload = cloudpickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    else:
        payload = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    head = _HEAD.pack(len(payload), len(raws)) + b"".join(struct.pack("!Q", r.nbytes) for r in raws)
    return [head, payload, *raws]


class Channel:
    """One framed, bidirectional connection. ``send`` is thread-safe."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._send_lock = threading.Lock()

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, obj: Any, user: bool = False) -> None:
        self.send_frames(dumps(obj, user))

    def send_frames(self, frames: list) -> None:
        if len(frames) == 2 and len(frames[1]) < 65536:
            frames = [frames[0] + frames[1]]  # one system call for small messages
        with self._send_lock:
            try:
                for frame in frames:
                    self.sock.sendall(frame)
            except OSError as exc:
                raise ChannelClosed(str(exc)) from None

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
        length, nbuf = _HEAD.unpack(self._recv_exact(_HEAD.size))
        sizes = struct.unpack(f"!{nbuf}Q", self._recv_exact(8 * nbuf)) if nbuf else ()
        payload = self._recv_exact(length)
        buffers = [self._recv_exact(size) for size in sizes]
        return pickle.loads(payload, buffers=buffers)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _digest(authkey: bytes, challenge: bytes) -> bytes:
    return hmac.new(authkey, challenge, hashlib.sha256).digest()


def server_handshake(sock: socket.socket, authkey: bytes, timeout: float = 10.0) -> Channel:
    """Challenge a freshly accepted connection; raise ``ChannelClosed`` if it fails."""
    sock.settimeout(timeout)
    chan = Channel(sock)
    challenge = os.urandom(_CHALLENGE)
    chan.send_frames([challenge])
    answer = chan._recv_exact(hashlib.sha256().digest_size)
    if not hmac.compare_digest(bytes(answer), _digest(authkey, challenge)):
        sock.close()
        raise ChannelClosed("authentication failed")
    sock.settimeout(None)
    return chan


def connect(address: str, authkey: bytes, timeout: float = 30.0) -> Channel:
    """Connect to the client at ``address`` (a path, or ``host:port``) and authenticate."""
    if ":" in address and not address.startswith("/"):
        host, port = address.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=timeout)
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


@dataclass
class Block:
    """One piece of code for the labs to run.

    ``inputs`` maps a name to ``("val", value)``, ``("mod", module_name)`` or
    ``("ref", key)`` (a lab-side stored value: a Composite element or distributed array).
    ``outputs`` maps each name the block assigns to the key the lab stores it under.
    ``workspace`` names a namespace that persists between blocks (pmode), else a fresh one.
    ``call`` replaces the source with a function call: ``(function, args, kwargs)``, the
    result stored under ``outputs["ans"]``.
    """

    epoch: int
    source: str = ""
    filename: str = "<spmd>"
    firstlineno: int = 1
    inputs: dict[str, tuple] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)
    nlabs: int = 0
    workspace: str | None = None
    echo: bool = False
    call: tuple | None = None
    renew_comm: bool = False
    frees: list[int] = field(default_factory=list)

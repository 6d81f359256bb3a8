"""The wire under the protocol's messages: frames, ``Channel``, the handshake, addresses.

A frame is ``!QIQ`` (payload length, buffer count, epoch), the buffer lengths, the pickle
payload, then the raw out-of-band buffers (pickle protocol 5), so numpy arrays cross
without copies into the pickle stream; a buffer that is a strided region (``inplace.Part``)
is written piece by piece from its memory (``sendmsg``), and a receiver may name where a
buffer belongs (``recv(place=...)``) to have it read straight there. The epoch in the frame head lets the receiver
answer (or discard) a message whose payload it cannot unpickle without losing frame sync.
A connection starts with a challenge: the client sends random bytes, the other end
answers with their HMAC under the pool's key.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

from .inplace import IOV_MAX, Pieces, pieces, strided_regions

__all__ = ["ChannelClosed", "Undecodable", "dumps", "loads", "Channel", "server_handshake", "split_address",
           "join_address", "connect", "use_codec"]

_HEAD = struct.Struct("!QIQ")
_CHALLENGE = 32


def _same(obj: Any) -> Any:
    return obj


# How messages become plain values on the wire and back (messages.py sets it: its
# dataclasses travel as tuples, without pickle's class lookups)
_codec: list = [_same, _same]


def use_codec(encode: Any, decode: Any) -> None:
    """Set how a message becomes what is pickled (``encode``) and back (``decode``)."""
    _codec[:] = [encode, decode]


class ChannelClosed(EOFError):
    """The other end of a channel went away."""


class Undecodable(Exception):
    """A whole frame arrived but its payload could not be unpickled here."""

    def __init__(self, epoch: int, error: BaseException):
        super().__init__(f"{type(error).__name__}: {error}")
        self.epoch = epoch
        self.error = error


def dumps(obj: Any, user: bool = False, epoch: int = 0) -> list:
    """Serialise to the list of frames ``Channel.send_frames`` writes.

    ``user=True`` uses cloudpickle, so functions and classes defined at the client travel.
    """
    buffers: list[pickle.PickleBuffer] = []
    obj = _codec[0](obj)
    with strided_regions() as strided:
        if user:
            from . import shipping  # cloudpickle: not needed by the shim, which imports this module too

            payload = shipping.dumps(obj, buffer_callback=buffers.append)
        else:
            payload = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws: list = []
    for b in buffers:
        raw = b.raw()
        region = strided.get(id(raw.obj))  # (a ticket is alive, so its id is its own)
        raws.append(raw if region is None else pieces(region[1]))
    head = _HEAD.pack(len(payload), len(raws), epoch) + b"".join(struct.pack("!Q", r.nbytes) for r in raws)
    return [head, payload, *raws]


def loads(data: bytes | bytearray | memoryview) -> Any:
    """The message of one frame held whole in ``data`` (``b"".join(dumps(...))``, as the
    tree fan-out broadcasts it); ``Undecodable`` as ``Channel.recv``."""
    view = memoryview(data)
    length, nbuf, epoch = _HEAD.unpack_from(view, 0)
    at = _HEAD.size
    sizes = struct.unpack_from(f"!{nbuf}Q", view, at) if nbuf else ()
    at += 8 * nbuf
    payload = view[at:at + length]
    at += length
    buffers = []
    for size in sizes:
        buffers.append(bytearray(view[at:at + size]))  # writable, as a received buffer
        at += size
    try:
        return _codec[1](pickle.loads(payload, buffers=buffers))
    except Exception as exc:
        raise Undecodable(epoch, exc) from None


class Channel:
    """One framed, bidirectional connection. ``send`` is thread-safe.

    A send cut short by an exception (Ctrl-C while the labs are fed a large input) leaves
    the stream mid-frame: the channel is then ``broken`` and its owner must drop it. A
    send that fails because the other end went away (a lab died, and MPI's launcher
    took the others down with it) raises ``ChannelClosed`` without breaking the channel:
    its owner reports the death.
    """

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._send_lock = threading.Lock()
        self.broken = False
        # Frames sent and received since the handshake: the tree fan-out's gather says how
        # many a lab had sent when it replied, so its output is in before its reply counts
        self.sent = 0
        self.received = 0

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
            done = gone = False
            try:
                for frame in frames:
                    if isinstance(frame, Pieces):
                        self._send_pieces(frame)
                    else:
                        self.sock.sendall(frame)
                done = True
                self.sent += 1
            except OSError as exc:
                gone = True  # the other end went away: closed, not broken by us
                raise ChannelClosed(str(exc)) from None
            finally:
                if not done and not gone:
                    self.broken = True

    def _send_pieces(self, parts: Pieces) -> None:
        """Send the pieces in order (gather I/O: a blocking send takes a whole batch)."""
        _each_batch(parts, self.sock.sendmsg)

    def _recv_pieces(self, parts: Pieces) -> None:
        """Fill the pieces in order from the stream (scatter I/O, each batch waited for
        whole: ``MSG_WAITALL``)."""
        try:
            _each_batch(parts, lambda views: self.sock.recvmsg_into(views, 0, socket.MSG_WAITALL)[0])
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

    def read_exact(self, n: int) -> bytearray:
        """The next ``n`` bytes of the stream (raw, outside any frame: the handshake's)."""
        buf = bytearray(n)
        self._recv_into(memoryview(buf))
        return buf

    def _take(self, n: int) -> bytes | bytearray:
        """The next ``n`` bytes (a small read: one ``recv`` that waits for all of them,
        without the buffer and view ``read_exact`` makes; its loop if a signal cuts it)."""
        try:
            data = self.sock.recv(n, socket.MSG_WAITALL)
        except InterruptedError:
            data = b""
        except OSError as exc:
            raise ChannelClosed(str(exc)) from None
        if len(data) == n:
            return data
        if not data and n:
            raise ChannelClosed("connection closed")
        return data + self.read_exact(n - len(data))

    def recv(self, place: Callable[[int, int, int], tuple[Pieces, Any] | None] | None = None) -> Any:
        """The next message. Raises ``Undecodable`` (the frame consumed, so the stream
        stays in sync) when its payload cannot be unpickled here. ``place(epoch, nbuf,
        size)`` may name where the frame's one out-of-band buffer belongs: ``(pieces,
        token)``, the buffer read straight into the ``inplace.Pieces`` (writable, ``size``
        bytes in all) and ``token`` unpickled in its stead (``inplace.PLACED``)."""
        length, nbuf, epoch = _HEAD.unpack(self._take(_HEAD.size))
        sizes = struct.unpack(f"!{nbuf}Q", self._take(8 * nbuf)) if nbuf else ()
        payload = self._take(length) if length < 65536 else self.read_exact(length)
        spot = place(epoch, nbuf, sizes[0]) if place is not None and nbuf == 1 else None
        if spot is not None:
            self._recv_pieces(spot[0])
            buffers: list = [spot[1]]
        else:
            buffers = [self.read_exact(size) for size in sizes]
        self.received += 1
        try:
            return _codec[1](pickle.loads(payload, buffers=buffers))
        except Exception as exc:
            raise Undecodable(epoch, exc) from None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _each_batch(parts: Pieces, move: Callable[[list], int]) -> None:
    """``move`` (a vectored send or receive: the bytes it moved) over the pieces,
    ``IOV_MAX`` a call; one cut short (a signal) resumes inside the piece it stopped in."""
    for views, nbytes in parts.batches(IOV_MAX):
        i = 0
        while i < len(views):
            try:
                done = move(views[i:] if i else views)
            except InterruptedError:
                continue
            if done == 0 and len(views[i]):
                raise ChannelClosed("connection closed")
            i = len(views) if not i and done == nbytes else _advance(views, i, done)


def _advance(views: list, i: int, done: int) -> int:
    """Past ``done`` bytes of ``views[i:]``: the index of the first piece not done, that
    piece cut to what is left of it."""
    while i < len(views) and done >= len(views[i]):
        done -= len(views[i])
        i += 1
    if done:
        views[i] = views[i][done:]
    return i


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
        answer = chan.read_exact(hashlib.sha256().digest_size)
    except (ChannelClosed, OSError):
        sock.close()
        raise ChannelClosed("no answer to the challenge") from None
    if not hmac.compare_digest(bytes(answer), _digest(authkey, challenge)):
        sock.close()
        raise ChannelClosed("authentication failed")
    sock.settimeout(None)
    chan.sent = 0  # the challenge is no frame
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
    challenge = chan.read_exact(_CHALLENGE)
    chan.send_frames([_digest(authkey, bytes(challenge))])
    sock.settimeout(None)
    chan.sent = 0  # the answer is no frame
    return chan

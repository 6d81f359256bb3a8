"""What a lab does: run the blocks the client sends, keep the values it stores, relay output.

The main thread serves the ``main`` channel; a daemon thread reads ``ctrl`` for aborts
(and exits the lab when the client is gone). An abort sets ``runtime.state.abort``, which
every library wait polls, and interrupts user code through a SIGINT handler that raises
``LabAbort`` only while user code runs, so the server's own bookkeeping is never cut.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import io
import linecache
import os
import pickle
import select
import signal
import sys
import threading
import time
import traceback
import types
from typing import Any, cast

from .. import settings
from .._frames import is_library, running_where
from ..errors import RemoteError
from ..protocol import messages as protocol
from ..protocol import tree
from ..protocol.calls import Outputs, fill
from ..protocol.channel import Channel, ChannelClosed, Undecodable, connect
from ..protocol.messages import (
    Abort,
    Block,
    Call,
    Done,
    Exec,
    Fanout,
    Get,
    Hello,
    Output,
    Reply,
    Set,
    Shutdown,
    Waiting,
    Where,
)
from ..protocol.values import summarize
from ..runtime import LabAbort, state
from . import comm, memory
from .imports import IMPORT_GRACE, drop_orphans, importing

__all__ = ["LabStream", "remote_error", "LabServer"]



class _LabBytes(io.RawIOBase):
    """``sys.stdout.buffer`` on a lab: bytes, decoded as UTF-8 (invalid bytes replaced)."""

    def __init__(self, text: "LabStream"):
        self._text = text

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        data = bytes(data)
        self._text.write(data.decode("utf-8", errors="replace"))
        return len(data)

    def flush(self) -> None:
        self._text.flush()


class LabStream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` on a lab: whole lines go to the client at once.

    A send is never cut by an abort: the abort is raised once the message is out, so the
    channel keeps its frame sync."""

    def __init__(self, chan: Channel, name: str):
        self._chan = chan
        self._name = name
        self._pending = ""
        self.buffer = _LabBytes(self)

    def _send(self, text: str) -> None:
        inside = state.in_user_code
        state.in_user_code = False  # no LabAbort from the signal handler mid-frame
        try:
            self._chan.send(Output(self._name, text))
        finally:
            state.in_user_code = inside
        if inside and state.abort.is_set() and not importing(sys._getframe()):  # noqa: SLF001 - documented CPython API
            raise LabAbort(state.abort_reason, state.waiting)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._pending += text
        cut = self._pending.rfind("\n")
        if cut >= 0:
            lines, self._pending = self._pending[: cut + 1], self._pending[cut + 1 :]
            self._send(lines)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            text, self._pending = self._pending, ""
            self._send(text)


_SPIN = 0.002  # seconds a lab polls without sleeping after a request (comm's _SPIN_SECONDS)
_GENERATED = ("<spmd_run>", "<distributed>", "<free>")  # the library's own one-line blocks


def _is_user_frame(filename: str) -> bool:
    if filename in _GENERATED:
        return False
    return not is_library(filename) and "mpi4py" not in filename


def remote_error(exc: BaseException) -> RemoteError:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_user_frame(f.filename)]
    text = ""
    if frames:
        text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    if isinstance(exc, SyntaxError) and exc.text:
        text += f'  File "{exc.filename}", line {exc.lineno}\n    {exc.text.strip()}\n'
    message = str(exc) if not isinstance(exc, KeyError) else repr(exc.args[0]) if exc.args else ""
    module = type(exc).__module__ or ""
    name = type(exc).__qualname__
    pickled: bytes | None = None
    if module.split(".")[0] == "mpi4py":
        name = f"{module}.{name}"  # sent as text: rebuilding it would load MPI at the client
    else:
        try:
            pickled = pickle.dumps(exc)
        except Exception:  # a class defined in the block, say: the text still goes
            pickled = None
    return RemoteError(name, message, text, pickled)


_compiled: dict[tuple, tuple] = {}


def _compile(block: Block):
    """Compile a block's source with the user's file name and line numbers (cached)."""
    key = (block.source, block.filename, block.firstlineno, block.echo)
    code = _compiled.get(key)
    if code is None:
        if len(_compiled) > 256:
            _compiled.clear()
        code = _compiled[key] = _compile_uncached(block)
    return code


def _main_ident() -> int:
    """The main thread's id (set: the main thread has started)."""
    ident = threading.main_thread().ident
    assert ident is not None
    return ident


def _compile_uncached(block: Block):
    source = block.source
    offset = block.firstlineno - 1
    if source[:1] in (" ", "\t"):
        source = "if True:\n" + source
        offset -= 1
    tree = ast.parse(source, block.filename, "exec")
    if source.startswith("if True:\n"):
        wrapper = cast(ast.If, tree.body[0])  # the "if True:" just added
        tree = ast.Module(body=wrapper.body, type_ignores=[])
    if offset:
        ast.increment_lineno(tree, offset)
    last = None
    final = tree.body[-1] if tree.body else None
    if block.echo and isinstance(final, ast.Expr):
        tree.body.pop()
        last = compile(ast.Expression(final.value), block.filename, "eval")
    return compile(tree, block.filename, "exec"), last


_registered: dict[tuple, tuple | None] = {}  # a block's source -> its linecache entry (None: the file is here)


def _register_source(block: Block) -> None:
    """Give tracebacks the block's lines when its file is not on this lab (a ``<stdin>``
    block, a client elsewhere). Cached: a block seen before costs no ``stat`` and no
    splitting, only a check that its entry is still the one in ``linecache``."""
    key = (block.source, block.filename, block.firstlineno)
    entry = _registered.get(key, ())
    if entry == ():
        entry = None
        if block.filename.startswith("<") or not os.path.exists(block.filename):
            source = block.source if block.source.endswith("\n") else block.source + "\n"
            lines = ["\n"] * (block.firstlineno - 1) + source.splitlines(True)
            entry = (len(source), None, lines, block.filename)
        if len(_registered) > 256:
            _registered.clear()
        _registered[key] = entry
    if entry is not None and linecache.cache.get(block.filename) is not entry:
        linecache.cache[block.filename] = entry


class LabServer:
    def __init__(self, address: str, authkey: bytes) -> None:
        self.rank, self.size = comm.init()
        comm.make_control()
        config = settings.load()
        self.tree = config.tree and self.size > 1
        self.running = False
        keeper = memory.keep_freed(config.keep_memory, lambda: self.running)
        self._answered = keeper.done if keeper else lambda: None
        self.finished_epoch = 0  # the last block this lab finished (Where's answer says so)
        self.main = connect(address, authkey)
        self.main.send(Hello("main", self.rank, self.size, os.getpid()))
        self.ctrl = connect(address, authkey)
        self.ctrl.send(Hello("ctrl", self.rank, self.size, os.getpid()))
        self.store: dict[int, Any] = {}
        self.workspaces: dict[str, dict] = {}
        self.modules: dict[str, types.ModuleType] = {}  # imported by earlier spmd blocks
        self.lock = threading.Lock()
        self.abort_epoch = 0
        self.abort_reason = ""
        self._deferred = (0, 0.0)  # (epoch, since): an abort waiting for an import to finish
        state.on_lab = True
        sys.stdout = LabStream(self.main, "stdout")
        sys.stderr = LabStream(self.main, "stderr")
        sys.stdin = io.StringIO()
        signal.signal(signal.SIGINT, self._on_sigint)
        threading.Thread(target=self._watch_ctrl, name="spmdlab-ctrl", daemon=True).start()

    # ---- aborts --------------------------------------------------------------------

    def _on_sigint(self, signum, frame) -> None:
        if not (state.in_user_code and state.abort.is_set()):
            return
        if importing(frame) and self._defer_abort():
            return
        raise LabAbort(state.abort_reason, state.waiting)

    def _defer_abort(self) -> bool:
        """Ask again in 50 ms instead of cutting an import short (lab/imports.py); False
        once the import has had ``IMPORT_GRACE`` seconds."""
        epoch, now = state.epoch, time.monotonic()
        if self._deferred[0] != epoch:
            self._deferred = (epoch, now)
        if now - self._deferred[1] > IMPORT_GRACE:
            return False
        threading.Timer(0.05, self._retrip, args=(epoch,)).start()
        return True

    def _retrip(self, epoch: int) -> None:
        with self.lock:
            if self.running and state.epoch == epoch and state.in_user_code and state.abort.is_set():
                signal.pthread_kill(_main_ident(), signal.SIGINT)

    def _watch_ctrl(self) -> None:
        try:
            while True:
                try:
                    msg = self.ctrl.recv()
                except Undecodable:
                    continue
                if isinstance(msg, Where):
                    self.ctrl.send(self._waiting(msg.epoch))
                    continue
                if not isinstance(msg, Abort):
                    continue
                with self.lock:
                    if msg.epoch > self.abort_epoch:
                        self.abort_epoch, self.abort_reason = msg.epoch, msg.reason
                    if self.running and state.epoch == msg.epoch:
                        self._trip(msg.reason)
        except (ChannelClosed, OSError, EOFError):
            os._exit(3)  # the client is gone: leave nothing behind

    def _waiting(self, epoch: int) -> Waiting:
        """Where the main thread waits in the block of ``epoch``: the library wait and the
        innermost user line (read from its stack; nothing is recorded on the normal path)."""
        lab = self.rank + 1
        seq, what = state.waits, state.waiting
        if not what or not self.running or state.epoch != epoch:
            return Waiting(epoch, lab, "", "", seq, self.finished_epoch == epoch)
        frame = sys._current_frames().get(_main_ident())  # noqa: SLF001 - documented CPython API
        at = ""
        while frame is not None:
            if _is_user_frame(frame.f_code.co_filename):
                at = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                break
            frame = frame.f_back
        return Waiting(epoch, lab, what, at, seq)

    def _trip(self, reason: str) -> None:
        state.abort_reason = reason
        state.abort.set()
        if state.in_user_code:
            # A real signal, not _thread.interrupt_main: it also wakes the main thread from
            # blocking calls such as time.sleep, which otherwise run to their end.
            signal.pthread_kill(_main_ident(), signal.SIGINT)

    # ---- serving -------------------------------------------------------------------

    def serve(self) -> None:
        if self.tree and self.rank > 0:
            self._follow()
            return
        while self._serve_one():
            pass

    def _serve_one(self) -> bool:
        """Read and answer one message of the ``main`` channel; False at shutdown."""
        try:
            msg = self.main.recv()
        except ChannelClosed:
            os._exit(3)
        except Undecodable as exc:
            self._send(self._undecodable(exc))
            return True
        if isinstance(msg, Shutdown):
            self._flush()
            return False
        if isinstance(msg, Fanout) and self.rank == 0:
            comm.control_send(msg.data)
            self._fanned(msg.data)
            return True
        reply = self._answer(msg)
        self._flush()
        self._send(reply)
        self._answered()
        return True

    def _undecodable(self, exc: Undecodable) -> Reply:
        error = exc.error
        return Reply("error", self.rank + 1, exc.epoch, RemoteError(
            "SpmdError", f"the lab could not unpickle what the client sent: {type(error).__name__}: {error}"))

    def _answer(self, msg) -> Reply:
        try:
            return self._handle(msg)
        except BaseException as exc:  # a bug of ours must not leave the client waiting
            return Reply("error", self.rank + 1, getattr(msg, "epoch", 0), remote_error(exc))

    def _fanned(self, data: bytes) -> None:
        """Answer a request lab 1 broadcast: the reply goes into lab 1's gather (or, one
        that does not fit a slot, to the client directly), and lab 1 sends the client
        one ``Gathered`` for all labs."""
        try:
            reply = self._answer(protocol.loads(data))
        except Undecodable as exc:
            reply = self._undecodable(exc)
        self._flush()
        slot, direct = tree.slot(reply)
        if direct:
            self._send(reply)
        gathered = comm.control_gather(tree.with_sent(slot, self.main.sent))  # its output first
        if gathered is not None:
            self.main.send(tree.combine(reply.epoch, gathered, self.size))
        self._answered()

    def _follow(self) -> None:
        """Serve as a lab other than lab 1 under the tree fan-out: wait for lab 1's next
        broadcast and for a request on this lab's own connection (a Composite read,
        shutdown, a request too large to broadcast), whichever comes first. Right after a
        request the lab polls without sleeping (the next one is likely to follow), then
        sleeps in ``select`` on its socket up to 1 ms, and up to 10 ms once idle for a
        second (so an idle pool costs almost no CPU)."""
        sock = self.main.sock
        while True:
            request, first = comm.control_post()
            since = time.perf_counter()
            while not comm.control_ready(request):
                idle = time.perf_counter() - since
                if idle < _SPIN:
                    os.sched_yield()
                    delay = 0.0
                else:
                    delay = min(1e-2 if idle > 1.0 else 1e-3, idle / 20)
                if select.select([sock], [], [], delay)[0]:
                    if not self._serve_one():
                        return
                    since = time.perf_counter()
            self._fanned(comm.control_rest(first))

    def _handle(self, msg) -> Reply:
        lab = self.rank + 1
        if isinstance(msg, Exec):
            return self._exec(msg.block)
        if isinstance(msg, Get):
            if msg.key not in self.store:
                return Reply("missing", lab, msg.epoch, msg.key)
            return Reply("value", lab, msg.epoch, self.store[msg.key])
        if isinstance(msg, Set):
            self.store[msg.key] = msg.value
            return Reply("ok", lab, msg.epoch, summarize(msg.value))
        if isinstance(msg, Call):
            value = self.store.get(msg.key) if msg.key is not None else None
            try:
                return Reply("value", lab, msg.epoch, msg.fn(value, *msg.args, **msg.kwargs))
            except Exception as exc:
                return Reply("error", lab, msg.epoch, remote_error(exc))
        raise TypeError(f"unknown request {type(msg).__name__}")

    def _send(self, reply: Reply) -> None:
        """Send a reply; a value that cannot be pickled becomes an error naming it."""
        # cloudpickle only for a value plain pickle would send by a reference the client
        # cannot resolve (a function or class a block defined): a Composite read of a
        # number or an array is plain pickle's, a few µs instead of cloudpickle's tens
        user = reply.kind == "value" and protocol.needs_cloudpickle(reply.result)
        try:
            frames = protocol.dumps(reply, user=user, epoch=reply.epoch)
        except Exception as exc:
            what = type(reply.result).__name__ if reply.kind == "value" else "reply"
            frames = protocol.dumps(Reply("error", reply.lab, reply.epoch, RemoteError(
                type(exc).__name__, f"lab {reply.lab}'s value of type {what} cannot be sent to the "
                                    f"client: {exc}")), epoch=reply.epoch)
        self.main.send_frames(frames)

    def _flush(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()

    def _namespace(self, block: Block) -> dict:
        if block.workspace is not None:
            ns = self.workspaces.setdefault(block.workspace, {"__name__": "__spmd__", "__builtins__": builtins})
        else:
            ns = {"__name__": "__spmd__", "__builtins__": builtins, **self.modules}
        for name, spec in block.inputs.items():
            kind, value = spec.kind, spec.value
            if kind == "val":
                ns[name] = value
            elif kind == "mod":
                ns[name] = importlib.import_module(value)
            elif kind == "ref":
                if value in self.store:
                    ns[name] = self.store[value]
                else:
                    ns.pop(name, None)
        return ns

    def _exec(self, block: Block):
        for key in block.frees:
            self.store.pop(key, None)
        if block.renew_comm:
            comm.renew()
        c = comm.enter_block(block.nlabs)
        if c is None:
            self.finished_epoch = block.epoch
            return Reply("done", self.rank + 1, block.epoch, Done())
        state.index, state.size = c.Get_rank() + 1, c.Get_size()
        with self.lock:
            state.epoch = block.epoch
            if state.abort.is_set():  # set only under self.lock (_trip): no lock of the Event's to take
                state.abort.clear()
            self.running = True
            if self.abort_epoch >= block.epoch:
                self._trip(self.abort_reason)
        try:
            reply = self._run(block)
        finally:
            with self.lock:
                self.running = False
                self.finished_epoch = block.epoch
            state.index, state.size = 1, 1
        if reply.kind != "done":
            drop_orphans()  # an import cut short by an error, or a hung import stopped
        return reply

    def _run(self, block: Block) -> Reply:
        lab = self.rank + 1
        try:
            ns = self._namespace(block)
            if block.call is None:
                _register_source(block)
                code, last = _compile(block)
        except BaseException as exc:
            return Reply("error", lab, block.epoch, remote_error(exc))
        echo = None
        state.in_user_code = True
        state.namespace = ns
        try:
            try:
                if block.call is not None:
                    fn, args, kwargs = block.call
                    result = fn(*fill(args, ns), **fill(kwargs, ns))
                    if isinstance(result, Outputs):
                        ns.update(result)
                    else:
                        ns["ans"] = result
                    last = None
                else:
                    exec(code, ns)
                if last is not None:
                    value = eval(last, ns)
                    if value is not None:
                        echo = repr(value)
            finally:
                state.in_user_code = False
                state.namespace = None
                if block.workspace is None:  # modules a block imports are there in the next
                    self.modules.update((k, v) for k, v in ns.items()
                                        if isinstance(v, types.ModuleType) and k not in block.inputs)
        except LabAbort as exc:
            return Reply("aborted", lab, block.epoch, self._where(exc))
        except BaseException as exc:
            if state.abort.is_set() and isinstance(exc, KeyboardInterrupt):
                return Reply("aborted", lab, block.epoch, self._where(exc))
            return Reply("error", lab, block.epoch, remote_error(exc))
        summaries = {}
        for name, key in block.outputs.items():
            if name in ns:
                self.store[key] = ns[name]
                summaries[name] = summarize(ns[name])
        return Reply("done", lab, block.epoch, Done(summaries, echo))

    @staticmethod
    def _where(exc: BaseException) -> str:
        if isinstance(exc, LabAbort) and exc.waiting:
            return f"waiting in {exc.waiting}"
        return running_where(traceback.extract_tb(exc.__traceback__), lambda name: not _is_user_frame(name))

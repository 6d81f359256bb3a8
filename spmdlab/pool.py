"""The client side of a lab pool: launch the lab job, talk to it, supervise it.

The client is not an MPI process: it starts ``mpiexec -n N python -m spmdlab.worker`` in
a session of its own and the labs connect back over authenticated sockets. Every wait
here relays lab output, turns Ctrl-C into an abort of the labs, and notices a lab that
died (its socket closes; its fork shim reports the exact exit status).
"""
from __future__ import annotations

import atexit
import itertools
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from typing import Any, Callable

from . import protocol, settings
from .errors import LabDiedError, PoolError, SpmdError, SpmdTimeoutError, labs_verb
from .protocol import Block, Channel, ChannelClosed

Sink = Callable[[int, str, str], None]
_ERROR_ABORT_DELAY = 0.1  # seconds the other labs get to report their own error
# Seconds labs get to stop after another lab's error before they are given up on (then
# finished, or the pool restarted, before the next command): longer than the interrupt
# grace, since they may be in a long numpy call, but a lab blocked for good (say in a
# blocking MPI call the failed lab never joins) must not hang the session.
_ERROR_GIVE_UP = 10.0


def print_sink(lab: int, stream: str, text: str) -> None:
    """Write lab output to the client's stdout/stderr as ``Lab N: <line>``."""
    out = sys.stderr if stream == "stderr" else sys.stdout
    out.write("".join(f"Lab {lab}: {line}\n" for line in text.splitlines() or [""]))
    out.flush()


def _describe_status(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}, exit status {code}"
    return f"exit status {code}"


def _warn(message: str) -> None:
    """Warn, pointing at the first frame outside spmdlab (the user's line)."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 2  # stacklevel 2 is our caller, frame 1 here
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, RuntimeWarning, stacklevel=level)


class _Interrupts:
    """Within ``with``, Ctrl-C sets a flag instead of raising inside our socket reads."""

    def __init__(self) -> None:
        self.pending = False
        self._previous: Any = None

    def _handler(self, signum, frame) -> None:
        self.pending = True

    def __enter__(self) -> "_Interrupts":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


class Pool:
    """A pool of ``n`` labs. ``with parpool(4) as pool: ...`` or ``pool.close()``.

    >>> pool = Pool(2)            # doctest: +SKIP
    >>> pool.numlabs
    2
    """

    def __init__(self, n: int | None = None, **options: Any):
        self.settings = settings.load(num_labs=n, **options)
        self.numlabs = self.settings.pool_size()
        self.generation = 0
        self.state = "closed"
        self._keys = itertools.count(1)
        self._epochs = itertools.count(1)
        self._frees: list[int] = []
        self._renew_comm = False
        self._draining: tuple | None = None
        self._start()
        _live_pools.add(self)

    # ---- life cycle ----------------------------------------------------------------

    @property
    def NumWorkers(self) -> int:  # MATLAB's name
        return self.numlabs

    def _listen(self) -> tuple[socket.socket, str]:
        if self.settings.host:
            sock = socket.create_server((self.settings.host, 0))
            host, port = sock.getsockname()[:2]
            return sock, f"{host}:{port}"
        self._tmpdir = tempfile.mkdtemp(prefix="spmdlab-")
        path = os.path.join(self._tmpdir, "pool.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        sock.listen(2 * self.numlabs + 8)
        return sock, path

    def _start(self) -> None:
        self._tmpdir = None
        started = time.monotonic()
        authkey = os.urandom(32)
        self._authkey = authkey
        self._listener, address = self._listen()
        env = self.settings.lab_environment()
        env["SPMDLAB_ADDRESS"] = address
        env["SPMDLAB_AUTHKEY"] = authkey.hex()
        paths = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.getcwd()]
        if sys.path and sys.path[0]:
            paths.insert(0, os.path.abspath(sys.path[0]))
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = os.pathsep.join(paths)
        cmd = [*self.settings.launcher(), "-n", str(self.numlabs), *self.settings.mpiexec_args,
               sys.executable, "-m", "spmdlab.worker"]
        try:
            self._proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            self._close_listener()
            raise PoolError(f"could not start the labs with {cmd[0]!r}: {exc}") from None
        self.main: dict[int, Channel] = {}
        self.ctrl: dict[int, Channel] = {}
        self.pids: dict[int, int] = {}
        self._exits: dict[int, int] = {}
        try:
            self._accept_labs(started)
        except BaseException:
            self._teardown()
            raise
        os.set_blocking(self._proc.stdout.fileno(), False)
        os.set_blocking(self._proc.stderr.fileno(), False)
        self.generation += 1
        self.state = "idle"
        self.startup_seconds = time.monotonic() - started

    def _accept_labs(self, started: float) -> None:
        deadline = started + self.settings.start_timeout
        self._listener.settimeout(0.1)
        while len(self.main) < self.numlabs or len(self.ctrl) < self.numlabs:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace").strip()
                raise PoolError(f"the lab job exited with status {self._proc.returncode} before all "
                                f"{self.numlabs} labs connected" + (f":\n{err}" if err else ""))
            if time.monotonic() > deadline:
                raise PoolError(f"only {len(self.main)} of {self.numlabs} labs connected within "
                                f"{self.settings.start_timeout:g} s (SPMDLAB_START_TIMEOUT)")
            try:
                sock, _ = self._listener.accept()
            except socket.timeout:
                continue
            try:
                chan = protocol.server_handshake(sock, self._authkey)
                hello = chan.recv()
            except (ChannelClosed, OSError):
                continue
            if hello[0] == "exit":
                self._exits[hello[1] + 1] = hello[2]
                continue
            _, role, rank, size, pid = hello
            (self.main if role == "main" else self.ctrl)[rank + 1] = chan
            self.pids[rank + 1] = pid
        self._listener.settimeout(None)

    def _close_listener(self) -> None:
        try:
            self._listener.close()
        except OSError:
            pass
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def _teardown(self, graceful: bool = False) -> None:
        """Stop the lab job; leaves no process behind."""
        if graceful and self.state == "idle":
            for chan in self.main.values():
                try:
                    chan.send(("shutdown",))
                except ChannelClosed:
                    pass
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._close_listener()
        for chan in [*self.main.values(), *self.ctrl.values()]:
            chan.close()
        if self._proc.poll() is None:
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for pid in self.pids.values():  # local labs that outlived mpiexec
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            self._proc.wait()
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream:
                stream.close()

    def close(self) -> None:
        """Shut the labs down. Values stored on them are gone."""
        if self.state == "closed":
            return
        self._teardown(graceful=True)
        self.state = "closed"
        _live_pools.discard(self)
        if _current.get("pool") is self:
            _current.pop("pool")

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<spmdlab.Pool numlabs={self.numlabs} state={self.state}>"

    def ensure_running(self) -> None:
        """Restart a pool whose labs died, with a warning; refuse a closed pool."""
        if self.state == "closed":
            raise PoolError("this pool is closed; start a new one with parpool()")
        if self.state == "dead":
            _warn("the previous lab pool died; starting a new one. Values stored on the "
                  "labs (Composites, distributed arrays) were lost.")
            self._start()
            self._renew_comm = False
        if self._draining:
            self._drain()

    # ---- keys for values stored on the labs ------------------------------------------

    def new_key(self) -> int:
        return next(self._keys)

    def free_later(self, key: int, generation: int) -> None:
        """Forget a stored value; sent with the next command (never from a finaliser)."""
        if generation == self.generation and self.state != "closed":
            self._frees.append(key)

    # ---- commands --------------------------------------------------------------------

    def run(self, block: Block, sink: Sink | None = None, timeout: float | None = None) -> dict[int, tuple]:
        """Run ``block`` on labs 1..``block.nlabs`` (0: all); return every lab's reply.

        The block goes to every lab: labs outside ``spmd(n)`` reply ``("done", epoch,
        None)`` at once, but must see each block so communicator renewals stay collective.
        Raises SpmdError (a lab raised), SpmdTimeoutError, LabDiedError, KeyboardInterrupt.
        """
        self.ensure_running()
        labs = list(range(1, self.numlabs + 1))
        block.epoch = next(self._epochs)
        block.renew_comm, self._renew_comm = self._renew_comm, False
        block.frees, self._frees = self._frees, []
        user = any(kind == "val" and protocol.needs_cloudpickle(value) for kind, value in block.inputs.values())
        frames = protocol.dumps(("exec", block), user=user)
        self.state = "running"
        try:
            for lab in labs:
                self.main[lab].send_frames(frames)
        except ChannelClosed:
            self._lab_died()
        replies = self._collect(set(labs), block.epoch, sink or print_sink, timeout)
        self.state = "idle"
        errors = {lab: r[2] for lab, r in replies.items() if r[0] == "error"}
        aborted = {lab: r[2] for lab, r in replies.items() if r[0] == "aborted"}
        if errors or aborted:
            self._renew_comm = True
        if errors:
            raise SpmdError.from_lab_errors(errors, {lab: r for lab, r in replies.items() if r[0] == "done"},
                                            stopped=sorted(aborted))
        if aborted and timeout is not None:
            where = "\n".join(f"  lab {lab}: {aborted[lab]}" for lab in sorted(aborted))
            raise SpmdTimeoutError(f"the spmd block timed out after {timeout:g} s; "
                                   f"{labs_verb(sorted(aborted), 'had', 'had')} not finished:\n{where}", aborted)
        return replies

    def request(self, lab: int, message: tuple) -> tuple:
        """Send one non-block command to ``lab`` and return its reply (see ``request_many``)."""
        return self.request_many({lab: message})[lab]

    def request_many(self, messages: dict[int, tuple]) -> dict[int, tuple]:
        """Send each lab its own non-block command at once; return the replies by lab.

        Commands: ``("get", key)`` -> ``("value", v)`` or ``("missing", key)``;
        ``("set", key, value)`` -> ``("ok", summary)``; ``("call", fn, key, args, kwargs)``
        runs ``fn(stored_value_or_None, *args, **kwargs)`` on the lab outside any block
        (no lab messaging) -> ``("value", result)`` or ``("error", 0, RemoteError)``.
        """
        self.ensure_running()
        self.state = "running"
        try:
            for lab, message in messages.items():
                self.main[lab].send(message, user=True)
        except ChannelClosed:
            self._lab_died()
        replies = self._collect(set(messages), 0, print_sink, None)
        self.state = "idle"
        errors = {lab: r[2] for lab, r in replies.items() if r[0] == "error"}
        if errors:
            raise SpmdError.from_lab_errors(errors)
        return replies

    def _relay_launcher_output(self, stream) -> bool:
        """Pass on what the lab job printed outside Python (C libraries); False at EOF."""
        try:
            data = stream.read()
        except (OSError, ValueError):
            return False
        if data is None:
            return True
        if data:
            (sys.stderr if stream is self._proc.stderr else sys.stdout).write(data.decode(errors="replace"))
        return bool(data)

    def _collect(self, labs: set[int], epoch: int, sink: Sink, timeout: float | None,
                 give_up: float | None = None) -> dict[int, tuple]:
        """Wait for the replies of ``labs``, relaying their output.

        Ctrl-C aborts the labs and raises KeyboardInterrupt once they stopped, or after
        ``interrupt_grace`` seconds (labs stuck in compiled code are then finished, or
        the pool restarted, before the next command). ``timeout`` aborts the labs still
        running and, the same grace later, gives up on those that did not stop (they get
        an ``("aborted", epoch, "busy ...")`` reply and are drained like after Ctrl-C).
        ``give_up`` returns the replies received by then. After a lab's error the others
        are aborted, and given up on in the same way if they have not stopped
        ``max(interrupt_grace, _ERROR_GIVE_UP)`` seconds later (or by the timeout's end).
        """
        replies: dict[int, tuple] = {}
        pending = {self.main[lab]: lab for lab in labs}
        deadline = time.monotonic() + timeout if timeout is not None else None
        grace = self.settings.interrupt_grace
        aborted_for: str | None = None
        interrupted_at: float | None = None
        error_at: float | None = None
        sel = selectors.DefaultSelector()
        for chan in pending:
            sel.register(chan.sock, selectors.EVENT_READ, chan)
        for stream in (self._proc.stdout, self._proc.stderr):
            sel.register(stream, selectors.EVENT_READ, stream)
        with _Interrupts() as ints, sel:
            while pending:
                now = time.monotonic()
                if ints.pending and interrupted_at is None:
                    interrupted_at = now
                    aborted_for = "interrupt"
                    self._abort(set(pending.values()), epoch, "interrupt")
                if interrupted_at is not None and now - interrupted_at > grace:
                    self._draining = (set(pending.values()), epoch, sink, "after Ctrl-C")
                    break
                if give_up is not None and now > give_up:
                    break
                give_up_after_error = error_at + max(grace, _ERROR_GIVE_UP) if error_at is not None else None
                if give_up_after_error is not None and deadline is not None:
                    give_up_after_error = min(give_up_after_error, deadline + grace)  # timeout= bounds it all
                stuck = (aborted_for == "timeout" and now > deadline + grace) or \
                    (aborted_for == "error" and now > give_up_after_error)
                if stuck:
                    self._draining = (set(pending.values()), epoch, sink, f"after the {aborted_for}")
                    for lab in pending.values():
                        replies[lab] = ("aborted", epoch, "busy and not stopping (in compiled code?)")
                    break
                if deadline is not None and now > deadline and aborted_for is None:
                    aborted_for = "timeout"
                    self._abort(set(pending.values()), epoch, "timeout")
                if error_at is not None and now >= error_at and aborted_for is None:
                    aborted_for = "error"
                    self._abort(set(pending.values()), epoch, "error")
                wait = 0.1 if error_at is None or aborted_for else max(0.0, min(0.1, error_at - now))
                for key, _ in sel.select(wait):
                    if not isinstance(key.data, Channel):
                        if not self._relay_launcher_output(key.data):
                            sel.unregister(key.fileobj)
                        continue
                    chan = key.data
                    lab = pending[chan]
                    try:
                        msg = chan.recv()
                    except ChannelClosed:
                        self._lab_died()
                    if msg[0] == "out":
                        sink(lab, msg[1], msg[2])
                        continue
                    replies[lab] = msg
                    del pending[chan]
                    sel.unregister(chan.sock)
                    if msg[0] == "error" and error_at is None:
                        # Labs raising the same error a moment later are reported too
                        # (collapsed as "labs 1-4"), rather than aborted.
                        error_at = now + _ERROR_ABORT_DELAY
        if interrupted_at is not None:
            self.state = "idle"
            self._renew_comm = True
            raise KeyboardInterrupt
        return replies

    def _abort(self, labs: set[int], epoch: int, reason: str) -> None:
        for lab in labs:
            try:
                self.ctrl[lab].send(("abort", epoch, reason))
            except ChannelClosed:
                pass

    def _drain(self) -> None:
        """Finish labs still stopping after Ctrl-C; restart the pool if they do not."""
        labs, epoch, sink, when = self._draining
        self._draining = None
        replies = self._collect(labs, epoch, sink, None, give_up=time.monotonic() + self.settings.interrupt_grace)
        if len(replies) < len(labs):
            _warn(f"{labs_verb(sorted(labs - set(replies)), 'did', 'did')} not stop {when} "
                  "(busy in compiled code); restarting the pool.")
            self._teardown()
            self.state = "dead"
            self._start()

    def _lab_died(self) -> None:
        """A lab's socket closed: collect exit reports, tear down, raise LabDiedError."""
        self.state = "dead"
        deadline = time.monotonic() + 1.5
        self._listener.settimeout(0.05)
        while time.monotonic() < deadline:
            try:
                sock, _ = self._listener.accept()
                chan = protocol.server_handshake(sock, self._authkey, timeout=1.0)
                hello = chan.recv()
                chan.close()
                if hello[0] == "exit":
                    self._exits[hello[1] + 1] = hello[2]
            except (socket.timeout, ChannelClosed, OSError):
                if self._exits and self._proc.poll() is not None:
                    break
        self._teardown()
        statuses: dict[int, int | None] = dict(self._exits)
        if statuses:
            text = "; ".join(f"lab {lab} died ({_describe_status(code)})" for lab, code in sorted(statuses.items()))
        else:
            text = f"the lab job ended ({_describe_status(self._proc.returncode)})"
        raise LabDiedError(
            f"{text[0].upper()}{text[1:]}. The pool is gone and values stored on the labs were lost; "
            "the next spmd block starts a fresh pool.", statuses) from None


_live_pools: "weakref.WeakSet[Pool]" = weakref.WeakSet()
_current: dict[str, Pool] = {}


def parpool(n: int | None = None, *, replace: bool = False, **options: Any) -> Pool:
    """Start a pool of ``n`` labs (default ``SPMDLAB_NUM_LABS``, else the CPU count) and
    make it the current pool. Usable as ``with parpool(4) as pool:``.

    As in MATLAB, a second ``parpool()`` while the current pool is open raises
    PoolError; ``replace=True`` closes the current pool first."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"a pool needs a positive whole number of labs, got {n!r}")
    current = _current.get("pool")
    if current is not None and current.state != "closed":
        if not replace:
            raise PoolError(f"a parallel pool with {current.numlabs} lab{'s' if current.numlabs != 1 else ''} "
                            "is already open; close it first (gcp().close(), or delete(gcp()) in "
                            "MATLAB), or call parpool(..., replace=True)")
        current.close()
    pool = Pool(n, **options)
    _current["pool"] = pool
    return pool


def _start_implicitly() -> Pool:
    """The default pool, started because code needed one; says so on stderr (one line)."""
    quiet = settings.quiet()
    if not quiet:
        n = settings.load().pool_size()
        sys.stderr.write(f"Starting parallel pool with {n} lab{'s' if n != 1 else ''} ...")
        sys.stderr.flush()
    try:
        pool = parpool()
    except BaseException:
        if not quiet:
            sys.stderr.write(" failed\n")
            sys.stderr.flush()
        raise
    if not quiet:
        sys.stderr.write(f" connected in {pool.startup_seconds:.1f} s\n")
        sys.stderr.flush()
    return pool


def gcp(create: bool | str = True) -> Pool | None:
    """The current pool. With ``create`` (default) a default pool is started when there is
    none (one line on stderr says so); ``gcp('nocreate')`` or ``gcp(False)`` returns None
    instead, as MATLAB's ``gcp('nocreate')``."""
    if isinstance(create, str):
        if create.lower() != "nocreate":
            raise ValueError(f"gcp takes 'nocreate' or nothing, got {create!r}")
        create = False
    pool = _current.get("pool")
    if pool is None or pool.state == "closed":
        return _start_implicitly() if create else None
    return pool


@atexit.register
def _close_all() -> None:
    for pool in list(_live_pools):
        try:
            pool.close()
        except Exception:
            pass

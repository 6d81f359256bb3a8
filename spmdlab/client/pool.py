"""The client side of a lab pool: launch the lab job, talk to it, supervise it.

The client is not an MPI process: it starts ``mpiexec -n N python -m spmdlab.lab`` in
a session of its own and the labs connect back over authenticated sockets (``launch``).
Every request carries an epoch and every reply the epoch of its request: a reply of
another request (one an interrupted wait left unread) is discarded and counted in
``stale_replies``, never taken for the current one. A lab that owes a reply is drained
(or the pool restarted, with a warning) before it gets the next request. Every wait
relays lab output, turns Ctrl-C into an abort of the labs, and notices a lab that died
(its socket closes; its fork shim reports the exact exit status).
"""
from __future__ import annotations

import _signal
import atexit
import functools
import inspect
import itertools
import os
import selectors
import signal
import subprocess
import threading
import time
import warnings
import weakref
from typing import IO, Any, Callable

from .. import settings
from .._frames import first_outside
from ..errors import (
    LabDiedError,
    PoolError,
    RemoteError,
    SpmdError,
    SpmdTimeoutError,
    labs_verb,
    where_lines,
)
from ..protocol import inplace, tree
from ..protocol import messages as protocol
from ..protocol.channel import Channel, ChannelClosed, Undecodable
from ..protocol.messages import (
    Abort,
    Block,
    Call,
    Exec,
    Exit,
    Fanout,
    Gathered,
    Get,
    Output,
    Reply,
    Set,
    Shutdown,
)
from ..runtime import refuse_on_lab
from . import launch, stall
from .collect import ReplyWait
from .console import announce_start, print_sink
from .stall import StallWatch, ask_where, read_waiting

__all__ = ["Sink", "print_sink", "Pool", "parpool", "gcp"]

Sink = Callable[[int, str, str], None]


def _warn(message: str) -> None:
    """Warn, pointing at the first frame outside spmdlab (the user's line)."""
    here = inspect.currentframe()
    _, skipped = first_outside(here.f_back if here is not None else None)
    warnings.warn(message, RuntimeWarning, stacklevel=2 + skipped)  # stacklevel 2 is our caller, frame 1 here


class _Interrupts:
    """Within ``with``, Ctrl-C sets a flag instead of raising inside our socket reads and
    writes (nested uses share the outermost handler)."""

    def __init__(self) -> None:
        self.pending = False
        self._previous: Any = None

    def _handler(self, signum, frame) -> None:
        self.pending = True

    def __enter__(self) -> "_Interrupts":
        if threading.current_thread() is threading.main_thread():
            self._previous = _signal.signal(signal.SIGINT, self._handler)  # without signal's enums: 9 -> 0.6 µs
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            _signal.signal(signal.SIGINT, self._previous)


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
        self.stale_replies = 0  # replies of other requests, discarded
        self._keys = itertools.count(1)
        self._epochs = itertools.count(1)
        self._frees: list[int] = []
        self._renew_comm = False
        self._owing: dict[int, int] = {}  # lab -> epoch of the request it has not answered
        self._fanned = 0  # the epoch of the last request sent through the tree
        self._in_gather: set[int] = set()  # labs a wait that ended early found done
        self._owing_why = ""
        self._places: dict[int, Callable[[int], inplace.Pieces | None]] = {}  # request_many's
        self._start()
        _live_pools.add(self)

    # ---- life cycle ----------------------------------------------------------------

    @property
    def NumWorkers(self) -> int:  # MATLAB's name
        return self.numlabs

    def _start(self) -> None:
        started = time.monotonic()
        authkey = os.urandom(32)
        self._authkey = authkey
        listener, address, folder = launch.listen(self.settings, self.numlabs)
        self._address = address
        try:
            proc = launch.spawn(self.settings, self.numlabs, address, authkey, folder)
        except BaseException:
            launch.close_listener(listener, folder)
            raise
        self._job = job = launch.LabJob(proc)
        self._proc = proc
        self.main, self.ctrl, self.watch, self.pids = job.main, job.ctrl, job.watch, job.pids
        self._exits: dict[int, int] = {}
        self._owing = {}
        try:
            launch.accept_labs(job, listener, authkey, self.numlabs, self.settings, started)
        except BaseException:
            launch.close_listener(listener, folder)
            self._teardown()
            raise
        launch.close_listener(listener, folder)  # nothing of the pool stays in TMPDIR
        # One selector for the pool's life: a wait costs no system call per lab (a lab's
        # connection is read only when it has something to say)
        self._sel: selectors.BaseSelector | None = selectors.DefaultSelector()
        self._lab_of = {chan: lab for lab, chan in self.main.items()}
        for chan in self.main.values():
            self._sel.register(chan.sock, selectors.EVENT_READ, chan)
        for stream in self._outputs():
            os.set_blocking(stream.fileno(), False)
            self._sel.register(stream, selectors.EVENT_READ, stream)
        self.generation += 1
        self.state = "idle"
        self.startup_seconds = time.monotonic() - started

    def _outputs(self) -> tuple[IO[bytes], IO[bytes]]:
        """The lab job's stdout and stderr pipes (what it prints outside Python)."""
        out, err = self._proc.stdout, self._proc.stderr
        assert out is not None and err is not None  # launch.spawn pipes both
        return out, err

    def _teardown(self, graceful: bool = False) -> None:
        """Stop the lab job; leaves no process behind."""
        proc = self._proc
        if graceful and self.state == "idle" and not self._owing:
            for chan in self.main.values():
                try:
                    chan.send(Shutdown())
                except ChannelClosed:
                    pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for chan in [*self.main.values(), *self.ctrl.values(), *self.watch.values()]:
            chan.close()  # a shim whose watch closes kills its lab
        if proc.poll() is None:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for pid in [*self.pids.values(), *self._job.shim_pids.values()]:  # local labs that outlived mpiexec
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
        sel = getattr(self, "_sel", None)
        if sel is not None:
            sel.close()
            self._sel = None
        self._owing = {}

    def close(self) -> None:
        """Shut the labs down. Values stored on them are gone."""
        if self.state == "closed":
            return
        self._teardown(graceful=True)
        self.state = "closed"
        _live_pools.discard(self)
        if _current.get("pool") is self:
            _current.pop("pool")

    delete = close  # MATLAB's delete(pool)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<spmdlab.Pool numlabs={self.numlabs} state={self.state}>"

    def _broken(self) -> bool:
        return any(chan.broken for chan in self.main.values())

    def ensure_running(self, ints: _Interrupts | None = None) -> None:
        """Restart a pool whose labs died, with a warning; refuse a closed pool; finish
        (or give up on) labs that still owe a reply."""
        if self.state == "closed":
            raise PoolError("this pool is closed; start a new one with parpool()")
        if self.state != "dead" and self._broken():
            self._restart("a message to the labs was cut short")
        if self.state != "dead" and self._owing:
            if ints is not None:
                self._drain(ints)
            else:
                with _Interrupts() as own:
                    self._drain(own)
        if self.state == "dead":
            _warn("the previous lab pool died; starting a new one. Values stored on the "
                  "labs (Composites, distributed arrays) were lost.")
            self._start()
            self._renew_comm = False

    def _restart(self, why: str) -> None:
        _warn(f"{why}; restarting the pool.")
        self._teardown()
        self.state = "dead"
        self._start()
        self._renew_comm = False

    # ---- keys for values stored on the labs ------------------------------------------

    def new_key(self) -> int:
        return next(self._keys)

    def free_later(self, key: int, generation: int) -> None:
        """Forget a stored value; sent with the next block (never from a finaliser)."""
        if generation == self.generation and self.state != "closed":
            self._frees.append(key)

    def flush_frees(self) -> None:
        """Send the pending frees now (an empty block)."""
        if self._frees:
            self.run(Block(filename="<free>"))

    # ---- commands --------------------------------------------------------------------

    def run(self, block: Block, sink: Sink | None = None, timeout: float | None = None) -> dict[int, Reply]:
        """Run ``block`` on labs 1..``block.nlabs`` (0: all); return every lab's reply.

        The block goes to every lab: labs outside ``spmd(n)`` reply ``done`` at once, but
        must see each block so communicator renewals stay collective. Raises SpmdError (a
        lab raised), SpmdTimeoutError, LabDiedError, KeyboardInterrupt.
        """
        timeout = settings.check_timeout(timeout)
        user = any(i.kind == "val" and protocol.needs_cloudpickle(i.value) for i in block.inputs.values())
        user = user or block.call is not None

        def message(epoch: int) -> list:
            stamped = block.stamped(epoch, self._renew_comm, tuple(self._frees))
            try:
                frames = protocol.dumps(Exec(stamped), user, epoch)
            except Exception as exc:
                raise _unsendable(block, exc) from None
            self._frees, self._renew_comm = [], False
            return frames

        labs = list(range(1, self.numlabs + 1))
        replies = self._exchange(dict.fromkeys(labs), message, user, sink or print_sink, timeout,
                                 set(labs[:block.nlabs] if 0 < block.nlabs < self.numlabs else labs),
                                 fan=self.settings.tree and self.numlabs > 1)
        errors = {lab: r.result for lab, r in replies.items() if r.kind == "error"}
        aborted = {lab: r.result for lab, r in replies.items() if r.kind == "aborted"}
        if errors or aborted:
            self._renew_comm = True
        if errors:
            raise SpmdError.from_lab_errors(errors, {lab: r for lab, r in replies.items() if r.kind == "done"},
                                            aborted)
        if aborted and timeout is not None:
            raise SpmdTimeoutError(f"the spmd block timed out after {timeout:g} s; "
                                   f"{labs_verb(sorted(aborted), 'had', 'had')} not finished:\n"
                                   f"{where_lines(aborted)}", aborted)
        return replies

    def request(self, lab: int, message: Get | Set | Call) -> Reply:
        """Send one non-block request to ``lab`` and return its reply (see ``request_many``)."""
        return self.request_many({lab: message})[lab]

    def request_many(self, messages: dict[int, Get | Set | Call],
                     places: dict[int, Callable[[int], inplace.Pieces | None]] | None = None) -> dict[int, Reply]:
        """Send each lab its own non-block request at once; return the replies by lab.

        Requests (``protocol``; the pool fills in their epoch): ``Get`` -> ``value`` or
        ``missing``; ``Set`` -> ``ok`` with the value's summary; ``Call`` -> ``value``.
        ``places[lab](size)``: where lab's reply's one array buffer of ``size`` bytes goes
        (pieces, see ``inplace``), its result then ``inplace.PLACED``; or None.
        Raises SpmdError when a lab could not do it.
        """
        user = any(protocol.needs_user_pickle(message) for message in messages.values())
        self._places = places or {}
        try:
            replies = self._exchange({lab: functools.partial(protocol.stamp, message)
                                      for lab, message in messages.items()}, None, user, print_sink, None)
        finally:
            self._places = {}
        errors = {lab: r.result for lab, r in replies.items() if r.kind == "error"}
        if errors:
            raise SpmdError.from_lab_errors(errors)
        return replies

    def _exchange(self, per_lab: dict[int, Any], common: Callable[[int], list] | None, user: bool,
                  sink: Sink, timeout: float | None, members: set[int] | None = None,
                  fan: bool = False) -> dict[int, Reply]:
        """Send each lab its request (``per_lab[lab](epoch=epoch)``, or the frames
        ``common(epoch)``) under one epoch and collect the replies; Ctrl-C meanwhile never
        cuts a frame (it is acted on once the requests are out). ``fan``: the common
        request goes to lab 1 alone, which broadcasts it (``Fanout``), unless it is large."""
        with _Interrupts() as ints:
            self.ensure_running(ints)
            epoch = next(self._epochs)
            self.state = "running"
            try:
                frames = common(epoch) if common is not None else None
                labs = set(per_lab)
                if fan and frames is not None and sum(len(f) for f in frames) <= tree.MAX_FANOUT:
                    frames = protocol.dumps(Fanout(epoch, b"".join(frames)), False, epoch)
                    self._owing.update(dict.fromkeys(per_lab, epoch))
                    per_lab, self._fanned = {1: None}, epoch
                for lab, make in per_lab.items():
                    try:
                        data = frames if frames is not None else protocol.dumps(make(epoch=epoch), user, epoch)
                    except Exception as exc:
                        raise TypeError(f"the value cannot be sent to lab {lab}: {exc}") from None
                    self._owing[lab] = epoch
                    try:
                        self.main[lab].send_frames(data)
                    except ChannelClosed:
                        if self.main[lab].broken:
                            raise PoolError("a message to the labs was cut short; the pool restarts on next "
                                            "use") from None
                        self._lab_died()
                    del data
                return self._collect(labs, epoch, sink, timeout, ints, members=members)
            finally:
                if self.state == "running":
                    self.state = "idle"

    def _receive(self, chan: Channel, lab: int, epoch: int) -> Any:
        """The next message of ``lab``: an Output, a Reply (``epoch``'s), or None for a
        reply of another request (discarded)."""
        where = self._places.get(lab)
        place = None if where is None else lambda e, nbuf, size: (
            None if e != epoch or (views := where(size)) is None else (views, inplace.PLACED))
        try:
            msg = chan.recv(place)
        except ChannelClosed:
            self._lab_died()
        except Undecodable as exc:
            msg = Reply("error", lab, exc.epoch,
                        RemoteError("SpmdError", f"lab {lab}'s reply could not be unpickled at the client: "
                                                 f"{exc}"))
        if isinstance(msg, Reply):
            if msg.epoch != epoch:
                self.stale_replies += 1
                if self._owing.get(lab) == msg.epoch:
                    del self._owing[lab]
                return None
            self._owing.pop(lab, None)
        elif isinstance(msg, Gathered):  # lab 1's answer for every lab (the tree fan-out)
            for k, code in enumerate(msg.codes, 1):
                if code != tree.DIRECT and self._owing.get(k) == msg.epoch:
                    del self._owing[k]
            return msg if msg.epoch == epoch else None  # lab 1's, late: not a lab's reply
        return msg

    def _collect(self, labs: set[int], epoch: int, sink: Sink, timeout: float | None, ints: _Interrupts,
                 give_up: float | None = None, members: set[int] | None = None) -> dict[int, Reply]:
        """Wait for the replies of ``labs`` to the request of ``epoch``, relaying output;
        when the wait ends early and which labs it aborts is ``collect.ReplyWait``'s
        (Ctrl-C, ``timeout``, another lab's error, a stall of the block's ``members``,
        ``give_up``). Ctrl-C raises KeyboardInterrupt (saying where each lab stopped)
        once the labs stopped or the grace ran out; a stall raises SpmdError."""
        sel = self._sel
        assert sel is not None  # a running pool's
        ask = lambda busy: ask_where(self.ctrl, busy, epoch, sel)
        watch = members and stall.ENABLED and StallWatch(members, ask, time.monotonic()) or None
        wait = ReplyWait(labs, epoch, time.monotonic(), self.settings.interrupt_grace, timeout, give_up, watch)
        while wait.waiting:
            now = time.monotonic()
            for reason in wait.tick(now, ints.pending):
                self._abort(set(wait.waiting), epoch, reason)
            if wait.over:
                break
            for key, _ in sel.select(wait.seconds(now)):
                self._on_ready(key.data, sel, wait, sink, now)
        if wait.held:
            wait.release_held(time.monotonic())
        self._in_gather = set()
        if wait.over and wait.waiting and epoch == self._fanned:
            self._in_gather = stall.finished_labs(self.ctrl, wait.waiting, epoch)  # in lab 1's gather, not stuck
            for lab in self._in_gather:
                wait.waiting.discard(lab)
                if wait.replies.get(lab, Reply("done", lab, epoch)).kind == "aborted":
                    del wait.replies[lab]
        if wait.owing_why:
            self._owing_why = wait.owing_why
        return self._ending(wait)

    def _on_ready(self, source: Any, sel: selectors.BaseSelector, wait: ReplyWait, sink: Sink, now: float) -> None:
        """Read what ``source`` (a lab's channel, a control connection, or the lab job's
        output stream) has for the wait."""
        if isinstance(source, tuple):  # a control connection: a Where's answer
            read_waiting(source[1], wait.epoch, sel, wait.watch)
        elif not isinstance(source, Channel):
            if not launch.relay_output(source, self._proc.stderr):
                sel.unregister(source)
        else:
            lab = self._lab_of[source]
            msg = self._receive(source, lab, wait.epoch)
            if isinstance(msg, Output):
                sink(lab, msg.stream, msg.text)
            elif isinstance(msg, Reply):
                if lab in wait.waiting:
                    wait.received(lab, msg, now)
            elif isinstance(msg, Gathered):
                wait.gathered(tree.replies(msg)[0], msg.sent, {k: c.received for k, c in self.main.items()}, now)
            if wait.held:
                wait.frame_in(lab, source.received, now)

    def _ending(self, wait: ReplyWait) -> dict[int, Reply]:
        """The replies of a wait that ended, or the error it ended with."""
        if wait.interrupted_at is not None:
            self.state = "idle"
            self._renew_comm = True
            where = wait.stopped_where()
            raise KeyboardInterrupt(f"the labs were interrupted:\n{where_lines(where)}" if where else "")
        watch = wait.watch
        if watch and watch.verdict:
            self._renew_comm = True
            raise SpmdError(watch.verdict, replies={lab: r for lab, r in wait.replies.items() if r.kind == "done"},
                            stopped=watch.where)
        return wait.replies

    def _abort(self, labs: set[int], epoch: int, reason: str) -> None:
        for lab in labs:
            try:
                self.ctrl[lab].send(Abort(epoch, reason))
            except ChannelClosed:
                pass

    def _drain(self, ints: _Interrupts) -> None:
        """Finish labs that still owe a reply (after Ctrl-C, a give-up, or an exception
        that ended a wait early); restart the pool if they do not stop in time, or at
        once if Ctrl-C is pressed meanwhile."""
        owing, why = dict(self._owing), self._owing_why or "after an interrupted request"
        self._renew_comm = True
        for epoch in sorted(set(owing.values())):
            labs = {lab for lab, e in owing.items() if e == epoch}
            self._abort(labs, epoch, "interrupt")
            deadline = time.monotonic() + self.settings.interrupt_grace
            try:
                self._collect(labs, epoch, lambda *a: None if ints.pending else print_sink(*a), None,
                              _Interrupts(), give_up=deadline)
            except LabDiedError:  # torn down: ensure_running starts a fresh pool
                self._owing, self._owing_why = {}, ""
                return
            except (SpmdError, KeyboardInterrupt):
                pass
            if ints.pending:
                break
        left = sorted(lab for lab in owing if lab in self._owing and lab not in self._in_gather)
        if left:
            busy = "" if ints.pending else " (busy in compiled code)"
            self._restart(f"{labs_verb(left, 'did', 'did')} not stop {why}{busy}")
        self._owing, self._owing_why = {}, ""
        if ints.pending:
            raise KeyboardInterrupt

    def _lab_died(self) -> None:
        """A lab's socket closed: collect exit reports, tear down, raise LabDiedError."""
        self.state = "dead"
        deadline = time.monotonic() + 1.5
        sel = selectors.DefaultSelector()
        for lab, chan in self.watch.items():
            sel.register(chan.sock, selectors.EVENT_READ, lab)
        with sel:
            while time.monotonic() < deadline and sel.get_map():
                if self._exits and self._proc.poll() is not None:
                    break
                for key, _ in sel.select(0.05):
                    try:
                        msg = self.watch[key.data].recv()
                    except (ChannelClosed, Undecodable):
                        sel.unregister(key.fileobj)
                        continue
                    if isinstance(msg, Exit):
                        self._exits[key.data] = msg.status
        self._teardown()
        statuses: dict[int, int | None] = dict(self._exits)
        if statuses:
            text = "; ".join(f"lab {lab} died ({launch.describe_status(code)})"
                             for lab, code in sorted(statuses.items()))
        else:
            text = f"the lab job ended ({launch.describe_status(self._proc.returncode)})"
        raise LabDiedError(
            f"{text[0].upper()}{text[1:]}. The pool is gone and values stored on the labs were lost; "
            "the next spmd block starts a fresh pool.", statuses) from None


def _unsendable(block: Block, exc: Exception) -> TypeError:
    """The error for a block whose inputs cannot be pickled, naming the first such input."""
    for name, spec in block.inputs.items():
        value = spec.value
        try:
            protocol.dumps(value, True)
        except Exception as error:
            return TypeError(f"spmd cannot send {name!r} (a {type(value).__name__}) to the labs: {error}")
    return TypeError(f"spmd cannot send the block to the labs: {exc}")


_live_pools: "weakref.WeakSet[Pool]" = weakref.WeakSet()
_current: dict[str, Pool] = {}


def parpool(n: int | str | None = None, size: int | None = None, *, replace: bool = False, **options: Any) -> Pool:
    """Start a pool of ``n`` labs (default ``SPMDLAB_NUM_LABS``, else the CPU count) and
    make it the current pool. Usable as ``with parpool(4) as pool:``; MATLAB's
    ``parpool('local', 4)`` works too.

    As in MATLAB, a second ``parpool()`` while the current pool is open raises
    PoolError; ``replace=True`` closes the current pool first."""
    refuse_on_lab("parpool")
    n = settings.requested_size(n, size)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"a pool needs a positive whole number of labs, got {n!r}")
    current = _current.get("pool")
    if current is not None and current.state != "closed":
        if not replace:
            raise PoolError(f"a parallel pool with {current.numlabs} lab{'s' if current.numlabs != 1 else ''} "
                            "is already open; close it first (gcp().close(), or delete(gcp) as in "
                            "MATLAB), or call parpool(..., replace=True)")
        current.close()
    pool = Pool(n, **options)
    _current["pool"] = pool
    return pool


def gcp(create: bool | str = True) -> Pool | None:
    """The current pool. With ``create`` (default) a default pool is started when there is
    none (one line on stderr says so); ``gcp('nocreate')`` or ``gcp(False)`` returns None
    instead, as MATLAB's ``gcp('nocreate')``."""
    refuse_on_lab("gcp")
    if isinstance(create, str):
        if create.lower() != "nocreate":
            raise ValueError(f"gcp takes 'nocreate' or nothing, got {create!r}")
        create = False
    pool = _current.get("pool")
    if pool is None or pool.state == "closed":
        return announce_start(settings.load().pool_size(), parpool) if create else None
    return pool


@atexit.register
def _close_all() -> None:
    for pool in list(_live_pools):
        try:
            pool.close()
        except Exception:
            pass

"""Starting a lab job: the listening socket, the launcher command, the labs' connections.

The client listens on a private AF_UNIX socket (or TCP with ``SPMDLAB_HOST``), starts
``mpiexec -n N python -m spmdlab.lab`` in a session of its own, and accepts three
authenticated connections per lab (``main``, ``ctrl``, and the shim's ``watch``). Each
handshake runs in its own thread with a short deadline, so connections that never answer
cannot stall the start. Once every lab is in, the listener and its folder are removed:
nothing of a pool stays in ``TMPDIR``, whatever happens to the client later.

The authkey reaches the labs in a file of that folder (0600, in a 0700 folder), named in
``SPMDLAB_KEYFILE``: it never appears in an environment or a command line (``mpiexec``
and hydra's proxies pass their environment on, and any process of the user can read
``/proc/<pid>/environ``), and the file is gone before any user code runs on a lab. A
pool whose labs may run on other machines (``SPMDLAB_HOST``, launcher arguments, another
launcher) cannot count on that folder there, so it also passes the key in
``SPMDLAB_AUTHKEY``, as the README says.
"""
from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .._frames import CODE_DIR
from ..errors import PoolError
from ..protocol.channel import Channel, ChannelClosed, Undecodable, join_address, server_handshake
from ..protocol.messages import Hello
from ..settings import Settings

__all__ = ["LabJob", "listen", "spawn", "accept_labs", "close_listener", "describe_status"]

_HANDSHAKE_SECONDS = 10.0  # each in its own thread: a silent connection holds up nothing
_ALL_INTERFACES = ("0.0.0.0", "::", "")


@dataclass
class LabJob:
    """A started lab job: the launcher process and every lab's channels, by lab number."""

    proc: subprocess.Popen
    main: dict[int, Channel] = field(default_factory=dict)
    ctrl: dict[int, Channel] = field(default_factory=dict)
    watch: dict[int, Channel] = field(default_factory=dict)
    pids: dict[int, int] = field(default_factory=dict)
    shim_pids: dict[int, int] = field(default_factory=dict)


def listen(settings: Settings, numlabs: int) -> tuple[socket.socket, str, str]:
    """The listening socket, the address the labs connect to, and its private folder."""
    host = settings.host
    folder = tempfile.mkdtemp(prefix="spmdlab-")  # 0700: the socket and the key file
    if host is None:
        path = os.path.join(folder, "pool.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        sock.listen(3 * numlabs + 8)
        return sock, path, folder
    v6 = ":" in host
    try:
        if host in _ALL_INTERFACES:
            if host == "::" and socket.has_dualstack_ipv6():
                sock = socket.create_server(("::", 0), family=socket.AF_INET6, dualstack_ipv6=True)
            else:
                sock = socket.create_server((host, 0), family=socket.AF_INET6 if v6 else socket.AF_INET)
        else:
            sock = socket.create_server((host, 0), family=socket.AF_INET6 if v6 else socket.AF_INET)
    except (OSError, OverflowError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise PoolError(f"cannot listen on SPMDLAB_HOST={host!r}: {exc}") from None
    sock.listen(3 * numlabs + 8)
    port = sock.getsockname()[1]
    # Bound to every interface: hand the labs a name they can reach, this machine's.
    advertised = socket.gethostname() if host in _ALL_INTERFACES else host
    return sock, join_address(advertised, port), folder


def write_keyfile(folder: str, authkey: bytes) -> str:
    """The authkey in a new file only this user can read; its path."""
    path = os.path.join(folder, "key")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(authkey.hex())
    return path


def spawn(settings: Settings, numlabs: int, address: str, authkey: bytes, folder: str) -> subprocess.Popen:
    """Start the lab job in a session of its own; the key goes in a file of ``folder``."""
    env = settings.lab_environment()
    env["SPMDLAB_ADDRESS"] = address
    env["SPMDLAB_KEYFILE"] = write_keyfile(folder, authkey)
    if not settings.is_local():  # labs elsewhere may not see the file (README: Security)
        env["SPMDLAB_AUTHKEY"] = authkey.hex()  # the worker erases it from its memory at once
    paths = [CODE_DIR, os.getcwd()]
    if sys.path and sys.path[0]:
        paths.insert(0, os.path.abspath(sys.path[0]))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    cmd = [*settings.launcher(), "-n", str(numlabs), *settings.launcher_args(), sys.executable, "-m",
           "spmdlab.lab"]
    try:
        return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise PoolError(f"could not start the labs with {cmd[0]!r}: {exc}") from None


def _handshake(sock: socket.socket, authkey: bytes, results: queue.Queue) -> None:
    try:
        chan = server_handshake(sock, authkey, _HANDSHAKE_SECONDS)
        sock.settimeout(_HANDSHAKE_SECONDS)
        hello = chan.recv()
        sock.settimeout(None)
        if not isinstance(hello, Hello):
            raise ChannelClosed("not a lab")
    except (ChannelClosed, OSError, Undecodable):
        sock.close()
        return
    results.put((hello, chan))


def accept_labs(job: LabJob, listener: socket.socket, authkey: bytes, numlabs: int, settings: Settings,
                started: float) -> None:
    """Accept every lab's three connections, each handshake concurrently (bounded)."""
    deadline = started + settings.start_timeout
    results: queue.Queue = queue.Queue()
    listener.settimeout(0.02)
    proc = job.proc

    unplaced: dict[int, tuple[Channel, int]] = {}  # lab pid -> a shim that did not know its rank

    def complete() -> bool:
        by_pid = {pid: lab for lab, pid in job.pids.items()}
        for child in [c for c in unplaced if c in by_pid]:
            lab = by_pid[child]
            job.watch[lab], job.shim_pids[lab] = unplaced.pop(child)
        return all(len(d) == numlabs for d in (job.main, job.ctrl, job.watch))

    while not complete():
        if proc.poll() is not None:
            err = (proc.stderr.read() if proc.stderr else b"").decode(errors="replace").strip()
            raise PoolError(f"the lab job exited with status {proc.returncode} before all "
                            f"{numlabs} labs connected" + (f":\n{err}" if err else ""))
        if time.monotonic() > deadline:
            raise PoolError(f"only {len(job.main)} of {numlabs} labs connected within "
                            f"{settings.start_timeout:g} s (SPMDLAB_START_TIMEOUT)")
        try:
            sock, _ = listener.accept()
            threading.Thread(target=_handshake, args=(sock, authkey, results), daemon=True,
                             name="spmdlab-handshake").start()
        except socket.timeout:
            pass
        while True:
            try:
                hello, chan = results.get_nowait()
            except queue.Empty:
                break
            lab = hello.rank + 1
            if hello.role == "watch" and hello.rank < 0:
                unplaced[hello.child] = (chan, hello.pid)
            elif hello.role == "watch":
                job.watch[lab], job.shim_pids[lab] = chan, hello.pid
            else:
                (job.main if hello.role == "main" else job.ctrl)[lab] = chan
                job.pids[lab] = hello.pid


def close_listener(listener: socket.socket | None, folder: str | None) -> None:
    if listener is not None:
        try:
            listener.close()
        except OSError:
            pass
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def relay_output(stream: Any, stderr: Any) -> bool:
    """Pass on what the lab job printed outside Python (C libraries) on ``stream`` (its
    stdout or ``stderr`` pipe, non-blocking); False at EOF."""
    try:
        data = stream.read()
    except (OSError, ValueError):
        return False
    if data is None:
        return True
    if data:
        (sys.stderr if stream is stderr else sys.stdout).write(data.decode(errors="replace"))
    return bool(data)


def describe_status(code: int | None) -> str:
    """A process exit code in words (a signal by its name)."""
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}, exit status {code}"
    return f"exit status {code}"

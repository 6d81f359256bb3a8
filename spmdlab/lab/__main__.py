"""The lab process: ``mpiexec -n N python -m spmdlab.lab``.

Each rank reads the authkey from the file named in ``SPMDLAB_KEYFILE`` (the client
removes it once every lab is in, before any user code runs), or, for labs that may run on
another machine, takes it out of its environment (and its memory's copy, so neither user
code nor its subprocesses can read it there), then forks once before touching MPI. The
parent, the shim, connects a ``watch`` channel to the client and waits for either end:
its child (the real lab) exiting, whose exact status it reports unless the lab shut down
cleanly, or the client going away, when it kills the lab. The shim needs no GIL of the
lab's, so a lab stuck in compiled code still goes when the client does. The lab connects
``main`` and ``ctrl`` (see ``protocol``), then serves requests until shutdown.
"""
from __future__ import annotations

import os
import select
import signal
import sys

__all__ = ["take_authkey", "main"]

_KEY = "SPMDLAB_AUTHKEY"
_KEYFILE = "SPMDLAB_KEYFILE"
_RANK_VARS = ("PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK")


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def take_authkey() -> bytes:
    """The authkey: from the key file if this lab can read it, else from the environment;
    in the environment it is removed and overwritten where the process's initial
    environment keeps it (``/proc/<pid>/environ``)."""
    value = os.environ.get(_KEY, "")
    try:
        with open(os.environ.get(_KEYFILE, ""), encoding="ascii") as f:
            value = f.read().strip()
    except OSError:  # a lab on another machine: the environment has it
        pass
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_void_p
        pointer = libc.getenv(_KEY.encode())
        if pointer:
            ctypes.memset(pointer, ord("x"), len(ctypes.string_at(pointer)))
    except (OSError, AttributeError):
        pass
    os.environ.pop(_KEY, None)  # and unsetenv()
    return bytes.fromhex(value)


def _rank() -> int:
    for name in _RANK_VARS:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return -1


def _shim(child: int, clean_fd: int, address: str, authkey: bytes) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from ..protocol.channel import ChannelClosed, Undecodable, connect
    from ..protocol.messages import Exit, Hello

    chan = None
    try:
        chan = connect(address, authkey, timeout=30.0)
        chan.send(Hello("watch", _rank(), -1, os.getpid(), child))
    except (OSError, ChannelClosed):
        chan = None
    try:
        child_fd = os.pidfd_open(child)
    except (AttributeError, OSError):
        child_fd = None
    while True:
        fds = [f for f in (chan.sock if chan else None, child_fd) if f is not None]
        ready, _, _ = select.select(fds, [], [], 0.2 if child_fd is None else None)
        if chan is not None and chan.sock in ready:
            try:
                chan.recv()
                continue
            except (ChannelClosed, Undecodable):  # the client is gone: so is the lab
                os.kill(child, signal.SIGKILL)
                chan.close()
                chan = None
        pid, status = os.waitpid(child, 0 if chan is None or child_fd in ready else os.WNOHANG)
        if pid:
            break
    code = os.waitstatus_to_exitcode(status)
    clean = os.read(clean_fd, 16) == b"clean"
    if not clean and chan is not None:
        try:
            chan.send(Exit(_rank(), code))
        except (OSError, ChannelClosed):
            pass
    os._exit(code if code >= 0 else 128 - code)


def main() -> None:
    _die_with_parent()
    address = os.environ["SPMDLAB_ADDRESS"]
    authkey = take_authkey()
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    child = os.fork()
    if child:
        os.close(write_fd)
        _shim(child, read_fd, address, authkey)
    os.close(read_fd)
    _die_with_parent()
    if os.getppid() != parent:
        os._exit(1)
    from .server import LabServer

    server = LabServer(address, authkey)
    del authkey
    server.serve()
    os.write(write_fd, b"clean")
    os._exit(0)


if __name__ == "__main__":
    main()

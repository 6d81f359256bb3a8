"""The lab process: ``mpiexec -n N python -m spmdlab.worker``.

Each rank forks once before touching MPI: the parent (the shim) only waits for the
child, the real lab, and reports its exact exit status to the client if it dies, which
``mpiexec`` cannot tell reliably. The lab connects back to the client (``main`` and
``ctrl`` channels, see ``protocol``), then serves commands until shutdown.
"""
from __future__ import annotations

import os
import signal
import sys


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _shim(child: int, clean_fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    clean = os.read(clean_fd, 16) == b"clean"
    if not clean:
        try:
            from .protocol import connect

            chan = connect(os.environ["SPMDLAB_ADDRESS"], bytes.fromhex(os.environ["SPMDLAB_AUTHKEY"]), timeout=2.0)
            chan.send(("exit", int(os.environ.get("PMI_RANK", "-1")), code))
            chan.close()
        except Exception:
            pass
    os._exit(code if code >= 0 else 128 - code)


def main() -> None:
    _die_with_parent()
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    child = os.fork()
    if child:
        os.close(write_fd)
        _shim(child, read_fd)
    os.close(read_fd)
    _die_with_parent()
    if os.getppid() != parent:
        os._exit(1)
    from .labserver import LabServer

    server = LabServer()
    server.serve()
    os.write(write_fd, b"clean")
    os._exit(0)


if __name__ == "__main__":
    main()

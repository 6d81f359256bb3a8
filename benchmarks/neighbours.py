"""Idle MPI neighbours for the benchmarks: two MPI processes that poll for a command that
never comes, as the idle ranks of another pool (a ScaLAPACK driver, mpi4py-fft, a second
spmdlab pool under MPICH) do on a shared node (issue 23, "shared cores").

    from neighbours import idle_neighbours
    with idle_neighbours():            # two polling processes while the block runs
        t = median(workload, 5)

    python benchmarks/neighbours.py [--procs 2] [--thread-level single] -- CMD ARGS...
                                       # run CMD with the neighbours polling beside it

Each neighbour sits in a blocking MPI receive (rank 0 from rank 1, rank 1 from rank 0):
MPICH's blocking wait spins on the progress engine, so each takes a whole core's share
from the scheduler. ``thread_level="single"`` (the default, what a C or Fortran program's
``MPI_Init`` gives) spins without yielding; ``"multiple"`` (mpi4py's default) yields
between polls. The neighbours run in their own session and are killed, as a process
group, when the ``with`` ends; ``start`` returns only once both are polling.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

__all__ = ["idle_neighbours", "IdleNeighbours"]

_NEIGHBOUR = """
import os, sys
import mpi4py
mpi4py.rc.thread_level = sys.argv[1]
from mpi4py import MPI
c = MPI.COMM_WORLD
open(os.path.join(sys.argv[2], str(c.Get_rank())), "w").close()  # polling from now on
c.recv(source=1 - c.Get_rank() if c.Get_size() == 2 else MPI.ANY_SOURCE)
"""


def _mpiexec() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else "mpiexec"


class IdleNeighbours:
    """``procs`` MPI processes polling in a blocking receive until :meth:`stop`."""

    def __init__(self, procs: int = 2, thread_level: str = "single") -> None:
        self.procs, self.thread_level = procs, thread_level
        self.proc: subprocess.Popen | None = None
        self._dir: tempfile.TemporaryDirectory | None = None

    def start(self, timeout: float = 60.0) -> IdleNeighbours:
        self._dir = tempfile.TemporaryDirectory(prefix="spmdlab-neighbours-")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "MPI_LOCALNRANKS"))}
        self.proc = subprocess.Popen(
            [_mpiexec(), "-n", str(self.procs), sys.executable, "-c", _NEIGHBOUR, self.thread_level, self._dir.name],
            env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        until = time.monotonic() + timeout
        while len(os.listdir(self._dir.name)) < self.procs:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the idle MPI neighbours exited at once (code {self.proc.returncode})")
            if time.monotonic() > until:
                self.stop()
                raise RuntimeError("the idle MPI neighbours did not start polling")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # our own session: mpiexec and its ranks
            proc.wait()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


@contextlib.contextmanager
def idle_neighbours(procs: int = 2, thread_level: str = "single", enabled: bool = True) -> Iterator[None]:
    """Two (``procs``) idle MPI processes polling while the ``with`` body runs; nothing
    when ``enabled`` is False (so a benchmark can write ``with idle_neighbours(enabled=args.neighbours)``)."""
    if not enabled:
        yield
        return
    n = IdleNeighbours(procs, thread_level).start()
    try:
        yield
    finally:
        n.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description="run a command beside idle polling MPI processes")
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--thread-level", default="single", choices=["single", "funneled", "serialized", "multiple"])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    with idle_neighbours(args.procs, args.thread_level):
        return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())

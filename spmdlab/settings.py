"""The one place that reads spmdlab's settings: keyword arguments, then ``SPMDLAB_*`` variables.

| variable | meaning | default |
|---|---|---|
| ``SPMDLAB_NUM_LABS`` | default pool size | CPU count |
| ``SPMDLAB_MPIEXEC`` | launcher command (may hold arguments, e.g. ``srun --mpi=pmi2``) | ``mpiexec`` next to ``sys.executable``, else on ``PATH`` |
| ``SPMDLAB_MPIEXEC_ARGS`` | extra launcher arguments (``-f hosts``) | none |
| ``SPMDLAB_HOST`` | listen on TCP at this address so labs on other hosts can connect (``0.0.0.0``/``::``: every interface, labs told this machine's name; IPv6 literals work) | local AF_UNIX socket |
| ``SPMDLAB_BLAS_THREADS`` | BLAS/OpenMP threads per lab; unset, OpenMP uses 1 and BLAS the lab's thread count (``SPMDLAB_AUTOTHREAD_TARG``) | see left |
| ``SPMDLAB_START_TIMEOUT`` | seconds to wait for all labs to connect | 60 |
| ``SPMDLAB_INTERRUPT_GRACE`` | seconds labs get to stop after Ctrl-C before the pool is restarted | 1 |
| ``SPMDLAB_QUIET`` | ``1``: no "Starting parallel pool ..." line when a block starts the pool, no "running" line | off |
| ``SPMDLAB_AUTOTHREAD_TARG`` | threads each lab splits a large elementwise operation, ufunc, reduction, BLAS or FFT call over (PDL's ``PDL_AUTOPTHREAD_TARG``; ``parpool(n, threads=t)``) | ``max(1, cores // labs on this machine)``: labs × threads never exceed the cores |
| ``SPMDLAB_AUTOTHREAD_SIZE`` | local parts below this many mega-elements (10⁶) use one thread (PDL's ``PDL_AUTOPTHREAD_SIZE``) | 1 |
| ``SPMDLAB_DISTRIBUTE_SIZE`` | a ``distributed`` array of fewer elements built at the client (without a codistributor) stays whole on lab 1; 0 spreads every array | 1000000 |
| ``SPMDLAB_TREE`` | ``1``: blocks reach the labs through lab 1 and MPI's collectives (broadcast of the request, gather of the replies), so the client's work per block does not grow with the pool (``parpool(n, tree=...)``); ``0``: the client sends to and hears from every lab itself (measured faster on a machine with more labs than cores, docs/design.md §10b) | ``0`` |
| ``SPMDLAB_WAIT`` | how a lab's MPI waits wait (``lab/waits.py``): ``poll`` (test, yield for 2 ms, then sleep up to 1 ms between tests), ``block`` (MPI's own wait, woken by an abort), ``auto`` (``block`` with a core per lab, else ``yield``), ``yield``, ``spin`` | ``poll`` |
| ``SPMDLAB_IO_TWO_PHASE`` | ``1``: ``load`` of a file by its last dimension reads contiguous row slabs and exchanges them (``arrays/io/twophase.py``; not measured faster) | off |
| ``SPMDLAB_KEEP_MEMORY`` | seconds a lab keeps the memory of large arrays it freed, for the next ones (no fresh pages to map and zero), after its last request (``lab/memory.py``; glibc only; ``inf``: until the pool closes; 0: the C library's default, large blocks unmapped at once) | 10 |
| ``SPMDLAB_CROSS_MEMORY`` | ``distributed(X)`` and ``gather`` copy large parts between the client and labs on its machine straight from one process's memory into the other's (``protocol/crossmem.py``), falling back to the sockets where the kernel refuses; ``0``: always the sockets | ``1`` |
| ``SPMDLAB_STAGING_MB`` | largest local part (MB) ``redistribute`` moves through memory the labs of one machine share; the buffer is kept for reuse, 0 turns it off | 64 |
"""
from __future__ import annotations

import numbers
import os
import shlex
import shutil
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import PoolError

__all__ = ["Settings", "load", "requested_size", "LOCAL_PROFILES", "check_threads", "check_size", "check_seconds",
           "cpu_cores",
           "labs_here", "blas_threads_started", "parse_switch", "wait_policy", "io_two_phase", "WAIT_POLICIES"]

WAIT_POLICIES = ("poll", "block", "auto", "yield", "spin")

_ENV: dict[str, tuple[str, Callable[[str], Any]]] = {
    "num_labs": ("SPMDLAB_NUM_LABS", int),
    "mpiexec": ("SPMDLAB_MPIEXEC", str),
    "mpiexec_args": ("SPMDLAB_MPIEXEC_ARGS", shlex.split),
    "host": ("SPMDLAB_HOST", str),
    "blas_threads": ("SPMDLAB_BLAS_THREADS", int),
    "start_timeout": ("SPMDLAB_START_TIMEOUT", float),
    "interrupt_grace": ("SPMDLAB_INTERRUPT_GRACE", float),
    "staging_mb": ("SPMDLAB_STAGING_MB", float),
    "autothread_targ": ("SPMDLAB_AUTOTHREAD_TARG", int),
    "autothread_size": ("SPMDLAB_AUTOTHREAD_SIZE", float),
    "distribute_size": ("SPMDLAB_DISTRIBUTE_SIZE", float),
    "tree": ("SPMDLAB_TREE", lambda raw: parse_switch(raw, "SPMDLAB_TREE")),
    "keep_memory": ("SPMDLAB_KEEP_MEMORY", float),
    "cross_memory": ("SPMDLAB_CROSS_MEMORY", lambda raw: parse_switch(raw, "SPMDLAB_CROSS_MEMORY")),
}
_ALIASES = {"threads": "autothread_targ"}  # parpool(n, threads=t)
_LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")  # labs on this machine (hydra, Open MPI)

_BLAS_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
_BLAS_ONLY = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


@dataclass
class Settings:
    num_labs: int | None = None
    mpiexec: str | None = None
    mpiexec_args: list[str] = field(default_factory=list)
    host: str | None = None
    blas_threads: int | None = None
    start_timeout: float = 60.0
    interrupt_grace: float = 1.0
    staging_mb: float = 64.0
    autothread_targ: int | None = None
    autothread_size: float = 1.0
    distribute_size: float = 1e6
    tree: bool = False
    keep_memory: float = 10.0
    cross_memory: bool = True

    def __post_init__(self) -> None:
        if not self.staging_mb >= 0:
            raise ValueError(f"staging_mb (SPMDLAB_STAGING_MB) must be 0 or more, got {self.staging_mb!r}")
        if self.autothread_targ is not None:
            self.autothread_targ = check_threads(self.autothread_targ, "threads (SPMDLAB_AUTOTHREAD_TARG)")
        self.autothread_size = check_size(self.autothread_size, "SPMDLAB_AUTOTHREAD_SIZE (mega-elements)")
        self.distribute_size = check_size(self.distribute_size, "SPMDLAB_DISTRIBUTE_SIZE (elements)")
        self.keep_memory = check_seconds(self.keep_memory, "keep_memory (SPMDLAB_KEEP_MEMORY, seconds)")

    def lab_threads(self, labs_here: int) -> int:
        """The thread count of a lab: ``autothread_targ``, else ``max(1, cores // labs_here)``."""
        if self.autothread_targ is not None:
            return self.autothread_targ
        return max(1, cpu_cores() // max(1, labs_here))

    def pool_size(self) -> int:
        n = self.num_labs if self.num_labs is not None else (os.cpu_count() or 1)
        if n < 1:
            raise ValueError(f"a pool needs at least 1 lab, got {n}")
        return n

    def launcher(self) -> list[str]:
        """The launcher command as a list, located as docs/design.md §2 says."""
        if self.mpiexec:
            return shlex.split(self.mpiexec)
        for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
            candidate = folder / "mpiexec"
            if candidate.exists():
                return [str(candidate)]
        found = shutil.which("mpiexec")
        if found:
            return [found]
        raise PoolError(
            "no mpiexec found: install the MPICH wheel (`pip install mpich`) in this "
            "environment, put mpiexec on PATH, or set SPMDLAB_MPIEXEC"
        )

    def launcher_args(self) -> list[str]:
        """Extra launcher arguments (hostfile, ...)."""
        return list(self.mpiexec_args)

    def is_local(self) -> bool:
        """True for a pool on this machine only: default launcher, no hosts, no TCP."""
        return self.host is None and not self.mpiexec_args and not self.mpiexec

    def lab_environment(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in _BLAS_VARS:
            env[name] = str(self.blas_threads or 1)
        if self.blas_threads is None:  # BLAS starts with the labs' thread count (arrays.threads keeps it so)
            for name in _BLAS_ONLY:
                env[name] = str(self.autothread_targ or (max(1, cpu_cores() // self.pool_size()) if self.is_local()
                                                         else 1))
        else:
            env["SPMDLAB_BLAS_THREADS"] = str(self.blas_threads)
        env["SPMDLAB_STAGING_MB"] = repr(self.staging_mb)  # the labs read it (comm.init)
        env["SPMDLAB_AUTOTHREAD_SIZE"] = repr(self.autothread_size)  # and these (arrays.threads)
        env["SPMDLAB_TREE"] = "1" if self.tree else "0"  # and this (lab.server)
        env["SPMDLAB_KEEP_MEMORY"] = repr(self.keep_memory)  # and this (lab.memory)
        if self.autothread_targ is not None:
            env["SPMDLAB_AUTOTHREAD_TARG"] = str(self.autothread_targ)
        if self.is_local() and "UCX_TLS" not in env and not env.get("MPIR_CVAR_NOLOCAL"):
            # One machine: UCX needs no TCP transport, so the labs open no listening
            # sockets on external interfaces (hydra's own control port cannot be kept local).
            env["UCX_TLS"] = "self,sm"
        return env


def parse_switch(raw: str, what: str) -> bool:
    """An on/off variable: ``1``/``on``/``true``/``yes`` or ``0``/``off``/``false``/``no``."""
    value = raw.strip().lower()
    if value in ("1", "on", "true", "yes"):
        return True
    if value in ("0", "off", "false", "no"):
        return False
    raise ValueError(f"{what} takes 1 or 0 (on/off), got {raw!r}")


def check_threads(n: object, what: str = "the thread count") -> int:
    """A thread count: a whole number, 1 or more."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{what} must be a whole number of threads, got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"{what} must be 1 or more, got {n!r}")
    return int(n)


def check_size(size: object, what: str) -> float:
    """A size threshold: a finite real number, 0 or more."""
    if isinstance(size, bool) or not isinstance(size, numbers.Real):
        raise TypeError(f"{what} must be a number, got {type(size).__name__} {size!r}")
    if not 0 <= float(size) < float("inf"):
        raise ValueError(f"{what} must be 0 or more (and finite), got {size!r}")
    return float(size)


def check_seconds(seconds: object, what: str) -> float:
    """A duration: a number of seconds, 0 or more (``inf`` allowed)."""
    if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
        raise TypeError(f"{what} must be a number, got {type(seconds).__name__} {seconds!r}")
    if not float(seconds) >= 0:
        raise ValueError(f"{what} must be 0 or more, got {seconds!r}")
    return float(seconds)


def cpu_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def blas_threads_started() -> int:
    """The BLAS thread count this process started with (``lab_environment`` set it), 0 if unknown."""
    value = os.environ.get(_BLAS_ONLY[0], "")
    return int(value) if value.isdigit() else 0


def labs_here(fallback: int) -> int:
    """How many labs of the job run on this machine, as the MPI launcher says, else ``fallback``."""
    for var in _LOCAL_SIZE_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return fallback


def check_timeout(timeout: object) -> float | None:
    """``timeout=`` of spmd: None, or a positive finite number of seconds."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(f"timeout must be a number of seconds or None, got {type(timeout).__name__} {timeout!r}")
    if not (0 < float(timeout) < float("inf")):
        raise ValueError(f"timeout must be a positive, finite number of seconds, got {timeout!r}")
    return float(timeout)


LOCAL_PROFILES = ("local", "processes")  # MATLAB's cluster profiles for workers on this machine


def requested_size(first: Any, size: Any) -> Any:
    """The pool size ``parpool(first, size)`` asks for: ``parpool(4)``, or MATLAB's
    ``parpool('local', 4)`` / ``parpool('Processes')``, the profile named first."""
    if not isinstance(first, str):
        if size is not None:
            raise TypeError(f"parpool takes one pool size, got {first!r} and {size!r}; MATLAB's "
                            "parpool('local', n) names the profile first")
        return first
    if first.lower() in LOCAL_PROFILES:
        return size
    if first.lower() == "threads":
        raise ValueError("parpool('Threads'): spmdlab's labs are processes (one MPI job), there is no "
                         "thread pool of workers; parpool(n) starts n labs, and parpool(n, threads=t) "
                         "splits large operations inside each lab over t threads")
    raise ValueError(f"spmdlab has no cluster profile {first!r}: parpool(n) or parpool('local', n) starts n labs "
                     "on this machine; for labs on other machines give the launcher settings, e.g. "
                     "parpool(8, host='0.0.0.0', mpiexec_args=['-f', 'hosts']) (README: Beyond one machine)")


def load(**overrides: Any) -> Settings:
    """Settings from ``SPMDLAB_*`` variables, overridden by the non-None keyword arguments."""
    values = {}
    for name, (var, parse) in _ENV.items():
        raw = os.environ.get(var)
        if raw not in (None, ""):
            try:
                values[name] = parse(raw)
            except ValueError as exc:
                raise ValueError(f"{var}={raw!r} is not valid: {exc}") from None
    for name, value in overrides.items():
        name = _ALIASES.get(name, name)
        if name not in _ENV:
            raise TypeError(f"unknown pool option {name!r}; known: {', '.join([*_ENV, *_ALIASES])}")
        if value is not None:
            values[name] = value
    return Settings(**values)


def quiet() -> bool:
    """``SPMDLAB_QUIET=1``: the library prints nothing of its own (no start line, no
    "running" line); only lab output is shown."""
    return os.environ.get("SPMDLAB_QUIET", "").strip().lower() not in ("", "0", "false", "no", "off")


def wait_policy(default: str) -> str:
    """``SPMDLAB_WAIT`` as a lab reads it at start: one of ``WAIT_POLICIES``."""
    raw = os.environ.get("SPMDLAB_WAIT", default).strip().lower() or default
    if raw not in WAIT_POLICIES:
        raise PoolError(f"SPMDLAB_WAIT must be one of {', '.join(WAIT_POLICIES)}; got {raw!r}")
    return raw


def io_two_phase() -> bool:
    """``SPMDLAB_IO_TWO_PHASE=1``: the two-phase read of files split by their last dimension."""
    return os.environ.get("SPMDLAB_IO_TWO_PHASE", "") == "1"

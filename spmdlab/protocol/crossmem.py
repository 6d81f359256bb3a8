"""Array parts copied between the client and labs on its machine by cross-memory attach.

Linux's ``process_vm_readv``/``process_vm_writev`` copy bytes between two processes'
memory in one pass, with gather/scatter lists on both sides: the single-copy path MPI
implementations take between ranks on one node (MPICH's and Open MPI's CMA, KNEM before
it). A lab *lends* a contiguous array (:func:`lend`: where it runs, its pid, the array's
address and size); the client then reads it straight into its region of the result, or
writes a region of its array straight into a part the lab made for it, a strided region
(a column block, 2dbc blocks: :class:`Region`) as its list of contiguous runs. The client
does the copies in pieces of ``CHUNK`` bytes in a few threads (the calls release the
GIL), so a lab's memory is only touched while the lab waits for its next request, which
the client sends only after the copies are done.

A pool on several machines, a kernel or container that refuses the calls (``EPERM``,
``ENOSYS``) or another C library: :func:`lend` returns None or the copy raises
:class:`CrossMemoryError`, and the client moves the parts over its sockets instead.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, NamedTuple

import numpy as np

from .inplace import IOV_MAX, pieces

__all__ = ["Lent", "Region", "CrossMemoryError", "available", "here", "lend", "read_into", "write_from",
           "MIN_RUN", "CHUNK"]

_MAX_CALL = 1 << 30  # bytes per call (the kernel stops a single call at about 2 GiB)
_IOVEC = np.dtype([("base", np.uint64), ("len", np.uint64)])


class Lent(NamedTuple):
    """A lab's contiguous array, lent for one copy: ``where`` it runs (boot id, pid
    namespace), its ``pid``, the bytes' ``address`` and ``nbytes``."""

    where: tuple[str, int]
    pid: int
    address: int
    nbytes: int


class CrossMemoryError(OSError):
    """The kernel refused or cut short a cross-memory copy."""


class _Calls:
    """The two libc calls, looked up once (None where they do not exist)."""

    def __init__(self) -> None:
        self.read: Any = None
        self.write: Any = None
        if not sys.platform.startswith("linux"):
            return
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            read, write = libc.process_vm_readv, libc.process_vm_writev
        except (OSError, AttributeError):
            return
        for fn in (read, write):
            fn.restype = ctypes.c_ssize_t
            fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]
        self.read, self.write = read, write


_calls = _Calls()
_here: list[tuple[str, int] | None] = []
_pool: list[ThreadPoolExecutor] = []
_pool_lock = threading.Lock()


def available() -> bool:
    """True where this process can make cross-memory copies at all (Linux with the calls)."""
    return _calls.read is not None and here() is not None


def here() -> tuple[str, int] | None:
    """This machine's boot id and this process's pid namespace: two processes with the same
    can name each other by pid. None where they cannot be read."""
    if not _here:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                boot = f.read().strip()
            _here.append((boot, os.stat("/proc/self/ns/pid").st_ino))
        except OSError:
            _here.append(None)
    return _here[0]


def lend(array: np.ndarray) -> Lent | None:
    """``array`` lent for a copy (it must stay alive and unchanged until the copy is done:
    the lab keeps it as its stored part); None if it is not contiguous or the calls are
    missing here."""
    where = here()
    if where is None or _calls.read is None or not array.flags.c_contiguous or array.dtype.hasobject:
        return None
    return Lent(where, os.getpid(), int(array.ctypes.data), int(array.nbytes))


CHUNK = 8 << 20  # bytes a copy thread takes at a time
MIN_RUN = 256  # bytes: a region whose runs are shorter on average goes over the sockets (packed)


class Region:
    """``A[np.ix_(*index)]`` of a client array ``A`` as the runs of bytes it covers, in C
    order (``index``: a slice or a sorted integer array per axis: a lab's selection in a
    1-D or 2-D block-cyclic layout)."""

    __slots__ = ("A", "index", "shape")

    def __init__(self, A: np.ndarray, index: Sequence) -> None:
        self.A, self.index = A, tuple(index)
        self.shape = tuple(len(range(A.shape[d])[s]) if isinstance(s, slice) else len(s)
                           for d, s in enumerate(self.index))

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.A.itemsize

    def iovecs(self) -> np.ndarray | None:
        """The runs as an iovec array (address, length), or None when they are too short
        (or ``A`` holds objects)."""
        A, index = self.A, self.index
        if A.dtype.hasobject or self.nbytes == 0:
            return None
        if all(isinstance(s, slice) for s in index):
            view = A[index]
            p = pieces(view)
            if p is None:
                return None
            vec = np.empty(len(p), dtype=_IOVEC)
            vec["base"] = p.offsets.astype(np.uint64) + np.uint64(view.ctypes.data)
            vec["len"] = p.run
            return vec
        return self._runs_of_arrays()

    def _runs_of_arrays(self) -> np.ndarray | None:
        """Runs of consecutive positions along the last axis (each its own run unless the
        axis is contiguous in memory), at every position of the leading axes."""
        A = self.A
        at = [np.arange(A.shape[d], dtype=np.int64)[s] if isinstance(s, slice) else np.asarray(s, dtype=np.int64)
              for d, s in enumerate(self.index)]
        last = at[-1]
        if A.strides[-1] == A.itemsize:
            cut = np.flatnonzero(np.diff(last) != 1) + 1
            starts, lengths = last[np.r_[0, cut]], np.diff(np.r_[0, cut, last.size])
        else:
            starts, lengths = last, np.ones(last.size, dtype=np.int64)
        count = int(np.prod([a.size for a in at[:-1]], dtype=np.int64)) * starts.size
        if self.nbytes < MIN_RUN * count:
            return None
        offsets = starts * A.strides[-1]
        for d in range(A.ndim - 2, -1, -1):
            offsets = (at[d] * A.strides[d])[:, None] + offsets.reshape(1, -1)
        vec = np.empty(count, dtype=_IOVEC)
        vec["base"] = (offsets.reshape(-1) + A.ctypes.data).astype(np.uint64)
        vec["len"] = np.broadcast_to(lengths * A.itemsize, (count // starts.size, starts.size)).reshape(-1)
        return vec


def _copy(fn: Any, lent: Lent, vec: np.ndarray) -> None:
    """One lab's copy: the runs ``vec`` on this side, the lent bytes on the other."""
    total = int(vec["len"].sum())
    if total != lent.nbytes:
        raise ValueError(f"a lent part of {lent.nbytes} bytes for a region of {total}")
    per = IOV_MAX
    if int(vec["len"].max()) > _MAX_CALL // IOV_MAX:  # long runs: one call each, of at most _MAX_CALL bytes
        vec = np.array([(int(b) + s, min(_MAX_CALL, int(n) - s)) for b, n in vec.tolist()
                        for s in range(0, int(n), _MAX_CALL)], dtype=_IOVEC)
        per = 1
    done = 0
    remote = np.zeros(1, dtype=_IOVEC)
    for start in range(0, len(vec), per):
        local = np.ascontiguousarray(vec[start:start + per])
        size = int(local["len"].sum())
        remote["base"], remote["len"] = lent.address + done, size
        got = fn(lent.pid, local.ctypes.data, len(local), remote.ctypes.data, 1, 0)
        if got != size:
            code = ctypes.get_errno() if got < 0 else 0
            why = os.strerror(code) if code else f"{got} of {size} bytes"
            raise CrossMemoryError(code, f"cross-memory copy with lab process {lent.pid}: {why}")
        done += size


def _threads() -> ThreadPoolExecutor:
    with _pool_lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1)), "spmdlab-copy"))
        return _pool[0]


def _split(lent: Lent, vec: np.ndarray) -> list[tuple[Lent, np.ndarray]]:
    """One copy as copies of about ``CHUNK`` bytes each, so that the threads share a large
    part's copy (and its page faults) instead of one thread taking all of it."""
    if lent.nbytes <= CHUNK:
        return [(lent, vec)]
    if len(vec) == 1:
        base = int(vec["base"][0])
        return [(lent._replace(address=lent.address + s, nbytes=min(CHUNK, lent.nbytes - s)),
                 np.array([(base + s, min(CHUNK, lent.nbytes - s))], dtype=_IOVEC))
                for s in range(0, lent.nbytes, CHUNK)]
    ends = np.cumsum(vec["len"].astype(np.int64))
    cuts = np.unique(np.r_[0, np.searchsorted(ends, np.arange(CHUNK, lent.nbytes, CHUNK)) + 1, len(vec)])
    cuts = cuts[cuts <= len(vec)]
    out = []
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        start = int(ends[a - 1]) if a else 0
        out.append((lent._replace(address=lent.address + start, nbytes=int(ends[b - 1]) - start), vec[a:b]))
    return out


def _run(fn: Any, jobs: Sequence[tuple[Lent, np.ndarray]]) -> None:
    """The copies in the copy threads; returns (or raises the first error) only once every
    copy has ended, even when interrupted, so no copy outlives the request it serves."""
    if not jobs:
        return
    futures = [_threads().submit(_copy, fn, lent, vec) for job in jobs for lent, vec in _split(*job)]
    try:
        wait(futures)
    finally:
        while True:
            try:
                wait(futures)
                break
            except BaseException:  # a second Ctrl-C: still wait, the copies take milliseconds
                continue
    for future in futures:
        future.result()


def read_into(jobs: Sequence[tuple[Lent, np.ndarray]]) -> None:
    """Copy each lent part into its runs (``Region.iovecs`` of a writable client array)."""
    _run(_calls.read, jobs)


def write_from(jobs: Sequence[tuple[Lent, np.ndarray]]) -> None:
    """Copy the runs of each client region (``Region.iovecs``) into its lent part."""
    _run(_calls.write, jobs)

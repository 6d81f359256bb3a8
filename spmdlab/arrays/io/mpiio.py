"""MPI-IO for the labs: a file opened by every lab of the block, file views made of
MPI datatypes that select a lab's part, and collective reads and writes in rounds.

Datatypes (ROMIO's and HDF5's way of describing a hyperslab): the elements of a Cartesian
product of runs are an ``MPI_Type_indexed`` per dimension, each resized to the extent of
a whole row of that dimension, nested from the fastest-varying dimension outward; for a
local array with arbitrary strides, ``hvector``s of its strides. Every transfer is a
collective (``Read_all``/``Write_all``; ROMIO's nonblocking ones progress only inside
``MPI_Test`` and are many times slower) entered only after an interruptible barrier, as are
the other blocking collectives (open, view, close), so no lab waits in them for a lab that
failed before; a transfer itself is not interruptible (it reads or writes at disk speed).

ROMIO's buffers are capped at ``SPMDLAB_STAGING_MB`` (hints ``cb_buffer_size``,
``ind_rd_buffer_size``, ``ind_wr_buffer_size``): a lab holds its part and at most that.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import settings
from ...lab import lazy_comm as comm
from .plan import runs

__all__ = ["LONG_RUN", "item_type", "region_type", "contig_strides", "File", "staging_bytes", "no_sigxfsz"]


def staging_bytes() -> int:
    """The most a lab buffers beside its part (``SPMDLAB_STAGING_MB``; 16 MB when 0)."""
    mb = settings.load().staging_mb
    return int(mb * 2 ** 20) if mb > 0 else 16 << 20


def no_sigxfsz() -> None:
    """A write beyond the file size limit (RLIMIT_FSIZE) fails with EFBIG, reported as
    an error, instead of killing the lab with SIGXFSZ."""
    if hasattr(signal, "SIGXFSZ") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def item_type(itemsize: int) -> Any:
    """One element: ``itemsize`` bytes (every dtype moves as bytes; byte order is the file's)."""
    MPI = comm.MPI
    t = MPI.BYTE.Create_contiguous(itemsize)
    t.Commit()
    return t


def contig_strides(shape: Sequence[int], itemsize: int, fortran: bool) -> tuple:
    out = [0] * len(shape)
    step = itemsize
    for d in (range(len(shape)) if fortran else range(len(shape) - 1, -1, -1)):
        out[d] = step
        step *= max(int(shape[d]), 1)
    return tuple(out)


def region_type(sel: Sequence[Any], strides: Sequence[int], item: Any, fortran: bool = False,
                shape: Sequence[int] | None = None) -> Any:
    """The elements ``sel`` (per dimension a slice or increasing index array) of an array
    of ``shape`` with byte ``strides`` (none negative), in C order of the index (Fortran
    order when ``fortran``): per dimension, innermost first, the type is resized to that
    dimension's stride and indexed by the runs of ``sel``. Whole, packed innermost
    dimensions are merged first, so a range of rows is one stretch, not one per row
    (ROMIO writes each stretch of the flattened type with its own call)."""
    made: list[Any] = []
    itemsize = item.Get_extent()[1]
    dims = list(range(len(sel)) if fortran else range(len(sel) - 1, -1, -1))
    inner = 1  # elements in the whole, packed innermost dimensions merged so far
    while dims and shape is not None and int(strides[dims[0]]) == itemsize * inner:
        starts, lengths = runs(sel[dims[0]])
        if not (len(starts) == 1 and starts[0] == 0 and lengths[0] == shape[dims[0]]):
            break
        inner *= int(shape[dims.pop(0)])
    if dims and shape is not None and int(strides[dims[0]]) == itemsize * inner:
        starts, lengths = runs(sel[dims.pop(0)])  # runs of this dimension: runs of elements
        t = item.Create_indexed([int(x) * inner for x in lengths], [int(x) * inner for x in starts])
        made.append(t)
    elif inner > 1:
        t = item.Create_contiguous(inner)
        made.append(t)
    else:
        t = item
    for d in dims:
        starts, lengths = runs(sel[d])
        step = t.Create_resized(0, int(strides[d]))
        t = step.Create_indexed([int(x) for x in lengths], [int(x) for x in starts])
        made += [step, t]
    t = t.Dup()
    t.Commit()
    for m in made:
        m.Free()
    return t


# ROMIO's buffers and their defaults: the collective buffer of two-phase I/O, the
# data-sieving buffers of independent reads and writes.
_ROMIO_BUFFERS = {"cb_buffer_size": 16 << 20, "ind_rd_buffer_size": 4 << 20, "ind_wr_buffer_size": 512 << 10}


def _hints(write: bool, run: int) -> Any:
    """Hints: ROMIO's buffers lowered to the staging size where they exceed it; reads
    and writes without collective buffering (measured: reads 4x slower than each lab reading its own
    stretches; writes alike), and without data sieving when every stretch is long (``run`` bytes)."""
    MPI = comm.MPI
    cap = staging_bytes()
    hints = {k: str(cap) for k, v in _ROMIO_BUFFERS.items() if cap < v}
    way = "write" if write else "read"
    hints[f"romio_cb_{way}"] = "disable"
    if run >= LONG_RUN:
        hints[f"romio_ds_{way}"] = "disable"
    info = MPI.Info.Create()
    for key, value in hints.items():
        info.Set(key, value)
    return info


LONG_RUN = 32 << 10


class File:
    """A file every lab of the block has open (collective open, close)."""

    def __init__(self, path: str, write: bool, what: str, run: int = 0) -> None:
        MPI = comm.MPI
        self.what = what
        self.short = ""  # what went wrong in a transfer, if anything (checked by the caller)
        c = comm.block()
        comm.wait(c.Ibarrier(), what)  # all labs are here before the blocking open
        mode = (MPI.MODE_WRONLY | MPI.MODE_CREATE) if write else MPI.MODE_RDONLY
        info = _hints(write, run)
        try:
            self.fh = MPI.File.Open(c, path, mode, info)
        finally:
            info.Free()

    def transfer(self, write: bool, offset: int, item: Any, filetype: Any, buf: Any, count: int,
                 memtype: Any) -> None:
        """One collective round: this lab's elements (``filetype`` over the file from byte
        ``offset``; None: none) from/to ``buf`` (``count`` of ``memtype``)."""
        fh = self.fh
        if filetype is None or count == 0:
            fh.Set_view(offset, item, item)
            buf, count, memtype = np.empty(0, np.uint8), 0, item
        else:
            fh.Set_view(offset, item, filetype)
        spec = [buf, count, memtype]
        # Blocking collective transfer, entered together (an interruptible barrier first):
        # ROMIO's nonblocking collectives progress only inside MPI_Test, 20x slower here.
        comm.wait(comm.block().Ibarrier(), self.what)
        status = comm.MPI.Status()
        if write:
            fh.Write_all(spec, status)
        else:
            fh.Read_all(spec, status)
        want = count * memtype.Get_size()
        got = status.Get_count(comm.MPI.BYTE)
        if got != want and not self.short:
            # ROMIO's nonblocking collectives report a failed write(2) (EFBIG, ENOSPC) only here
            self.short = (f"the file system {'wrote' if write else 'read'} {got} of {want} bytes "
                          f"({'disk full or file size limit reached' if write else 'file shorter than expected'})")

    def close(self) -> None:
        comm.wait(comm.block().Ibarrier(), self.what)
        self.fh.Close()

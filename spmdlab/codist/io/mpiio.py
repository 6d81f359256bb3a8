"""MPI-IO for the labs: a file opened by every lab of the block, file views made of
MPI datatypes that select a lab's part, and collective reads and writes in rounds.

Datatypes (ROMIO's and HDF5's way of describing a hyperslab): the elements of a Cartesian
product of runs are an ``MPI_Type_indexed`` per dimension, each resized to the extent of
a whole row of that dimension, nested from the fastest-varying dimension outward; for a
local array with arbitrary strides, ``hvector``s of its strides. Every transfer is a
nonblocking collective (``Iread_all``/``Iwrite_all``) waited with ``comm.wait``, so an
abort ends it; the blocking collectives (open, view, close) are entered only after an
interruptible barrier, so no lab waits in them for a lab that failed before.

ROMIO's buffers are capped at ``SPMDLAB_STAGING_MB`` (hints ``cb_buffer_size``,
``ind_rd_buffer_size``, ``ind_wr_buffer_size``): a lab holds its part and at most that.
"""
from __future__ import annotations

import signal
import threading
from typing import Any, List, Sequence

import numpy as np

from ... import settings
from ...runtime import lazy_comm as comm
from .plan import runs

__all__ = ["item_type", "region_type", "contig_strides", "File", "staging_bytes", "no_sigxfsz"]


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


def region_type(sel: Sequence[Any], strides: Sequence[int], item: Any, fortran: bool = False) -> Any:
    """The elements ``sel`` (per dimension a slice or increasing index array) of an array
    with byte ``strides`` (none negative), in C order of the index (Fortran order when
    ``fortran``): per dimension, innermost first, the type is resized to that dimension's
    stride and indexed by the runs of ``sel``."""
    made: List[Any] = []
    t = item
    dims = range(len(sel)) if fortran else range(len(sel) - 1, -1, -1)
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


def _hints() -> Any:
    MPI = comm.MPI
    info = MPI.Info.Create()
    cap = str(min(staging_bytes(), 16 << 20))
    for key in ("cb_buffer_size", "ind_rd_buffer_size", "ind_wr_buffer_size"):
        info.Set(key, cap)
    return info


class File:
    """A file every lab of the block has open (collective open, close)."""

    def __init__(self, path: str, write: bool, what: str) -> None:
        MPI = comm.MPI
        self.what = what
        self.short = ""  # what went wrong in a transfer, if anything (checked by the caller)
        c = comm.block()
        comm.wait(c.Ibarrier(), what)  # all labs are here before the blocking open
        mode = (MPI.MODE_WRONLY | MPI.MODE_CREATE) if write else MPI.MODE_RDONLY
        info = _hints()
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
        request = fh.Iwrite_all(spec) if write else fh.Iread_all(spec)
        status = comm.wait(request, self.what, keep=(buf,))
        want = count * memtype.Get_size()
        got = status.Get_count(comm.MPI.BYTE)
        if got != want and not self.short:
            # ROMIO's nonblocking collectives report a failed write(2) (EFBIG, ENOSPC) only here
            self.short = (f"the file system {'wrote' if write else 'read'} {got} of {want} bytes "
                          f"({'disk full or file size limit reached' if write else 'file shorter than expected'})")

    def close(self) -> None:
        comm.wait(comm.block().Ibarrier(), self.what)
        self.fh.Close()

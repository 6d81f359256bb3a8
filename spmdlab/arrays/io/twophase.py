"""Two-phase reading of a C-order .npy into columns (ROMIO's two-phase collective I/O,
Thakur, Gropp and Lusk, "Data Sieving and Collective I/O in ROMIO", 1999, done by the
labs themselves): the default layout of a matrix splits its last dimension, so a lab's
part is one short stretch per row of the file. Instead every lab reads whole contiguous
row slabs (at most the staging buffer each, the labs' slabs side by side in a round),
and one ``Alltoallw`` per round sends each lab its columns of every slab: from the slab
through a strided vector type, into the receiving part's rows, which are contiguous
there. A lab holds its part and one slab. ROMIO's own collective buffering measured 4x
slower here than the stretch-per-row reads (0.21x vs 1.12x np.load, 0.5 GB, same run).
Off unless ``SPMDLAB_IO_TWO_PHASE=1``: under a load of 8-13 it was not measurably faster
than the stretch-per-row reads (1.9-3.9 s vs 1.5-2.2 s for 0.5 GB), so it is not yet the default.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import settings
from ...lab import lazy_comm as comm
from ...layouts.codistributor import codistributor1d
from .agree import agree, report
from .mpiio import staging_bytes

__all__ = ["fits_two_phase", "read_two_phase"]


def fits_two_phase(target: Any, shape: tuple, fortran: bool, n: int) -> bool:
    """Whether ``target`` splits the last dimension of a C-order file of ``shape``
    (no halo), the case where a lab's part is a short stretch per row."""
    return (settings.io_two_phase() and n > 1 and not fortran and len(shape) >= 2
            and isinstance(target, codistributor1d)
            and target.Dimension == len(shape) and not target.Halo and math.prod(shape) > 0)


def read_two_phase(path: str, offset: int, dtype: np.dtype, shape: tuple, target: Any, part: np.ndarray,
                   what: str) -> None:
    """Fill this lab's ``part`` (rows x its columns, C order) from the file, round by round."""
    c = comm.block()
    lab, n = c.Get_rank() + 1, c.Get_size()
    item = dtype.itemsize
    cols = int(shape[-1])
    rows = math.prod(shape[:-1])
    widths = [int(w) for w in target.Partition]
    starts = [sum(widths[:j]) for j in range(n)]
    step = max(1, staging_bytes() // (cols * item))
    slab = np.empty(min(step, rows) * cols * item, dtype=np.uint8)
    flat = part.reshape(-1).view(np.uint8)
    MPI = comm.MPI
    byte = MPI.BYTE
    mine = None
    with open(path, "rb") as f:
        for base in range(0, rows, n * step):
            spans = [(min(rows, base + k * step), min(rows, base + (k + 1) * step)) for k in range(n)]
            lo, hi = spans[lab - 1]
            if mine is None and hi > lo:
                try:
                    _read_at(f, offset + lo * cols * item, slab[:(hi - lo) * cols * item])
                except Exception as exc:
                    mine = report(exc)
            _exchange(c, slab, flat, spans, lab, widths, starts, cols, item, base, byte, what)
    agree(mine, what, path)


def _read_at(f: Any, at: int, buf: np.ndarray) -> None:
    f.seek(at)
    view = buf.data
    got = 0
    while got < len(view):
        k = f.readinto(view[got:])
        if not k:
            raise ValueError(f"the file is shorter than its header says (at byte {at + got})")
        got += k


def _exchange(c: Any, slab: np.ndarray, flat: np.ndarray, spans: list, lab: int, widths: list[int],
              starts: list[int], cols: int, item: int, base: int, byte: Any, what: str) -> None:
    """One round's ``Alltoallw``: my slab's columns of lab j to lab j; lab k's slab rows
    of my columns into my part (contiguous rows from row ``spans[k][0]``)."""
    n = len(widths)
    lo, hi = spans[lab - 1]
    made = []
    scounts, sdispls, stypes = [], [], []
    for j in range(n):
        if hi > lo and widths[j]:
            t = byte.Create_vector(hi - lo, widths[j] * item, cols * item)
            t.Commit()
            made.append(t)
            scounts.append(1)
            stypes.append(t)
        else:
            scounts.append(0)
            stypes.append(byte)
        sdispls.append(starts[j] * item)
    w = widths[lab - 1] * item
    first = base * w  # the round's rows of my part start here; displacements are C ints
    window = flat[first:spans[-1][1] * w] if w else flat[:0]
    rcounts = [(k1 - k0) * w for k0, k1 in spans]
    rdispls = [(k0 - base) * w for k0, _ in spans]
    try:
        # blocking, entered together after an interruptible barrier (a nonblocking
        # Ialltoallw with derived types progresses only inside MPI_Test: 100x slower)
        comm.wait(c.Ibarrier(), what)
        c.Alltoallw([slab, scounts, sdispls, stypes], [window, rcounts, rdispls, [byte] * n])
    finally:
        for t in made:
            t.Free()

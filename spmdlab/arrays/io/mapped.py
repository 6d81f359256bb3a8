"""Reading parts made of short stretches of a .npy file through memory maps of the file,
one window of whole rows at a time.

A lab whose part is a short stretch of every row (the default layout of a C-order matrix
splits its columns) asks MPI-IO for thousands of small pieces; ROMIO then either reads
the whole file through its data-sieving buffer and keeps half (1.0x ``np.load`` at 2 labs)
or makes one system call per stretch (slower still). Mapped, the file's pages are copied
from the page cache straight into the part, each lab touching only its stretches
(``benchmarks/bench_io.py``, 1 GiB, 2 labs, quiet machine: 0.19 s, 1.86x ``np.load``,
against 0.35 s, 1.02x, through ROMIO's data sieving; ROMIO without it 0.33-0.89 s). A window holds at most the staging
buffer's bytes of the file (at least one row), mapped read-only and unmapped before the
next, so a lab holds its part plus one window, as with MPI-IO. The file is only read, so
the map is safe on any file system that maps files; every lab reports its outcome and the
labs agree on one error.
"""
from __future__ import annotations

import math
import mmap
from collections.abc import Sequence
from typing import Any

import numpy as np

from .agree import agree, report
from .mpiio import staging_bytes

__all__ = ["read_mapped"]


def read_mapped(path: str, offset: int, dtype: np.dtype, shape: tuple, fortran: bool, sels: Sequence[tuple],
                parts: list, what: str) -> None:
    """Fill ``parts[k]`` with the elements ``sels[k]`` of the file (collective: every lab
    calls it, and every lab raises the same error if any lab failed)."""
    mine = None
    try:
        with open(path, "rb") as f:
            for sel, part in zip(sels, parts):
                if part.size:
                    _copy(f.fileno(), offset, dtype, shape, fortran, sel, part)
    except Exception as exc:  # reported by every lab alike
        mine = report(exc)
    agree(mine, what, path)


def _copy(fd: int, offset: int, dtype: np.dtype, shape: tuple, fortran: bool, sel: tuple, part: np.ndarray) -> None:
    """One part, window by window of the file's leading rows (trailing, for Fortran order:
    the file is then the C-order array of the reversed shape, and the part its transpose)."""
    if fortran:
        shape, sel, part = shape[::-1], tuple(sel[::-1]), part.T
    rows = _indices(sel[0])
    row_bytes = math.prod(shape[1:]) * dtype.itemsize
    step = max(1, staging_bytes() // max(row_bytes, 1))
    rest = tuple(_basic(s) for s in sel[1:])
    fancy = any(isinstance(s, np.ndarray) for s in rest)
    done = 0
    while done < rows.size:
        first = int(rows[done])
        take = int(np.searchsorted(rows, first + step, side="left")) - done
        last = int(rows[done + take - 1])
        window = _map(fd, offset + first * row_bytes, (last + 1 - first) * row_bytes)
        try:
            block = np.frombuffer(window[0], dtype, count=(last + 1 - first) * (row_bytes // dtype.itemsize),
                                  offset=window[1]).reshape((last + 1 - first,) + tuple(shape[1:]))
            local = rows[done:done + take] - first
            src = block[local[0]:local[-1] + 1] if local[-1] - local[0] + 1 == take else block[local]
            part[done:done + take] = src[(slice(None),) + rest] if not fancy else src[np.ix_(
                np.arange(take), *[np.arange(s.start, s.stop) if isinstance(s, slice) else s for s in rest])]
            del block, src
        finally:
            try:
                window[0].close()
            except BufferError:  # a view still held by a failing copy: the map closes when it goes
                pass
        done += take


def _map(fd: int, start: int, length: int) -> tuple[mmap.mmap, int]:
    """A read-only map covering ``[start, start + length)``, and where ``start`` is in it."""
    base = start - start % mmap.ALLOCATIONGRANULARITY
    return mmap.mmap(fd, length + start - base, prot=mmap.PROT_READ, offset=base), start - base


def _indices(s: Any) -> np.ndarray:
    return np.arange(s.start, s.stop, dtype=np.int64) if isinstance(s, slice) else np.asarray(s, dtype=np.int64)


def _basic(s: Any) -> Any:
    """A selection as a slice where it is one run, else as an index array."""
    if isinstance(s, slice):
        return s
    idx = np.asarray(s, dtype=np.int64)
    if idx.size and idx[-1] - idx[0] + 1 == idx.size:
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx

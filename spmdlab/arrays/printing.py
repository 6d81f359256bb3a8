"""Printing on the labs: ``labprint`` (pbdMPI's ``comm.print``) and ``D.show(all=True)``
(pbdDMAT's ``print(x, all=TRUE)``: the whole array, row by row, from lab 1).

``labprint(x, all=False, quiet=False)``: ``x`` printed by lab 1 only; with ``all=True``
by every lab in lab order, one lab at a time. pbdMPI's ``quiet=FALSE`` (its default)
puts a ``COMM.RANK = r`` line before each rank's output; here it is ``labindex = k``
(labs are numbered from 1), and ``quiet=True`` leaves it out. Each lab's output reaches
the client through its own socket, so the order of lines of different labs there is not
a property of the labs' clocks: lab 1 prints every lab's text itself, receiving them one
lab after another (point to point on the library's private communicator, each lab's text
only when lab 1 is ready for it), so they appear in lab order under ``Lab 1:``.
``labprint(x)`` (lab 1 only) needs no communication: any lab may call it alone; with
``all=True`` every lab of the block must call it.

``show(D, all=True)`` streams ``D`` to lab 1 in blocks of at most ``SHOW_BLOCK_BYTES``
(a slice ``D[r0:r1]`` gathered to lab 1 at a time), so no lab ever holds the whole array.
"""
from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from ..lab import lazy_comm as comm
from .base import CodistArray, here, layout_text, numlabs_of
from .collectives import EMPTY_BYTES
from .transfer import gather

__all__ = ["labprint", "show", "header", "SHOW_BLOCK_BYTES"]

_TAG = 25026  # on the private communicator: cannot match a user's message
SHOW_BLOCK_BYTES = 1 << 20
_PER_LINE = 8  # elements per line of a 1-D array (R's style: each line starts with its index)


def labprint(x: Any, all: bool = False, quiet: bool = False) -> None:
    """Print ``x`` from lab 1, or (``all=True``) from every lab in lab order, one at a
    time; ``quiet=False`` heads each lab's output with ``labindex = k`` (pbdMPI's
    ``comm.print``). ``all=True`` is collective: every lab of the block calls it."""
    if not isinstance(all, (bool, np.bool_)) or not isinstance(quiet, (bool, np.bool_)):
        raise TypeError(f"labprint: all= and quiet= are True or False, got all={all!r}, quiet={quiet!r}")
    lab, n = here()
    if not all or n == 1:
        if lab == 1:
            _write(_text(x, lab, quiet))
        return
    if lab != 1:
        data = np.frombuffer(_text(x, lab, quiet).encode("utf-8"), dtype=np.uint8)
        size = np.array([data.size], dtype=np.int64)
        c = comm.private_comm("labprint")
        comm.wait_all([c.Isend(size, 0, _TAG), c.Isend(data if data.size else EMPTY_BYTES, 0, _TAG)],
                      "labprint", keep=(size, data))
        return
    _write(_text(x, 1, quiet))
    c = comm.private_comm("labprint")
    for k in range(2, n + 1):
        size = np.zeros(1, dtype=np.int64)
        comm.wait(c.Irecv(size, k - 1, _TAG), "labprint", keep=(size,))
        data = np.empty(int(size[0]), dtype=np.uint8)
        comm.wait(c.Irecv(data, k - 1, _TAG), "labprint", keep=(data,))
        _write(data.tobytes().decode("utf-8"))


def _text(x: Any, lab: int, quiet: bool) -> str:
    text = str(x)
    return text if quiet else f"labindex = {lab}\n{text}"


def _write(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def header(D: CodistArray) -> str:
    """A codistributed array's global description: size, dtype, layout (Dagger's
    partitions for block layouts), mode."""
    codist = D.codistributor
    parts = getattr(codist, "partitions_text", None)
    n = numlabs_of(codist)
    text = f"codistributed array, shape {D.shape}, dtype {D.dtype}, on {n} lab{'s' if n != 1 else ''}"
    text += f" {parts()}" if parts is not None else ""
    text += f"\n  {layout_text(codist)}"
    return text + (f"\n  mode: {D.mode}" if D.mode != "replica" else "")


def show(D: Any, all: bool = False) -> None:
    """Print ``D``'s header from lab 1; with ``all=True`` then every element, row by row
    (a row is ``D[i, j, ..., :]``, headed by its index; a vector prints 8 elements a
    line, headed by the first one's index, as R does). Collective when ``all=True``."""
    if not isinstance(all, (bool, np.bool_)):
        raise TypeError(f"show: all= is True or False, got {all!r}")
    lab, _ = here()
    if lab == 1:
        _write(header(D))
    if not all or D.size == 0:
        return
    row_bytes = max(1, math.prod(D.shape[1:]) * D.dtype.itemsize)
    step = max(1, SHOW_BLOCK_BYTES // row_bytes)
    if D.ndim == 1:
        step = max(_PER_LINE, step // _PER_LINE * _PER_LINE)
    for r0 in range(0, D.shape[0], step):
        block = gather(D[r0:r0 + step], 1)  # every lab takes part; only lab 1 gets the rows
        if lab == 1:
            _write(_rows(block, r0))


def _rows(block: np.ndarray, r0: int) -> str:
    """The lines of a block of rows starting at global row ``r0``."""
    if block.ndim == 1:
        return "\n".join(f"[{r0 + i}] " + " ".join(str(v) for v in block[i:i + _PER_LINE])
                         for i in range(0, block.shape[0], _PER_LINE))
    lines = []
    for index in np.ndindex(block.shape[:-1]):
        where = ", ".join(str(i + (r0 if d == 0 else 0)) for d, i in enumerate(index))
        row = np.array2string(block[index], threshold=sys.maxsize, max_line_width=sys.maxsize)
        lines.append(f"[{where}, :] {row}")
    return "\n".join(lines)

"""Reading and writing a lab's part box by box through a library that takes slices
(zarr, h5py): the shared steps of ``zarrio`` and ``hdf5``.

A box is a product of runs of a lab's selection (``plan.boxes``); a box larger than the
staging buffer (``SPMDLAB_STAGING_MB``) is cut along its first dimension, so a lab holds
its part plus at most one buffer. Writes go to a temporary name that lab 1 renames
when every lab has written (``commit``), so a failed write leaves no complete-looking file.
"""
from __future__ import annotations

import math
import os
import resource
import shutil
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..base import check_codist_arg, complete, here, parts_of
from .agree import agree, report
from .mpiio import staging_bytes
from .npy import build_result, check_dtype_io
from .plan import boxes, check_layout_fits, owned, part_shape, stored

__all__ = ["pieces", "read_parts", "write_parts", "commit", "target_layout", "agree_meta", "check_room"]


def pieces(gsel: Sequence[Any], lsel: Sequence[Any] | None, itemsize: int) -> Iterator[tuple]:
    """The boxes of a selection, each cut along its first dimension to at most one
    staging buffer."""
    limit = staging_bytes()
    for g, lo in boxes(gsel, lsel):
        shape = [s.stop - s.start for s in g]
        if not g or math.prod(shape) == 0:
            if g and math.prod(shape) == 0:
                continue
            yield g, lo
            continue
        row = math.prod(shape[1:]) * itemsize
        step = max(1, limit // max(row, 1))
        for a in range(0, shape[0], step):
            b = min(a + step, shape[0])
            yield ((slice(g[0].start + a, g[0].start + b),) + g[1:],
                   (slice(lo[0].start + a, lo[0].start + b),) + lo[1:])


def target_layout(codist: Any, shape: tuple, n: int, what: str, path: Any) -> Any:
    check_codist_arg(codist, what)
    why = check_layout_fits(codist, shape, n, str(path)) if codist is not None else \
        ("the store holds a 0-d array (a scalar)" if not shape else None)
    if why:
        raise ValueError(f"{what} {str(path)!r}: {why}")
    try:
        return complete(codist, shape, n)
    except ValueError as exc:
        raise ValueError(f"{what} {str(path)!r}: {exc}") from None


def agree_meta(meta: Any, mine: Any, what: str, path: Any) -> tuple:
    """Every lab's ``(shape, dtype str)`` agreed; the first lab's returned."""
    metas = agree(mine, what, path, meta)
    if any(m != metas[0] for m in metas):
        detail = "; ".join(f"lab {k + 1}: {m}" for k, m in enumerate(metas))
        raise ValueError(f"{what} {str(path)!r}: the labs see different data under this name ({detail})")
    shape, dstr = metas[0]
    dtype = np.dtype(dstr)
    why = check_dtype_io(dtype)
    if why:
        raise TypeError(f"{what} {str(path)!r}: {why}")
    return tuple(shape), dtype


def read_parts(read: Callable[[np.ndarray, tuple, tuple], None], shape: tuple, dtype: np.dtype, codist: Any,
               what: str, path: Any) -> Any:
    """The codistributed array whose parts ``read(part, global box, local box)`` fills."""
    lab, n = here()
    target = target_layout(codist, shape, n, what, path)
    parts = [np.empty(part_shape(sel), dtype=dtype) for sel in stored(target, lab, n)]
    mine = None
    try:
        for part, sel in zip(parts, stored(target, lab, n)):
            for g, lo in pieces(sel, None, dtype.itemsize):
                read(part, g, lo)
    except Exception as exc:
        mine = report(exc)
    agree(mine, what, path)
    return build_result(parts, dtype, target, n)


def write_parts(D: Any, write: Callable[[tuple, np.ndarray], None], cut: bool = True) -> None:
    """``write(global box, values)`` for every box of every piece this lab owns; boxes
    cut to the staging size unless ``cut`` is False (zarr encodes chunk by chunk from the
    view it is given, and a cut off the chunk grid would make it rewrite chunks)."""
    lab, n = here()
    parts = parts_of(D)
    for k, gsel, lsel in owned(D.codistributor, lab, n):
        for g, lo in (pieces(gsel, lsel, D.dtype.itemsize) if cut else boxes(gsel, lsel)):
            write(g, parts[k][lo])


def commit(tmp: str | None, path: str | None, mine: Any, what: str) -> None:
    """Agree on every lab's outcome; lab 1 then moves ``tmp`` into place (replacing a
    file or folder there) or removes it; every lab raises the agreed error, if any."""
    lab, _ = here()
    failed = None
    try:
        agree(mine, what, path)
    except Exception as exc:
        failed = exc
    last = None
    if lab == 1 and tmp is not None and path is not None:
        try:
            if failed is None:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                os.replace(tmp, path)
            else:
                _remove(tmp)
        except Exception as exc:
            last = report(exc)
    if failed is not None:
        raise failed
    agree(last, what, path)


def check_room(path: str, nbytes: int) -> None:
    """OSError unless a file of ``nbytes`` fits beside ``path``: under this lab's file
    size limit (RLIMIT_FSIZE) and in its disk's free space. HDF5 may crash on a write
    the disk refuses, so its writes check first."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and nbytes > limit:
        raise OSError(f"the file needs about {nbytes} bytes but this lab's file size limit (RLIMIT_FSIZE) is {limit}")
    free = shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
    if nbytes > free:
        raise OSError(f"the file needs about {nbytes} bytes but its disk has {free} bytes free")


def _remove(p: str) -> None:
    if os.path.isdir(p):
        shutil.rmtree(p, ignore_errors=True)
    elif os.path.exists(p):
        os.remove(p)

"""A folder or glob of files as one distributed array (MATLAB's datastore, pbdR's
per-rank files): the files, in sorted name order, are dealt to the labs in contiguous
runs (``codistributor1d.defaultPartition``), every lab reads its own with ``reader`` and
joins them along ``axis``; the parts become a 1-D layout along that axis.
"""
from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ...layouts.codistributor import codistributor1d
from ..array import codistributed
from ..base import here
from .agree import agree, report

__all__ = ["read_files", "matching"]


def matching(pattern: str) -> list[str]:
    """The files a pattern names: a folder's files, or a glob's matches, sorted."""
    if os.path.isdir(pattern):
        return sorted(os.path.join(pattern, f) for f in os.listdir(pattern)
                      if os.path.isfile(os.path.join(pattern, f)))
    return sorted(p for p in glob.glob(pattern) if os.path.isfile(p))


def read_files(pattern: Any, reader: Callable[[str], Any] = np.load, axis: int = 0) -> Any:
    """The arrays in the files ``pattern`` names, joined along ``axis`` (0-based), each
    lab reading only its own files."""
    what = "spmdlab.read_files"
    pattern = os.fspath(pattern)
    lab, n = here()
    names = matching(pattern)
    digest = hashlib.sha1("\0".join(names).encode()).hexdigest()
    mine = None if names else ("FileNotFoundError", "no files match")
    seen = agree(mine, what, pattern, (len(names), digest))
    if any(s != seen[0] for s in seen):
        detail = "; ".join(f"lab {k + 1}: {s[0]} files" for k, s in enumerate(seen))
        raise ValueError(f"{what} {pattern!r}: the labs see different files ({detail})")
    counts = _partition(len(names), n)  # codistributor1d's default partition of the files
    start = sum(counts[:lab - 1])
    mine, shapes = None, []
    mine_names = names[start:start + counts[lab - 1]]
    try:
        shapes = [_probe(reader, name) for name in mine_names]
        meta = _joined(shapes, axis)
    except Exception as exc:
        mine, meta = report(exc), None
    metas = agree(mine, what, pattern, meta)
    part, dtype, ax = _allocate(metas, axis, what, pattern)
    mine = None
    try:
        at = 0
        for name, (shape, _) in zip(mine_names, shapes):
            width = shape[ax] if len(shape) else 1
            index = (slice(None),) * ax + (slice(at, at + width),)
            part[index] = _read(reader, name)
            at += width
    except Exception as exc:
        mine = report(exc)
    agree(mine, what, pattern)
    sizes = [0 if m is None else m[0][ax] for m in metas]
    codist = codistributor1d(ax + 1, sizes, part.shape[:ax] + (sum(sizes),) + part.shape[ax + 1:])
    return codistributed.from_parts(part, codist)


def _read(reader: Callable[[str], Any], name: str) -> np.ndarray:
    try:
        return np.asarray(reader(name))
    except Exception as exc:
        raise type(exc)(f"reading {name!r}: {exc}") from None


def _probe(reader: Callable[[str], Any], name: str) -> tuple:
    """A file's (shape, dtype) without its data where the reader allows (``np.load`` of
    a .npy: its header, through a memory map); other readers read the file once here
    and once more to fill the part, so a lab holds its part and one file."""
    if reader is np.load:
        try:
            a = np.load(name, mmap_mode="r")
            if isinstance(a, np.ndarray):
                return a.shape, a.dtype.str
        except Exception:
            pass
    a = _read(reader, name)
    return a.shape, a.dtype.str


def _joined(shapes: list, axis: int) -> Any:
    """The shape and dtype of this lab's files joined along ``axis``; None for no files."""
    if not shapes:
        return None
    ax = _axis(axis, len(shapes[0][0]))
    rest = {s[:ax] + s[ax + 1:] for s, _ in shapes}
    if len(rest) > 1 or len({len(s) for s, _ in shapes}) > 1:
        raise ValueError(f"the files' arrays do not join along axis {axis}: shapes "
                         f"{', '.join(str(s) for s, _ in shapes)}")
    shape = shapes[0][0][:ax] + (sum(s[ax] for s, _ in shapes),) + shapes[0][0][ax + 1:]
    return shape, np.result_type(*[np.dtype(d) for _, d in shapes]).str


def _partition(count: int, n: int) -> list[int]:
    base, extra = divmod(count, n)
    return [base + (1 if k < extra else 0) for k in range(n)]


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _allocate(metas: list, axis: int, what: str, pattern: str) -> tuple:
    """This lab's part, allocated once in the labs' common dtype, and that dtype and axis."""
    lab, n = here()
    have = [(k + 1, m) for k, m in enumerate(metas) if m is not None]
    shape0 = have[0][1][0]
    ax = _axis(axis, len(shape0))
    rest = {(m[0][:ax] + m[0][ax + 1:]) for _, m in have}
    if len(rest) > 1 or len({len(m[0]) for _, m in have}) > 1:
        detail = "; ".join(f"lab {k}: {m[0]}" for k, m in have)
        raise ValueError(f"{what} {pattern!r}: the files' arrays do not join along axis {axis}: shapes {detail}")
    dtype = np.result_type(*[np.dtype(m[1]) for _, m in have])
    mine = metas[lab - 1]
    shape = mine[0] if mine is not None else shape0[:ax] + (0,) + shape0[ax + 1:]
    return np.empty(shape, dtype=dtype), dtype, ax

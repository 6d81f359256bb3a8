"""A folder or glob of files as one distributed array (MATLAB's datastore, pbdR's
per-rank files): the files, in sorted name order, are dealt to the labs in contiguous
runs (``codistributor1d.defaultPartition``), every lab reads its own with ``reader`` and
joins them along ``axis``; the parts become a 1-D layout along that axis.
"""
from __future__ import annotations

import glob
import hashlib
import os
from typing import Any, Callable, List

import numpy as np

from ...codistributor import codistributor1d
from ..array import codistributed
from ..base import here
from .agree import agree, report

__all__ = ["read_files", "matching"]


def matching(pattern: str) -> List[str]:
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
    mine, part, meta = None, None, None
    try:
        arrays = []
        for name in names[start:start + counts[lab - 1]]:
            try:
                arrays.append(np.asarray(reader(name)))
            except Exception as exc:
                raise type(exc)(f"reading {name!r}: {exc}") from None
        if arrays:
            ax = _axis(axis, arrays[0].ndim)
            part = np.concatenate(arrays, axis=ax) if len(arrays) > 1 else arrays[0]
            meta = (part.shape, part.dtype.str)
    except Exception as exc:
        mine = report(exc)
    metas = agree(mine, what, pattern, meta)
    return _join(part, [m for m in metas], axis, what, pattern)


def _partition(count: int, n: int) -> List[int]:
    base, extra = divmod(count, n)
    return [base + (1 if k < extra else 0) for k in range(n)]


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _join(part: Any, metas: list, axis: int, what: str, pattern: str) -> Any:
    lab, n = here()
    have = [(k + 1, m) for k, m in enumerate(metas) if m is not None]
    shape0 = have[0][1][0]
    ax = _axis(axis, len(shape0))
    rest = {(m[0][:ax] + m[0][ax + 1:]) for _, m in have}
    if len(rest) > 1 or len({len(m[0]) for _, m in have}) > 1:
        detail = "; ".join(f"lab {k}: {m[0]}" for k, m in have)
        raise ValueError(f"{what} {pattern!r}: the files' arrays do not join along axis {axis}: shapes {detail}")
    dtype = np.result_type(*[np.dtype(m[1]) for _, m in have])
    sizes = [0 if m is None else m[0][ax] for m in metas]
    gsize = shape0[:ax] + (sum(sizes),) + shape0[ax + 1:]
    if part is None:
        part = np.empty(shape0[:ax] + (0,) + shape0[ax + 1:], dtype=dtype)
    codist = codistributor1d(ax + 1, sizes, gsize)
    return codistributed._from_local(part.astype(dtype, copy=False), codist)

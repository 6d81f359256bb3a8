"""zarr v3 stores on the labs: ``to_zarr`` (each lab writes only its own chunks) and
``from_zarr`` (each lab reads its part of any chunking), as dask.array and xarray use them.

Chunks follow the layout by default (the 1-D partition, the 2dbc or block size), capped
at one staging buffer; a layout whose pieces do not fall on whole chunks is first moved to
a block layout of those chunks (``codistributorBlocks(chunks, 'blockrow')``), so no two labs
ever write one chunk. Compression is zarr's default (zstd). A store given as a path is
written to a temporary folder and renamed into place when every lab has written.
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from ...layouts.blocks import codistributorBlocks
from ...layouts.codistributor import codistributor1d, codistributor2dbc
from ..base import here, need
from ..reshard import changeMode
from ..transfer import redistribute
from .agree import agree, report
from .boxes import agree_meta, commit, read_parts, write_parts
from .mpiio import no_sigxfsz, staging_bytes
from .npy import check_dtype_io, temporary_name
from .plan import aligned

__all__ = ["to_zarr", "from_zarr", "default_chunks"]


def _zarr() -> Any:
    import zarr  # heavy: loaded on first use

    return zarr


def _fit(chunks: list, shape: Sequence[int], free: Sequence[bool], itemsize: int, limit: int) -> tuple:
    """Shrink ``chunks`` until one chunk fits in ``limit`` bytes: free dimensions (not
    distributed) by halves, distributed ones by a factor, so chunk edges stay on the parts'."""
    chunks = [max(1, int(c)) for c in chunks]
    while math.prod(chunks) * itemsize > limit and max(chunks) > 1:
        d = max(range(len(chunks)), key=lambda k: (free[k], chunks[k]))
        c = chunks[d]
        if free[d] or c % 2 == 0:
            chunks[d] = (c + 1) // 2 if free[d] else c // 2
        else:
            f = next((p for p in range(3, int(c ** 0.5) + 1, 2) if c % p == 0), c)
            chunks[d] = c // f
    return tuple(chunks)


def default_chunks(codist: Any, shape: Sequence[int], n: int, itemsize: int) -> tuple:
    """Chunks that follow the layout: the parts' edges fall on chunk edges where it can."""
    free = [True] * len(shape)
    chunks = [max(1, s) for s in shape]
    if isinstance(codist, codistributor1d) and codist.Dimension is not None and codist.Partition is not None:
        d = codist.Dimension - 1
        chunks[d] = max([p for p in codist.Partition if p] or [1])
        free[d] = False
    elif isinstance(codist, codistributor2dbc):
        chunks, free = list(codist.BlockSizes), [False, False]
    elif isinstance(codist, codistributorBlocks):
        chunks, free = [int(b) for b in codist.BlockSize], [False] * len(shape)
    else:
        chunks[0] = max(1, -(-shape[0] // n)) if shape else 1
    return _fit(chunks, shape, free, itemsize, min(staging_bytes(), 16 << 20))


def _check_chunks(chunks: Any, ndim: int, what: str) -> tuple:
    try:
        c = tuple(int(x) for x in chunks)
    except TypeError:
        raise TypeError(f"{what}: chunks must be a tuple of positive ints, got {chunks!r}") from None
    if len(c) != ndim or min(c, default=1) < 1:
        raise ValueError(f"{what}: chunks must be {ndim} positive ints (one per dimension), got {chunks!r}")
    return c


def to_zarr(D: Any, store: Any, chunks: Sequence[int] | None = None) -> None:
    """Write ``D`` as a zarr v3 array at ``store`` (a path or a zarr store); each lab
    writes only the chunks it owns."""
    what = "spmdlab.to_zarr"
    D = need(D, what)
    why = check_dtype_io(D.dtype)
    if why:
        raise TypeError(f"{what}: {why}")
    if D.mode != "replica":
        D = changeMode(D, "replica")
    lab, n = here()
    no_sigxfsz()
    c = default_chunks(D.codistributor, D.shape, n, D.dtype.itemsize) if chunks is None else \
        _check_chunks(chunks, D.ndim, what)
    if not aligned(D.codistributor, n, c):
        blocks: Any = codistributorBlocks(c, "blockrow")  # redistribute takes every layout; its type names two
        D = redistribute(D, blocks)
    is_path = isinstance(store, (str, os.PathLike))
    path = os.fspath(store) if is_path else None
    mine, tmp = None, None
    if lab == 1:
        try:
            tmp = temporary_name(path) if path is not None else None
            _zarr().create_array(tmp if is_path else store, shape=D.shape, dtype=D.dtype, chunks=c,
                                 overwrite=True)
        except Exception as exc:
            mine = report(exc)
    tmp = agree(mine, what, store, tmp)[0]
    mine = None
    try:
        arr = _zarr().open_array(tmp if is_path else store, mode="r+")

        def write(g: tuple, values: Any) -> None:
            arr[g] = values

        write_parts(D, write, cut=False)
    except Exception as exc:
        mine = report(exc)
    commit(tmp, path, mine, what)


def from_zarr(store: Any, codist: Any = None) -> Any:
    """The zarr array at ``store``, codistributed with ``codist`` (default: the default
    codistributor1d); each lab reads only its own part, whatever the chunking."""
    what = "spmdlab.from_zarr"
    mine, meta, arr = None, None, None
    try:
        if isinstance(store, (str, os.PathLike)) and not os.path.exists(store):
            raise FileNotFoundError(2, "No such file or directory")
        arr = _zarr().open_array(store, mode="r")
        meta = (tuple(arr.shape), arr.dtype.str if hasattr(arr.dtype, "str") else str(arr.dtype))
    except Exception as exc:
        mine = report(exc)
    shape, dtype = agree_meta(meta, mine, what, store)
    assert arr is not None, "agree_meta raises on every lab when a lab could not open the array"

    def read(part: Any, g: tuple, lo: tuple) -> None:
        part[lo] = arr[g]

    return read_parts(read, shape, dtype, codist, what, store)

"""One layout of every kind for an array of a given shape on n labs, by name: the layouts
a new function must work on (tests of one family of functions iterate over these instead
of keeping their own list)."""
from __future__ import annotations

import sys

import cloudpickle
import numpy as np

from spmdlab import codistributor1d, codistributor2dbc, codistributorBlocks, codistributorChunks

__all__ = ["every_kind"]

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # called on the labs


def every_kind(shape: tuple, n: int) -> dict:
    """``{name: codistributor}``: the default (None); by each dimension, even, all on lab 1
    and uneven with empty labs between; a halo; blocks by rows and cyclic; for matrices 2-D
    block-cyclic with blocks of 1 and 64 and blocks assigned off the grid; overlapping chunks."""
    nd = len(shape)
    out: dict = {"default": None}
    for d in range(1, nd + 1):
        m = shape[d - 1]
        out[f"1d dim{d}"] = codistributor1d(d, None, shape)
        out[f"1d dim{d} on lab 1"] = codistributor1d(d, [m] + [0] * (n - 1), shape)
        if n > 1:
            out[f"1d dim{d} uneven"] = codistributor1d(d, [m - m // 2] + [0] * (n - 2) + [m // 2], shape)
    out["halo"] = codistributor1d(1, None, shape, halo=1)
    out["blocks cyclicrow"] = codistributorBlocks((2,) * nd, "cyclicrow", shape)
    out["blocks blockrow"] = codistributorBlocks((1,) + (2,) * (nd - 1), "blockrow", shape)
    if nd == 2:
        out["2dbc b1"] = codistributor2dbc(None, 1)
        out["2dbc b64"] = codistributor2dbc(None, 64)
        out["blocks off the grid"] = codistributorBlocks((2, 3), np.array([[1, min(2, n)], [min(2, n), 1]]), shape)
    starts = np.concatenate(([0], np.cumsum(codistributor1d.defaultPartition(shape[0], n))))
    rest = (slice(None),) * (nd - 1)
    out["chunks overlapping"] = codistributorChunks(
        {k: [(slice(max(0, int(starts[k - 1]) - 1), min(shape[0], int(starts[k]) + 1)),) + rest]
         for k in range(1, n + 1)}, shape)
    return out

"""``fftn`` of an array of three or more dimensions by pencils.

An array distributed along its last dimension z (a slab of whole x-y planes per lab,
MATLAB's default layout) transforms every other axis locally; for z it goes to
*pencils*: whole lines along z, the x-y positions (flattened) split evenly over the
labs, so every lab gets work even when x and y are shorter than the number of labs.
The array seen as the matrix M[(x, y), z] goes from columns to rows and back, two slab
transposes (``fft.pipeline``, the x-y transforms fused into the chunks of the first,
the z transform into those of the second; without a staging window the transforms
and then one ``Alltoallv`` each). An array distributed along its first dimension is
the mirror image (M[x, (y, z)], pencils along x).

This is the pencil decomposition of P3DFFT and mpi4py-fft (Pekurovsky 2012; Dalcin,
Mortensen, Keyes 2019) with the process grid flattened to one dimension over the two
other axes: on the few labs of one machine one all-to-all there and one back, where a
p1 x p2 grid takes two each way.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np

from .. import threads
from ..base import here
from . import exchange as fft_exchange
from . import pipeline
from .plan import default_partition

__all__ = ["transform"]


def _exchange(local: np.ndarray, n1: int, n2: int, rows: Sequence[int], cols: Sequence[int],
              pre: pipeline.Pre, to_rows: bool) -> np.ndarray:
    """``pre`` of each chunk and one slab transpose of the n1 x n2 matrix (pipelined, or
    the whole part's ``pre`` then one ``Alltoallv``)."""
    if to_rows:
        out = pipeline.cols_to_rows(local, n1, n2, rows, cols, pre, "fftn")
    else:
        out = pipeline.rows_to_cols(local, n1, n2, rows, cols, pre, "fftn")
    if out is not None:
        return out
    buf = np.empty(local.shape, dtype=local.dtype)
    pre(local, buf, 0)
    return fft_exchange.slab_transpose(buf, n1, n2, list(rows), list(cols), not to_rows)


def transform(local: np.ndarray, shape: Tuple[int, ...], part: Sequence[int], d: int, axes: Sequence[int],
              kind: str, norm: Optional[str]) -> Optional[np.ndarray]:
    """This lab's part, in the same layout, of the complex transform ``kind`` ("c2c-" or
    "c2c+") along the distinct ``axes`` (lengths kept) of an array of ``shape`` laid out
    along dimension ``d`` (0-based) with ``part``; None when pencils do not apply (fewer
    than three dimensions, ``d`` not first or last nor transformed, one lab)."""
    _, p = here()
    ndim = len(shape)
    if p == 1 or ndim < 3 or d not in (0, ndim - 1) or d not in axes or 0 in shape:
        return None
    me = here()[0] - 1
    forward, workers = kind == "c2c-", threads.fft_workers(local.size)
    others = [a for a in axes if a != d]
    if d == ndim - 1:
        n1, n2, inner = math.prod(shape[:-1]), shape[-1], shape[:-1]
        rows, cols = default_partition(n1, p), list(part)

        def planes(src: np.ndarray, buf: np.ndarray, j0: int) -> None:  # chunks of columns (n1, w)
            if not others:
                np.copyto(buf, src)
                return
            w = buf.shape[1]
            pipeline.fft_into(src.reshape((*inner, w)), buf.reshape((*inner, w)), others, forward, norm, workers)

        def lines(src: np.ndarray, buf: np.ndarray, i0: int) -> None:  # chunks of pencils (h, n2)
            pipeline.fft_into(src, buf, (1,), forward, norm, workers)

        mid = _exchange(local.reshape(n1, cols[me]), n1, n2, rows, cols, planes, True)
        return _exchange(mid, n1, n2, rows, cols, lines, False).reshape(local.shape)
    n1, n2, inner = shape[0], math.prod(shape[1:]), shape[1:]
    rows, cols = list(part), default_partition(n2, p)

    def slabs(src: np.ndarray, buf: np.ndarray, i0: int) -> None:  # chunks of rows (h, n2)
        if not others:
            np.copyto(buf, src)
            return
        h = buf.shape[0]
        pipeline.fft_into(src.reshape((h, *inner)), buf.reshape((h, *inner)), others, forward, norm, workers)

    def pencils(src: np.ndarray, buf: np.ndarray, j0: int) -> None:  # chunks of pencils (n1, w)
        pipeline.fft_into(src, buf, (0,), forward, norm, workers)

    mid = _exchange(local.reshape(rows[me], n2), n1, n2, rows, cols, slabs, False)
    return _exchange(mid, n1, n2, rows, cols, pencils, True).reshape(local.shape)

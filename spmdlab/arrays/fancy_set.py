"""Assigning through index arrays: ``D[idx] = v``, ``D[:, idx] = v``, ``D[mask_of_rows] = v``,
``D[mask] += 1`` (Python reads, adds, then assigns), with ``v`` a scalar, a numpy array or
a codistributed array, and numpy's semantics: ``v`` broadcasts to the shape ``D[idx]``
would have, is cast as numpy casts it, and of repeated indices the last write wins.

The work is laid out as ``fancy`` lays out the result (the *keep* rule: each lab writes
its own part with numpy; else ``fancy.plan`` with a layout whose lab order follows the C
order of the indices, so that the inspector–executor ``scatter.push`` (PETSc's
VecScatter, PARTI) delivers repeated writes to an owner in numpy's order). A
codistributed value is moved to that layout first (one redistribute); the array is never
gathered.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..layouts.codistributor import codistributor1d
from ..layouts.regions import take
from .base import CodistArray
from .fancy import block_shape, check, coords, dist_dim, keeps, local_key, numpy_key, parse, plan, whole_arrays
from .layout import labs_of
from .scatter import owners_offsets, push
from .transfer import gather, redistribute

__all__ = ["fancy_set"]


def _probe(value: Any, dtype: np.dtype) -> None:
    """numpy's own error (or warning) for assigning ``value``'s kind into ``dtype``, on every lab."""
    probe = np.zeros(1, dtype=dtype)
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        probe[[0]] = value  # a Python complex into floats is numpy's TypeError
        return
    v = np.asarray(value)
    if v.size:
        probe[[0]] = v.reshape(-1)[:1]


def _value(value: Any, R: tuple, what: str) -> Any:
    """The value as a numpy array broadcast to R, or a codistributed array of shape R."""
    if isinstance(value, CodistArray):
        if tuple(value.shape) == R:
            labs_of(value, what)
            return value
        value = gather(value)
    v = np.asarray(value)
    while v.ndim > len(R) and v.shape[0] == 1:
        v = v[0]
    try:
        return np.broadcast_to(v, R)
    except ValueError:
        raise ValueError(f"shape mismatch: value array of shape {np.shape(value)} could not be broadcast "
                         f"to indexing result of shape {R}") from None


def fancy_set(D: CodistArray, key: Any, value: Any) -> None:
    """``D[key] = value`` for a key with index arrays."""
    what = "indexed assignment D[...] = value"
    lab, n = labs_of(D, what)
    G = tuple(D.shape)
    F = parse(key, G, what, D._codist)
    v = _value(value, F.R, what)
    dtype = D._local.dtype
    _probe(np.zeros(1, v.dtype) if isinstance(v, CodistArray) else value, dtype)
    if n == 1 or keeps(D, F):
        arrays = check(F, whole_arrays(F), n, what, whole=True)
        if n == 1:
            lkey, counts = numpy_key(F, arrays), [F.R[0]]
            layout = None
        else:
            lkey, counts = local_key(D, F, arrays, lab, n)
            layout = F.rdim[dist_dim(D._codist)] + 1
        block = _block(v, layout, counts, F.R, lab)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's ComplexWarning came from _probe, once
            D._local[lkey] = block
        return
    P = plan(D, F, n, lab, True, what)
    pieces = check(F, P.pieces, n, what)
    owner, off, shift = owners_offsets(D._codist, G, coords(F, P, pieces), n)
    if isinstance(v, CodistArray):
        vals = v._local if v._codist == P.layout else redistribute(v, P.layout)._local
    else:
        vals = take(v, P.block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals = np.ascontiguousarray(np.asarray(vals).astype(dtype, copy=False)).reshape(-1)
    assert vals.size == int(np.prod(block_shape(F, P)))
    push(D._local, owner, off, shift, vals, n, what)


def _block(v: Any, dim: int | None, counts: list, R: tuple, lab: int) -> Any:
    """This lab's block of the value under the *keep* layout (``dim`` 1-based; None: all)."""
    if dim is None:
        return v._local if isinstance(v, CodistArray) else v
    layout = codistributor1d(dim, counts, R)
    if isinstance(v, CodistArray):
        return v._local if v._codist == layout else redistribute(v, layout)._local
    bounds = np.concatenate(([0], np.cumsum(counts)))
    index = [slice(None)] * len(R)
    index[dim - 1] = slice(int(bounds[lab - 1]), int(bounds[lab]))
    return v[tuple(index)]

"""The layout protocol's invariants, checked on any complete codistributor (pure, no MPI).

Used by test_layouts_blocks.py, test_layouts_chunks.py and the halo cases of
test_codistributor.py: the owned pieces of all labs tile the array exactly once, each
piece sits in its chunk at the stated positions, parts of layouts that are not chunked
are ``A[np.ix_(*localIndices)]``, and ``ownerOf`` agrees with the pieces.
"""
from __future__ import annotations

import math

import numpy as np
import pytest


def sel_array(s) -> np.ndarray:
    if isinstance(s, slice):
        assert s.step is None and 0 <= s.start <= s.stop, s
        return np.arange(s.start, s.stop, dtype=np.int64)
    a = np.asarray(s)
    assert a.dtype == np.int64 and a.ndim == 1 and np.all(np.diff(a) > 0), a
    return a


def ix(sel) -> tuple:
    return np.ix_(*[sel_array(s) for s in sel])


def eq(a, b) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and np.array_equal(a, b), (a, b)


def check_protocol(c, shape, n, *, ndim_index_ok: bool = True):
    """Check every protocol invariant of ``c`` completed for ``shape`` on ``n`` labs; return
    ``(complete layout, owner map, number of labs storing each element, stored parts)``."""
    c = c.complete(shape, n)
    assert c.isComplete() and c.NumLabs == n and c.GlobalSize == tuple(shape)
    assert c.complete(shape, n) == c and hash(c.complete(shape, n)) == hash(c)
    A = np.arange(math.prod(shape)).reshape(shape)
    owner = np.zeros(shape, dtype=np.int64)
    owned = np.zeros(shape, dtype=np.int64)
    stored = np.zeros(shape, dtype=np.int64)
    chunked = c.isChunked(n)
    parts = {}
    for lab in range(1, n + 1):
        sels = c.chunkSelections(lab, n)
        assert all(len(s) == len(shape) for s in sels)
        if not chunked:
            assert len(sels) == 1
            sel = c.localSelection(lab, n)
            for a, b in zip(sel, sels[0]):
                eq(sel_array(a), sel_array(b))
            idx = c.localIndices(lab, n)
            assert c.localShape(lab, n) == tuple(len(a) for a in idx)
            for d, a in enumerate(idx):
                eq(a, sel_array(sel[d]))
                eq(c.globalIndices(d + 1, lab, n), a)
                eq(c.globalIndices(lab=lab, numlabs=n, axis=d), a)
        else:
            for what in ("localSelection", "localShape", "localIndices"):
                with pytest.raises(ValueError, match="list of chunks"):
                    getattr(c, what)(lab, n)
            with pytest.raises(ValueError, match="use chunkSelections"):
                c.globalIndices(1, lab, n)
        lab_parts = [A[ix(sel)] for sel in sels]
        parts[lab] = lab_parts
        held = np.zeros(shape, dtype=bool)
        for sel in sels:
            held[ix(sel)] = True
        stored += held
        for k, g, loc in c.ownedPieces(lab, n):
            assert 0 <= k < len(sels)
            eq(lab_parts[k][ix(loc)], A[ix(g)])
            owned[ix(g)] += 1
            owner[ix(g)] = lab
            assert held[ix(g)].all()
        text = c.describe_slice(lab, n)
        assert text.startswith("This lab stores ") and text.endswith("."), text
    assert np.all(owned == 1), "owned pieces must tile the array exactly once"
    if A.size:
        G = tuple(np.indices(shape).reshape(len(shape), -1))
        eq(c.ownerOf(G, n), owner.reshape(-1))
        last = tuple(s - 1 for s in shape)
        got = c.ownerOf(last, n)
        assert type(got) is int and got == owner[last]
        if len(shape) == 1:
            eq(c.ownerOf(G[0], n), owner)
            assert c.ownerOf(shape[0] - 1, n) == owner[-1]
    return c, owner, stored, parts

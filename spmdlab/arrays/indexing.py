"""Global indexing of codistributed arrays: ``D[i, j]``, ``D[a:b, :]``, ``D[mask]``, assignments.

Integers give a replicated scalar (the owner broadcasts it); slices give a codistributed
copy; a boolean mask of the array's shape gives a 1-D array partitioned by what each lab
selected. Assignments write on the labs that own the elements.
"""
from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np

from ..layouts.codistributor import codistributor1d
from ..layouts.regions import ix, take
from .base import CodistArray, here, layout_text
from .collectives import allgather, allgatherv, bcast, fetch, match
from .fancy import fancy_get, is_fancy, same_on_every_lab
from .fancy_set import fancy_set
from .layout import concatenates, default_layout, flat_layout, is1d, labs_of, local_sel, sel_global
from .transfer import gather, redistribute

__all__ = ["getitem", "setitem"]


def getitem(D: CodistArray, key: Any) -> Any:
    """``D[key]``: ints give a replicated scalar, slices a codistributed copy, a boolean
    mask of the array's shape a 1-D codistributed array."""
    what = "indexing D[...]"
    if is_fancy(key, tuple(D.shape)):
        return fancy_get(D, key)
    if _is_mask(key, D):
        return _mask_get(D, key, what)
    parsed = _parse_key(key, tuple(D.shape), what, D._codist)
    if all(kind == "i" for kind, _ in parsed):
        return _scalar_get(D, tuple(v for _, v in parsed), what)
    return _slice_get(D, parsed, what)


def _index_kind(k: Any) -> str:
    if k is None:
        return "None (np.newaxis)"
    if isinstance(k, CodistArray):
        return f"a codistributed {k.dtype} array"
    if isinstance(k, (bool, np.bool_)):
        return "a boolean scalar"
    if isinstance(k, np.ndarray):
        return f"a {k.dtype} array of shape {k.shape}"
    if isinstance(k, (list, tuple)):
        return "a list (fancy indexing)"
    return f"a {type(k).__name__}"


def _parse_key(key: Any, G: tuple, what: str, codist=None) -> list:
    """Per dimension ``('i', index)`` or ``('s', range)`` for a key of ints and slices."""
    if not isinstance(key, tuple):
        key = (key,)
    ndim = len(G)
    for k in key:
        if k is Ellipsis or isinstance(k, slice):
            continue
        if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
            continue
        if isinstance(k, numbers.Integral) and not isinstance(k, (bool, np.bool_)):
            continue
        if k is None or isinstance(k, (CodistArray, np.ndarray, list, tuple, bool, np.bool_)):
            where = f" ({layout_text(codist)})" if codist is not None else ""
            raise NotImplementedError(f"{what}: indexing with {_index_kind(k)} is not supported "
                                      f"for codistributed arrays{where}; use ints, slices, or a "
                                      "boolean mask of the array's shape")
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
                         "and integer or boolean arrays are valid indices")
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in [k for k in key if not isinstance(k, np.ndarray)]:
        pos = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = ndim - (len(key) - 1)
        key = key[:pos] + (slice(None),) * max(fill, 0) + key[pos + 1:]
    if len(key) > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{len(key)} were indexed")
    key = key + (slice(None),) * (ndim - len(key))
    out = []
    for e, k in enumerate(key):
        if isinstance(k, slice):
            out.append(("s", range(*k.indices(G[e]))))
        else:
            i = operator.index(k)
            if not -G[e] <= i < G[e]:
                raise IndexError(f"index {i} is out of bounds for axis {e} with size {G[e]}")
            out.append(("i", i % G[e]))
    return out


def _sel_arrays(parsed: list) -> list:
    return [np.array([v], dtype=np.int64) if kind == "i" else np.arange(v.start, v.stop, v.step, dtype=np.int64)
            for kind, v in parsed]


def _scalar_get(D, idx: tuple, what: str):
    lab, n = labs_of(D, what)
    owner, local = D._codist.globalToLocal(tuple(idx), n)
    buf = np.empty((), dtype=D.dtype)
    if owner == lab:
        buf[()] = D._local[tuple(local)]
    if n > 1:
        buf = bcast(buf, int(owner), what)
    return buf[()]


def _slice_get(D, parsed: list, what: str):
    lab, n = labs_of(D, what)
    G = tuple(D.shape)
    c = D._codist
    ints = [e for e, (kind, _) in enumerate(parsed) if kind == "i"]
    keep = [e for e in range(len(G)) if e not in ints]
    R = tuple(len(parsed[e][1]) for e in keep)
    if is1d(c) and c.Dimension - 1 in keep and parsed[c.Dimension - 1][1].step > 0:
        # a forward slice along the distributed dimension: each lab keeps what it has
        k = c.Dimension - 1
        rng = parsed[k][1]
        sel_k = np.arange(rng.start, rng.stop, rng.step, dtype=np.int64)
        bounds = np.concatenate(([0], np.cumsum(c.Partition))).astype(np.int64)
        cuts = np.searchsorted(sel_k, bounds)
        counts = [int(x) for x in np.diff(cuts)]
        a, b = int(cuts[lab - 1]), int(cuts[lab])
        lo = int(bounds[lab - 1])
        local_k = slice(int(sel_k[a]) - lo, int(sel_k[b - 1]) - lo + 1, rng.step) if b > a else slice(0, 0)
        index = []
        for e, (kind, v) in enumerate(parsed):
            if e == k:
                index.append(local_k)
            elif kind == "i":
                index.append(v)
            elif len(v) == 0:  # e.g. range(-1, -1, -1): slice(-1, None, -1) would select
                index.append(slice(0, 0))
            else:
                index.append(slice(v.start, v.stop if v.stop >= 0 else None, v.step))
        local = np.array(D._local[tuple(index)], copy=True)
        newk = keep.index(k)
        return type(D)._from_local(local, codistributor1d(newk + 1, counts, R))
    sel = _sel_arrays(parsed)
    dR = default_layout(R, n)
    assert dR.Dimension is not None  # a default layout has its dimension
    dk = keep[dR.Dimension - 1]
    K = tuple(len(s) for s in sel)
    dest = codistributor1d(dk + 1, dR.Partition, K)

    def want(q: int) -> tuple:
        return tuple(s[i] for s, i in zip(sel, local_sel(dest, q, n)))

    block = fetch(D._local, c, want, what)
    return type(D)._from_local(block.reshape(dR.localShape(lab, n)), dR)


def _mask_local(D, M, what: str):
    """M (codistributed or replicated boolean array of D's shape) as D's local layout."""
    lab, n = labs_of(D, what)
    if isinstance(M, CodistArray):
        labs_of(M, what)
        return M._local if M._codist == D._codist else redistribute(M, D._codist)._local
    same_on_every_lab(M, n, what)
    return take(M, local_sel(D._codist, lab, n))


def _is_mask(key: Any, D) -> bool:
    if isinstance(key, CodistArray) or (isinstance(key, np.ndarray) and key.dtype == bool and key.ndim > 0):
        if key.dtype != bool:
            raise NotImplementedError(f"indexing with {_index_kind(key)} is not supported for "
                                      f"codistributed arrays ({layout_text(D._codist)}); use ints, "
                                      "slices, or a boolean mask")
        if tuple(key.shape) != tuple(D.shape):
            raise NotImplementedError(f"indexing with a boolean mask of shape {tuple(key.shape)} "
                                      f"is not supported for a codistributed array of shape "
                                      f"{tuple(D.shape)} ({layout_text(D._codist)}): the mask must "
                                      "have the array's shape")
        return True
    return False


def _mask_get(D, M, what: str):
    G = tuple(D.shape)
    lab, n = labs_of(D, what)
    if not concatenates(D._codist, G):
        D = redistribute(D, flat_layout(G, n))
        if isinstance(M, CodistArray):
            M = redistribute(M, D._codist) if M._codist != D._codist else M
    Ml = _mask_local(D, M, what)
    vals = np.ascontiguousarray(D._local[Ml])
    counts = allgather(np.array(vals.size, dtype=np.int64), what)
    total = int(counts.sum())
    return type(D)._from_local(vals, codistributor1d(1, [int(x) for x in counts], (total,)))


def _mask_ranks(D, Ml: np.ndarray, counts: np.ndarray, what: str) -> np.ndarray:
    """C-order positions, among all selected elements, of this lab's selected elements."""
    lab, n = here()
    G = tuple(D.shape)
    if concatenates(D._codist, G):
        off = int(counts[:lab - 1].sum())
        return np.arange(off, off + int(counts[lab - 1]), dtype=np.int64)
    ix = local_sel(D._codist, lab, n)
    nz = np.nonzero(Ml)
    f = np.ravel_multi_index(tuple(sel_global(ix[e], nz[e]) for e in range(len(G))), G).astype(np.int64)
    allf = np.sort(allgatherv(f, counts, what))
    return np.searchsorted(allf, f).astype(np.int64)


def _mask_set(D, M, value: Any, what: str) -> None:
    Ml = _mask_local(D, M, what)
    if isinstance(value, CodistArray):
        value = gather(value)
    if isinstance(value, (numbers.Number, np.generic)):
        D._local[Ml] = value  # numpy's conversion: a Python complex into floats is a TypeError
        return
    v = np.asarray(value)
    while v.ndim > 1 and v.shape[0] == 1:
        v = v[0]
    if v.size == 1:
        D._local[Ml] = v.reshape(())
        return
    counts = allgather(np.array(np.count_nonzero(Ml), dtype=np.int64), what)
    total = int(counts.sum())
    if v.ndim != 1 or v.size != total:
        raise ValueError(f"NumPy boolean array indexing assignment cannot assign {v.size} input "
                         f"values to the {total} output values where the mask is true")
    D._local[Ml] = v[_mask_ranks(D, Ml, counts, what)]


def setitem(D: CodistArray, key: Any, value: Any) -> None:
    """``D[key] = value``, written on the labs that own the elements."""
    what = "indexed assignment D[...] = value"
    if is_fancy(key, tuple(D.shape)):
        fancy_set(D, key, value)
        return
    if _is_mask(key, D):
        if isinstance(value, CodistArray) and value.ndim == 1 and value.shape[0] > 1:
            fancy_set(D, (key,), value)  # the values go to the owners, never gathered
        else:
            _mask_set(D, key, value, what)
        return
    lab, n = labs_of(D, what)
    G = tuple(D.shape)
    parsed = _parse_key(key, G, what, D._codist)
    sel = _sel_arrays(parsed)
    ints = [e for e, (kind, _) in enumerate(parsed) if kind == "i"]
    keep = [e for e in range(len(G)) if e not in ints]
    R = tuple(len(sel[e]) for e in keep)
    c = D._codist
    pairs = [match(s, h) for s, h in zip(sel, local_sel(c, lab, n))]
    region = ix([p[1] for p in pairs])
    mine_shape = tuple(len(p[0]) for p in pairs)
    if isinstance(value, CodistArray) and tuple(value.shape) == R and R:
        labs_of(value, what)

        def want(q: int) -> tuple:
            pq = [match(s, h) for s, h in zip(sel, local_sel(c, q, n))]
            if any(len(pq[e][0]) == 0 for e in ints):
                return tuple(np.empty(0, dtype=np.int64) for _ in keep)
            return tuple(pq[e][0] for e in keep)

        block = fetch(value._local, value._codist, want, what)
        if all(mine_shape):
            D._local[region] = block.reshape(mine_shape)
        return
    if isinstance(value, CodistArray):
        value = gather(value)
    if isinstance(value, (numbers.Number, np.generic)) or (isinstance(value, np.ndarray) and value.ndim == 0):
        D._local[region] = value
        return
    v = np.asarray(value)
    while v.ndim > len(R) and v.shape[0] == 1:
        v = v[0]
    try:
        vb = np.broadcast_to(v, R)
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {np.shape(value)} into "
                         f"shape {R}") from None
    if not all(mine_shape):
        return  # this lab holds none of the selected elements
    sub = vb[ix([pairs[e][0] for e in keep])] if keep else vb
    D._local[region] = np.reshape(sub, mine_shape)


"""Indexing codistributed arrays by arrays (numpy's advanced indexing): ``D[[0, 5, 9]]``,
``D[idx]``, ``D[:, idx]``, ``D[..., idx]``, ``D[rows, cols]``, ``D[mask_of_rows]``; index
arrays replicated (numpy arrays, lists) or codistributed. This module reads the key and
reads the elements; ``fancy_set`` writes them (``D[idx] = v``).

numpy's rules hold: negative indices count from the end; a boolean array indexes the
dimensions it spans by its nonzero positions; index arrays (and ints beside them)
broadcast together; when they are adjacent their dimensions replace theirs in place,
when a slice separates them they go first.

Where the result lives (docs/design.md §12):

- *keep*: D has a 1-D layout whose distributed dimension is indexed by a forward slice
  (or ``:``): each lab indexes its own part with numpy, nothing moves, and the result is
  distributed along that dimension with what each lab holds. Every lab then needs the
  index arrays whole (a codistributed one is allgathered: the index, never the array);
- *follow the index*: else, when an index array is codistributed with a 1-D layout, the
  result is distributed like it (its dimension in the result, its partition): each lab's
  result elements are those its own index elements name;
- *default*: else the default ``codistributor1d`` of the result's shape.

In the last two the elements move with one inspector–executor exchange
(``scatter.pull``, PETSc's VecScatter / PARTI). Index checks are collective: an index out
of range is numpy's ``IndexError`` on every lab, and a numpy index array that differs
between labs (it must be replicated) is one ``ValueError`` on every lab (a checksum is
compared in the same allgather that carries the range checks).
"""
from __future__ import annotations

import numbers
import zlib
from typing import Any, NamedTuple, cast

import numpy as np

from ..layouts.codistributor import codistributor1d
from ..layouts.regions import take
from .base import CodistArray, here, layout_text
from .collectives import allgather_objects
from .layout import default_layout, flat_layout, labs_of, local_sel
from .reshape import nonzero_of
from .scatter import owners_offsets, pull, pull_replicated
from .transfer import gather, redistribute

__all__ = ["Fancy", "Plan", "block_shape", "check", "coords", "fancy_get", "is_fancy", "keeps", "local_key",
           "dist_dim", "numpy_key", "parse", "plan", "same_on_every_lab", "whole_arrays"]


class Fancy(NamedTuple):
    """An advanced-indexing key read against shape ``G``."""
    G: tuple
    basic: dict      # source dimension -> range (the slices and ':')
    adv_dims: list   # source dimensions indexed by arrays, increasing
    adv: list        # their index arrays: numpy int64 (replicated) or codistributed ints
    replicated: list  # for each of adv: True when the user gave it replicated
    B: tuple         # the broadcast shape of the index arrays
    oB: int          # where B's dimensions sit in the result
    R: tuple         # the result's shape
    rdim: dict       # basic source dimension -> its dimension in the result


def _is_array(k: Any) -> bool:
    return isinstance(k, (list, CodistArray)) or (isinstance(k, np.ndarray) and k.ndim > 0)


def is_fancy(key: Any, shape: tuple) -> bool:
    """True for a key with an index array or list (not a lone boolean mask of the array's
    whole shape, which ``indexing`` handles)."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(_is_array(k) for k in items):
        return False
    if not isinstance(key, tuple) and getattr(key, "dtype", None) == np.dtype(bool) \
            and tuple(key.shape) == tuple(shape):
        return False
    return True


def _as_array(k: Any) -> Any:
    if isinstance(k, list):
        a = np.asarray(k)
        return a.astype(np.intp) if a.size == 0 else a
    return k


def _mask_dims(k: Any) -> int:
    return k.ndim if getattr(k, "dtype", None) == np.dtype(bool) else 1


def parse(key: Any, G: tuple, what: str, codist: Any = None) -> Fancy:
    """Read ``key`` as numpy does (ellipsis, booleans to their nonzero positions, ints
    beside arrays as 0-d arrays, the broadcast and where its dimensions go)."""
    items = [_as_array(k) for k in (key if isinstance(key, tuple) else (key,))]
    where = f" ({layout_text(codist)})" if codist is not None else ""
    for k in items:
        if k is None or isinstance(k, (bool, np.bool_)) or (isinstance(k, np.ndarray) and k.ndim == 0
                                                              and k.dtype == bool):
            raise NotImplementedError(f"{what}: {'np.newaxis' if k is None else 'a boolean scalar'} beside "
                                      f"index arrays is not supported for codistributed arrays{where}")
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_mask_dims(k) for k in items if k is not Ellipsis)
    if used > len(G):
        raise IndexError(f"too many indices for array: array is {len(G)}-dimensional, but {used} were indexed")
    pos = next((i for i, k in enumerate(items) if k is Ellipsis), None)
    if pos is not None:
        items[pos:pos + 1] = [slice(None)] * (len(G) - used)
    else:
        items += [slice(None)] * (len(G) - used)
    basic: dict = {}
    adv_dims: list = []
    adv: list = []
    repl: list = []
    e = 0
    for k in items:
        if isinstance(k, slice):
            basic[e] = range(*k.indices(G[e]))
            e += 1
        elif getattr(k, "dtype", None) == np.dtype(bool):
            e = _add_mask(k, G, e, adv_dims, adv, repl)
        elif isinstance(k, CodistArray):
            if k.dtype.kind not in "iu":
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
            adv_dims.append(e)
            adv.append(k)
            repl.append(False)
            e += 1
        elif isinstance(k, numbers.Integral) or (isinstance(k, np.ndarray) and k.dtype.kind in "iu"):
            adv_dims.append(e)
            adv.append(np.asarray(k, dtype=np.int64))
            repl.append(True)
            e += 1
        elif isinstance(k, np.ndarray):
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
                             "and integer or boolean arrays are valid indices")
    try:
        B = tuple(np.broadcast_shapes(*(tuple(a.shape) for a in adv)))
    except ValueError:
        shapes = " ".join(str(tuple(a.shape)) for a in adv)
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with shapes "
                         f"{shapes}") from None
    adjacent = adv_dims == list(range(adv_dims[0], adv_dims[-1] + 1))
    oB = sum(1 for d in basic if d < adv_dims[0]) if adjacent else 0
    order = sorted(basic)
    rdim = {d: (i if i < oB else i + len(B)) for i, d in enumerate(order)}
    R = [len(basic[d]) for d in order]
    R[oB:oB] = B
    return Fancy(tuple(G), basic, adv_dims, adv, repl, B, oB, tuple(R), rdim)


def _add_mask(k: Any, G: tuple, e: int, adv_dims: list, adv: list, repl: list) -> int:
    for i, s in enumerate(k.shape):
        if G[e + i] != s:
            raise IndexError(f"boolean index did not match indexed array along axis {e + i}; size of "
                             f"axis is {G[e + i]} but size of corresponding boolean axis is {s}")
    if isinstance(k, CodistArray):
        nz = nonzero_of(k)
        adv.extend(nz)
        repl.extend([False] * len(nz))
    else:
        adv.extend(a.astype(np.int64) for a in np.nonzero(k))
        repl.extend([True] * k.ndim)
    adv_dims.extend(range(e, e + k.ndim))
    return e + k.ndim


# --------------------------------------------------------------------------- checks
def _scan(a: np.ndarray, size: int) -> tuple[bool, int | None]:
    """``(any negative, the first value out of range or None)`` of index values ``a``
    for an axis of length ``size``: one min and one max."""
    if a.size == 0:
        return False, None
    lo, hi = int(a.min()), int(a.max())
    if lo >= -size and hi < size:
        return lo < 0, None
    flat = a.reshape(-1)
    return lo < 0, int(flat[np.flatnonzero((flat < -size) | (flat >= size))[0]])


def _share(a: np.ndarray, lab: int, n: int) -> np.ndarray:
    """Lab ``lab``'s 1/n of the flat values of ``a`` (C order)."""
    flat = a.reshape(-1)
    return flat[flat.size * (lab - 1) // n:flat.size * lab // n]


def check(F: Fancy, pieces: list, n: int, what: str, whole: bool = False) -> list:
    """Collective: numpy's ``IndexError`` on every lab if any lab's ``pieces`` (the index
    values each lab uses, one per index array) are out of range, a ``ValueError`` if a
    replicated index array differs between labs. Returns the pieces with negative
    indices wrapped. ``whole``: every lab holds the same pieces (replicated ones, their
    sameness checked here, or gathered ones), so each lab range-checks only its 1/n of
    them and the verdicts travel in the same allgather as the checksum."""
    for d, a in zip(F.adv_dims, F.adv):  # an integer is checked even beside an empty array, as numpy does
        if isinstance(a, np.ndarray) and a.ndim == 0 and not -F.G[d] <= int(a) < F.G[d]:
            raise IndexError(f"index {int(a)} is out of bounds for axis {d} with size {F.G[d]}")
    lab = here()[0] if whole and n > 1 else 1
    scans = [_scan(_share(a, lab, n) if whole and n > 1 else a, F.G[d]) for d, a in zip(F.adv_dims, pieces)]
    negative = [neg for neg, _ in scans]
    bads = [v for _, v in scans]
    if n > 1:
        records = allgather_objects((_crc([a for a, r in zip(F.adv, F.replicated) if r]), bads, negative), what)
        _same(records, what)
        bads = [next((r[1][i] for r in records if r[1][i] is not None), None) for i in range(len(pieces))]
        if whole:
            negative = [any(r[2][i] for r in records) for i in range(len(pieces))]
    bad = next(((d, v) for d, v in zip(F.adv_dims, bads) if v is not None), None)
    if bad is not None:
        raise IndexError(f"index {bad[1]} is out of bounds for axis {bad[0]} with size {F.G[bad[0]]}")
    return [np.where(a < 0, a + F.G[d], a) if neg else a for d, a, neg in zip(F.adv_dims, pieces, negative)]


_WEIGHTS = (np.arange(1 << 16, dtype=np.uint64) * np.uint64(2654435761) + np.uint64(1)) | np.uint64(1)


def _crc(arrays: list) -> int:
    """A position-sensitive checksum of replicated index arrays (their shapes included):
    blocks of 65536 elements dotted with odd weights, the block sums weighted by their
    position; one pass at memory speed (zlib's CRC-32 took 2.5x as long)."""
    out: list = []
    for a in arrays:
        a = np.ascontiguousarray(a)
        if a.dtype.itemsize != 8:  # a mask: zlib's CRC-32 of its bytes
            out.append((a.shape, a.dtype.str, zlib.crc32(a.reshape(-1).view(np.uint8).data if a.size else b"")))
            continue
        v = a.reshape(-1).view(np.uint64)
        k = v.size - v.size % _WEIGHTS.size
        with np.errstate(over="ignore"):
            sums = v[:k].reshape(-1, _WEIGHTS.size) @ _WEIGHTS
            total = int((sums * np.arange(1, sums.size + 1, dtype=np.uint64)).sum()) if sums.size else 0
            total ^= int(v[k:] @ _WEIGHTS[:v.size - k])
        out.append((tuple(np.shape(a)), total))
    return zlib.crc32(repr(out).encode())


def _same(records: list, what: str) -> None:
    differ = [k + 1 for k, r in enumerate(records) if r[0] != records[0][0]]
    if differ:
        raise ValueError(f"{what}: a numpy index array must be the same on every lab, but lab"
                         f"{'s' if len(differ) > 1 else ''} {', '.join(map(str, differ))} hold different "
                         "values than lab 1 (make it the same way on every lab, or index with a "
                         "codistributed array)")


def same_on_every_lab(a: np.ndarray, n: int, what: str) -> None:
    """Collective: a ``ValueError`` on every lab unless the replicated index ``a`` is the
    same on every lab (a checksum, one allgather)."""
    if n > 1:
        _same(allgather_objects((_crc([a]), None), what), what)


def whole_arrays(F: Fancy) -> list:
    """Every index array whole on every lab (codistributed ones allgathered)."""
    return [gather(a) if isinstance(a, CodistArray) else a for a in F.adv]


# --------------------------------------------------------------------------- plans
class Plan(NamedTuple):
    """Where the result (or the assignment's work) lives: its layout, this lab's block
    of it (one slice per result dimension), and each index array's values on the block's
    broadcast positions (shape of the block's B part)."""
    layout: codistributor1d
    block: tuple
    pieces: list


def dist_dim(c: Any) -> int:
    """The 0-based distributed dimension of a complete codistributor1d."""
    assert isinstance(c, codistributor1d) and c.Dimension is not None
    return int(c.Dimension) - 1


def keeps(D: CodistArray, F: Fancy) -> bool:
    """The *keep* rule: D's distributed dimension is indexed by a forward slice."""
    c = D._codist
    if not isinstance(c, codistributor1d):
        return False
    r = F.basic.get(dist_dim(c))
    return r is not None and r.step > 0


def plan(D: CodistArray, F: Fancy, n: int, lab: int, for_set: bool, what: str) -> Plan:
    """The *follow the index* or *default* layout of the result and this lab's share
    (``for_set``: a layout whose lab order follows the C order of the broadcast, so
    repeated indices keep numpy's last write)."""
    lead: Any = next((a for a in F.adv if isinstance(a, CodistArray) and tuple(a.shape) == F.B
                 and isinstance(a._codist, codistributor1d)), None)
    if lead is not None and for_set and not _ordered(lead._codist, F.B):
        lead = None
    LB: Any
    if lead is None and any(isinstance(a, CodistArray) and tuple(a.shape) == F.B for a in F.adv):
        LB = flat_layout(F.B, n) if for_set else default_layout(F.B, n)
    else:
        LB = lead._codist if lead is not None else None
    if LB is None:
        layout = flat_layout(F.R, n) if for_set else default_layout(F.R, n)
    else:
        layout = codistributor1d(F.oB + dist_dim(LB) + 1, list(LB.Partition), F.R)
    block = local_sel(layout, lab, n)
    bsl = block[F.oB:F.oB + len(F.B)]
    pieces = []
    for a in F.adv:
        if isinstance(a, CodistArray) and tuple(a.shape) == F.B:
            if a._codist != LB:
                a = redistribute(a, LB)
            pieces.append(np.asarray(a._local, dtype=np.int64))
        else:
            full = gather(a) if isinstance(a, CodistArray) else a
            pieces.append(take(np.broadcast_to(np.asarray(full, dtype=np.int64), F.B), bsl))
    return Plan(layout, block, pieces)


def _ordered(c: Any, B: tuple) -> bool:
    return all(s == 1 for s in B[:dist_dim(c)])


def coords(F: Fancy, P: Plan, pieces: list) -> list:
    """Global coordinates, per source dimension, of this lab's result block (arrays that
    broadcast to the block's shape)."""
    nR = len(F.R)
    out: list = [None] * len(F.G)
    for d, r in F.basic.items():
        j = F.rdim[d]
        vals = np.arange(r.start, r.stop, r.step, dtype=np.int64)[P.block[j]]
        out[d] = vals.reshape([-1 if i == j else 1 for i in range(nR)])
    lead, trail = (1,) * F.oB, (1,) * (nR - F.oB - len(F.B))
    for d, a in zip(F.adv_dims, pieces):
        out[d] = np.asarray(a).reshape(lead + np.shape(a) + trail)
    return out


def block_shape(F: Fancy, P: Plan) -> tuple:
    """The shape of this lab's block of the result."""
    return tuple(len(range(F.R[i])[s]) for i, s in enumerate(P.block))


# --------------------------------------------------------------------------- D[key]
def local_key(D: CodistArray, F: Fancy, arrays: list, lab: int, n: int) -> tuple[tuple, list]:
    """Under the *keep* rule: the key of this lab's own part, and every lab's count
    along the distributed dimension."""
    c: Any = D._codist
    k = dist_dim(c)
    rng = F.basic[k]
    sel_k = np.arange(rng.start, rng.stop, rng.step, dtype=np.int64)
    bounds = np.concatenate((np.zeros(1, np.int64), np.cumsum(c.Partition))).astype(np.int64)
    cuts = np.searchsorted(sel_k, bounds)
    counts = [int(x) for x in np.diff(cuts)]
    a, b = int(cuts[lab - 1]), int(cuts[lab])
    lo = int(bounds[lab - 1])
    key: list = []
    adv = dict(zip(F.adv_dims, arrays))
    for d in range(len(F.G)):
        if d == k:
            key.append(slice(int(sel_k[a]) - lo, int(sel_k[b - 1]) - lo + 1, rng.step) if b > a else slice(0, 0))
        elif d in adv:
            key.append(adv[d])
        else:
            r = F.basic[d]
            key.append(slice(0, 0) if len(r) == 0 else slice(r.start, r.stop if r.stop >= 0 else None, r.step))
    return tuple(key), counts


def fancy_get(D: CodistArray, key: Any) -> CodistArray:
    """``D[key]`` for a key with index arrays (module docstring: the layout rule)."""
    what = "indexing D[...]"
    lab, n = labs_of(D, what)
    G = tuple(D.shape)
    F = parse(key, G, what, D._codist)
    if n == 1:
        arrays = check(F, whole_arrays(F), n, what, whole=True)
        key1 = numpy_key(F, arrays)
        return type(D)._from_local(np.ascontiguousarray(D._local[key1]), default_layout(F.R, 1))
    if keeps(D, F):
        arrays = check(F, whole_arrays(F), n, what, whole=True)
        lkey, counts = local_key(D, F, arrays, lab, n)
        local = np.ascontiguousarray(D._local[lkey])
        return type(D)._from_local(local, codistributor1d(F.rdim[dist_dim(D._codist)] + 1, counts, F.R))
    if len(G) == 1 and len(F.B) == 1 and F.replicated[0] and isinstance(D._codist, codistributor1d):
        layout = default_layout(F.R, n)  # D[idx] of a vector: the owners find their requests
        idx = check(F, [F.adv[0]], n, what, whole=True)[0]
        c: Any = D._codist
        part = np.concatenate((np.zeros(1, np.int64), np.cumsum(c.Partition))).astype(np.int64)
        rpart = np.concatenate((np.zeros(1, np.int64), np.cumsum(cast(Any, layout).Partition))).astype(np.int64)
        return type(D)._from_local(pull_replicated(D._local, part, idx, rpart, n, what), layout)
    P = plan(D, F, n, lab, False, what)
    pieces = check(F, P.pieces, n, what)
    owner, off, shift = owners_offsets(D._codist, G, coords(F, P, pieces), n)
    values = pull(D._local, owner, off, shift, n, what)
    return type(D)._from_local(values.reshape(block_shape(F, P)), P.layout)


def numpy_key(F: Fancy, arrays: list) -> tuple:
    """The key for numpy itself (one lab holding everything), negative indices wrapped."""
    adv = dict(zip(F.adv_dims, arrays))
    return tuple(adv[d] if d in adv else slice(r.start, r.stop if r.stop >= 0 else None, r.step)
                 if len(r) else slice(0, 0) for d, r in sorted({**F.basic, **adv}.items()))

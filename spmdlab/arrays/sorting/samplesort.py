"""A parallel sample sort with one all-to-all.

The scheme of Shi & Schaeffer, "Parallel sorting by regular sampling" (J. Parallel
Distrib. Comput. 14, 1992) - samples from every lab, ``n - 1`` pivots all labs agree on,
one all-to-all of buckets - in the order of the classic sample sort (Huang & Chow 1983;
Blelloch et al., "A comparison of sorting algorithms for the Connection Machine CM-2",
SPAA 1991): the pivots come from an oversampled random sample of the unsorted parts,
each lab cuts its elements into buckets, the buckets travel in ONE all-to-all, and each
lab sorts what it received ONCE with numpy's kernel. (Sorting first and merging after,
as PSRS does, costs a second pass that numpy has no fast kernel for.) Samples are
weighted by how many elements they stand for, so labs holding more, or nothing, balance.

Ties are broken by ``(value, lab, position)``, a total order: pivots split even a long
run of equal values between labs, and since every lab sends a bucket in its own order
and a lab concatenates what it receives in lab order, a stable sort of the received
elements keeps ties in global order when the labs hold consecutive ranges (numpy's
``kind='stable'``). ``by_value=True`` keeps equal values on one lab (used by ``unique``).
Nothing is gathered: a lab ends with about ``N / n`` elements.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import here
from ..collectives import Exchange, allgather, allgatherv

__all__ = ["SortedParts", "sample_sort", "SAMPLES_PER_LAB"]

_MASKS_UP_TO = 8  # up to this many labs, a sort without payloads groups by masks
SAMPLES_PER_LAB = 1024  # random samples a lab draws: pivots within ~3% of the ideal ranks


class SortedParts:
    """This lab's part of a sample sort: its keys (and payloads) in sorted order, the
    number of elements every lab ends with (``counts``), and how to send values computed
    on the sorted elements back to where each came from (``send_back``)."""

    def __init__(self, keys: np.ndarray, payloads: list, counts: np.ndarray, route: Any) -> None:
        self.keys = keys
        self.payloads = payloads
        self.counts = counts
        self._route = route

    def send_back(self, values: np.ndarray, what: str) -> np.ndarray:
        """``values`` (one per sorted element here) returned to the labs the elements came
        from: the result has one value per element this lab passed, in its order."""
        merge, grouped, sent, received = self._route
        lab, n = here()
        back = np.empty_like(values)
        back[merge] = values  # in received order (concatenated by source lab)
        offsets = np.concatenate(([0], np.cumsum(received))).astype(np.int64)
        chunks = [back[offsets[k]:offsets[k + 1]] for k in range(n)]
        if n > 1:
            sends: list = [c if k != lab - 1 else None for k, c in enumerate(chunks)]
            rcounts = [int(sent[k]) * values.dtype.itemsize if k != lab - 1 else 0 for k in range(n)]
            got = Exchange(sends, rcounts, what).finish()
            chunks = [chunks[k] if k == lab - 1 else got[k].view(values.dtype) for k in range(n)]
        out = np.empty_like(values, shape=int(np.sum(sent)))
        out[grouped] = np.concatenate(chunks) if chunks else values[:0]
        return out


def _pivots(x: np.ndarray, n: int, what: str) -> tuple:
    """The ``n - 1`` pivots ``(values, labs, positions)`` every lab agrees on."""
    lab = here()[0]
    m = x.size
    s = min(m, SAMPLES_PER_LAB)
    pos = np.sort(np.random.default_rng((lab, m)).choice(m, s, replace=False)) if s < m else np.arange(m)
    pos = pos.astype(np.int64)
    sizes = allgather(np.array([m, s], dtype=np.int64), what)
    scount = sizes[:, 1]
    vals = allgatherv(np.ascontiguousarray(x[pos]), scount, what)
    poss = allgatherv(pos, scount, what)
    labs = np.repeat(np.arange(1, n + 1, dtype=np.int64), scount)
    if vals.size == 0:
        return vals, labs, poss
    weight = np.repeat(sizes[:, 0] / np.maximum(scount, 1), scount)
    order = np.lexsort((poss, labs, vals))
    cum = np.cumsum(weight[order])
    at = np.searchsorted(cum, float(sizes[:, 0].sum()) * np.arange(1, n) / n, side="left")
    pick = order[np.minimum(at, order.size - 1)]
    return vals[pick], labs[pick], poss[pick]


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise equality in sort order (NaN equals NaN)."""
    eq = a == b
    if a.dtype.kind in "fc":
        eq |= np.isnan(a) & np.isnan(b)
    return eq


def _buckets(x: np.ndarray, lab: int, n: int, pivots: tuple, by_value: bool) -> np.ndarray:
    """The lab (0-based) each element of ``x`` goes to: the number of pivots before it in
    the order ``(value, lab, position)`` (``by_value``: pivots not after its value)."""
    vals, labs, poss = pivots
    if vals.size == 0:  # no lab holds anything
        return np.zeros(x.size, dtype=np.int16)
    if by_value:
        return np.searchsorted(vals, x, side="right").astype(np.int16)
    b = np.searchsorted(vals, x, side="left")
    hit = np.flatnonzero(b < vals.size)
    tie = hit[_same(x[hit], vals[b[hit]])]
    first = b[tie]
    for v in np.unique(first):  # at most n - 1 pivot values: elements equal to one
        run = np.flatnonzero(_same(vals, np.full_like(vals, vals[v])))
        mine = tie[first == v]
        before = int(np.sum(labs[run] < lab))
        at_me = np.sort(poss[run][labs[run] == lab])
        b[mine] += before + np.searchsorted(at_me, mine, side="right")
    return b.astype(np.int16)


def _exchange(arrays: list, sent: np.ndarray, received: np.ndarray, lab: int, n: int, what: str) -> list:
    """Each of ``arrays`` (grouped by destination, ``sent[k]`` to lab k+1) moved in one
    all-to-all; what arrives, concatenated in lab order."""
    cuts = np.concatenate(([0], np.cumsum(sent))).astype(np.int64)
    exchanges = []
    for a in arrays:
        sends = [a[cuts[k]:cuts[k + 1]] if k != lab - 1 else None for k in range(n)]
        rcounts = [int(received[k]) * a.dtype.itemsize if k != lab - 1 else 0 for k in range(n)]
        exchanges.append(Exchange(sends, rcounts, what))
    out = []
    for a, ex in zip(arrays, exchanges):
        got = ex.finish()
        parts = [a[cuts[k]:cuts[k + 1]] if k == lab - 1 else got[k].view(a.dtype) for k in range(n)]
        whole = np.empty(int(received.sum()), dtype=a.dtype)  # the dtype as it is ('>f8' stays)
        out.append(np.concatenate(parts, out=whole))
    return out


def sample_sort(x: np.ndarray, what: str, payloads: tuple = (), stable: bool = False,
                by_value: bool = False) -> SortedParts:
    """Sort the elements held by all labs (this lab holds the 1-D ``x``, with one entry
    of each 1-D array in ``payloads`` per element, carried along). With ``stable``, ties
    keep their order (labs in order, then position in ``x``)."""
    lab, n = here()
    x = np.asarray(x)
    if n == 1:
        sent = received = counts = np.array([x.size], dtype=np.int64)
        grouped: Any = np.arange(x.size)
        arrived = [x if payloads or stable else x.copy(), *[np.asarray(p) for p in payloads]]
    else:
        bucket = _buckets(x, lab, n, _pivots(x, n, what), by_value)
        sent = np.bincount(bucket, minlength=n).astype(np.int64)
        if payloads or n > _MASKS_UP_TO:
            grouped = np.argsort(bucket, kind="stable")  # radix sort of small integers: keeps order
            arrays = [x[grouped], *[np.asarray(p)[grouped] for p in payloads]]
        else:  # keys only, few labs: a compress per lab (no permutation of n indices)
            grouped = None
            arrays = [np.concatenate([x[bucket == k] for k in range(n)], out=np.empty(x.size, x.dtype))]
        del bucket
        matrix = allgather(sent, what)  # matrix[q, k]: elements lab q+1 sends to lab k+1
        received, counts = matrix[:, lab - 1], matrix.sum(axis=0)
        arrived = _exchange(arrays, sent, received, lab, n, what)
        del arrays
    if payloads or stable:
        merge = np.argsort(arrived[0], kind="stable")
        keys, pays = arrived[0][merge], [p[merge] for p in arrived[1:]]
    else:
        merge, keys, pays = None, arrived[0], []
        keys.sort()  # in place: the received buffer is ours
    return SortedParts(keys, pays, counts, (merge, grouped, sent, received))

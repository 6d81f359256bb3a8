"""Parallel sorting by regular sampling (PSRS): Shi & Schaeffer, "Parallel sorting by
regular sampling", J. Parallel Distrib. Comput. 14 (1992) 361-372.

Each lab sorts its own elements with numpy's kernel, draws regularly spaced samples of
its sorted run, and every lab chooses the same ``n - 1`` pivots from all samples
(oversampled, and weighted by how many elements each sample stands for, so labs holding
more, or nothing, balance too). Each lab cuts its sorted run at the pivots (binary
searches), ONE all-to-all sends piece k to lab k, and each lab sorts the ``n`` sorted runs
it received (numpy's sort is fast on runs; PSRS merges them). Nothing is gathered: a lab
ends with about ``N / n`` elements. That is the path of argsort, stable sorts and
``unique`` (payloads travel with the keys). A sort of keys alone takes the sample-first
order of the classic sample sort (Huang & Chow 1983; Blelloch et al., SPAA 1991) with a
selection in place of buckets: pivots from a random sample, counts below and at each
pivot agreed so ties split evenly, numpy's ``partition`` (introselect, O(m)) cuts the
unsorted part, one all-to-all, and ONE local sort. (Bucketing by ``searchsorted`` and
compress passes measured slower than numpy's sort itself.) The all-to-all is one
``Ialltoallv`` straight from the cut array into the received one (byte displacements at
the cuts, the kept piece copied by numpy meanwhile): no staging copy on either side, and the counts
below and at the pivots come from one pass over the part, block by block.

Ties are broken by ``(value, lab, position in the lab's sorted run)``, a total order:
pivots split even a long run of equal values between labs, and with a stable local sort
and labs holding consecutive global ranges, a stable sort of the received runs (in lab
order) keeps ties in global order (numpy's ``kind='stable'``). ``by_value=True`` keeps
equal values on one lab (used by ``unique``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...lab import lazy_comm as comm
from ..base import here
from ..collectives import allgather, allgatherv

__all__ = ["SortedParts", "sample_sort", "SAMPLES_PER_LAB"]

COUNT_BLOCK = 1 << 15  # elements a block of the counting pass (fits in a core's cache)
SAMPLES_PER_LAB = 1024  # regular samples of a lab's sorted run: pivots within ~1/1024 of the ideal ranks


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
        back = np.empty_like(values)
        back[merge] = values  # in received order (concatenated by source lab)
        if here()[1] > 1:
            back = _alltoallv([back], np.concatenate(([0], np.cumsum(received))), sent, what)[0]
        out = np.empty_like(values, shape=int(np.sum(sent)))
        out[grouped] = back
        return out


def _pivots(keys: np.ndarray, n: int, what: str) -> tuple:
    """The ``n - 1`` pivots ``(values, labs, positions)`` every lab agrees on, from
    regular samples of every lab's sorted run."""
    m = keys.size
    s = min(m, SAMPLES_PER_LAB)
    pos = (np.arange(s, dtype=np.int64) * m) // max(s, 1)
    sizes = allgather(np.array([m, s], dtype=np.int64), what)
    scount = sizes[:, 1]
    vals = allgatherv(np.ascontiguousarray(keys[pos]), scount, what)
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


def _cuts(keys: np.ndarray, lab: int, n: int, pivots: tuple, by_value: bool) -> np.ndarray:
    """Where this lab's sorted run is cut: ``cuts[k]:cuts[k+1]`` goes to lab k+1 (the
    elements between pivot k and pivot k+1 in the order ``(value, lab, position)``)."""
    vals, labs, poss = pivots
    if vals.size == 0:  # no lab holds anything
        return np.zeros(n + 1, dtype=np.int64)
    left = np.searchsorted(keys, vals, side="left")
    if by_value:
        inner = left
    else:
        right = np.searchsorted(keys, vals, side="right")
        inner = np.where(labs > lab, right, np.where(labs < lab, left, poss))
    inner = np.maximum.accumulate(inner)
    return np.concatenate(([0], inner, [keys.size])).astype(np.int64)


def _alltoallv(arrays: list, cuts: np.ndarray, received: np.ndarray, what: str) -> list:
    """Each of ``arrays`` (contiguous; ``a[cuts[k]:cuts[k+1]]`` goes to lab k+1) moved by
    one ``Ialltoallv`` straight from the array into one new array per input, the
    ``received[k]`` elements from lab k+1 in lab order: no staging copies on either side.
    The piece a lab keeps is copied by numpy, not sent to itself (MPICH's nonblocking
    self-send of a large piece measured many times slower than the whole exchange)."""
    MPI = comm.MPI
    lab = here()[0]
    cuts, received = np.asarray(cuts, dtype=np.int64), np.asarray(received, dtype=np.int64)
    rdispl = np.cumsum(received) - received
    sent, got = np.diff(cuts), received.copy()
    sent[lab - 1] = got[lab - 1] = 0
    requests, keep, out = [], [], []
    for a in arrays:
        a = np.ascontiguousarray(a)
        item = a.dtype.itemsize
        whole = np.empty(int(received.sum()), dtype=a.dtype)  # the dtype as it is ('>f8' stays)
        send = [a.reshape(-1).view(np.uint8), (sent * item, cuts[:-1] * item), MPI.BYTE]
        recv = [whole.view(np.uint8), (got * item, rdispl * item), MPI.BYTE]
        requests.append(comm.block().Ialltoallv(send, recv))
        keep.append((a, whole, send, recv))
        out.append(whole)
    for a, whole in zip(arrays, out):  # the kept piece, while the exchange runs
        at = int(rdispl[lab - 1])
        whole[at:at + int(received[lab - 1])] = np.asarray(a)[cuts[lab - 1]:cuts[lab]]
    comm.wait_every(requests, what, keep=tuple(keep))
    return out


def _less_equal_counts(x: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """``[[#(x < v), #(x == v)] for v in vals]`` in sort order (NaN after every number),
    block by block so that both comparisons of a block read it from cache (one pass over
    ``x`` from memory, no array-sized temporaries)."""
    out = np.zeros((vals.size, 2), dtype=np.int64)
    mask = np.empty(min(x.size, COUNT_BLOCK), dtype=bool)
    for lo in range(0, x.size, COUNT_BLOCK):
        b = x[lo:lo + COUNT_BLOCK]
        t = mask[:b.size]
        for k, v in enumerate(vals):
            if v != v:  # a NaN pivot: every number is below it, the NaNs equal
                e = int(np.count_nonzero(np.isnan(b, out=t))) if b.dtype.kind == "f" else 0
                out[k] += (b.size - e, e)
            else:
                out[k, 0] += np.count_nonzero(np.less(b, v, out=t))
                out[k, 1] += np.count_nonzero(np.equal(b, v, out=t))
    return out


def _sort_keys(x: np.ndarray, lab: int, n: int, what: str) -> tuple:
    """Keys only (no payload, no stability): the sample-first variant with a selection
    instead of buckets. Pivots from a random sample; each lab counts what lies below and
    at each pivot, the labs agree on ranks that split the ties evenly, ``np.partition``
    (introselect, O(m)) cuts the unsorted part at them, one all-to-all, one sort."""
    m = x.size
    s = min(m, SAMPLES_PER_LAB)
    picks = np.random.default_rng((lab, m)).integers(0, m, s) if s else np.zeros(0, np.int64)
    sizes = allgather(np.array([m, s], dtype=np.int64), what)
    vals = allgatherv(np.ascontiguousarray(x[picks]), sizes[:, 1], what)
    total = int(sizes[:, 0].sum())
    if vals.size == 0:
        cuts = np.zeros(n + 1, dtype=np.int64)
    else:
        weight = np.repeat(sizes[:, 0] / np.maximum(sizes[:, 1], 1), sizes[:, 1])
        order = np.argsort(vals, kind="stable")
        at = np.searchsorted(np.cumsum(weight[order]), total * np.arange(1, n) / n, side="left")
        pivots = vals[order[np.minimum(at, order.size - 1)]]
        counts = allgather(_less_equal_counts(x, pivots), what)  # (labs, pivots, [less, equal])
        below, equal = counts[:, :, 0].sum(axis=0), counts[:, :, 1]
        want = np.clip((total * np.arange(1, n)) // n - below, 0, equal.sum(axis=0))
        before = np.cumsum(equal, axis=0) - equal  # ties held by earlier labs
        mine = np.clip(want - before[lab - 1], 0, equal[lab - 1])
        inner = np.maximum.accumulate(counts[lab - 1, :, 0] + mine)
        cuts = np.concatenate(([0], inner, [m])).astype(np.int64)
    y = x.copy()
    kth = np.unique(cuts[(cuts > 0) & (cuts < m)])
    if kth.size:
        y.partition(kth)
    sent = np.diff(cuts)
    matrix = allgather(sent, what)
    keys = _alltoallv([y], cuts, matrix[:, lab - 1], what)[0]
    del y
    keys.sort()  # in place: the received buffer is ours
    return keys, matrix.sum(axis=0)


def sample_sort(x: np.ndarray, what: str, payloads: tuple = (), stable: bool = False,
                by_value: bool = False) -> SortedParts:
    """Sort the elements held by all labs (this lab holds the 1-D ``x``, with one entry
    of each 1-D array in ``payloads`` per element, carried along). With ``stable``, ties
    keep their order (labs in order, then position in ``x``)."""
    lab, n = here()
    x = np.asarray(x)
    if n > 1 and not payloads and not stable:
        keys, counts = _sort_keys(x, lab, n, what)
        return SortedParts(keys, [], counts, None)
    if payloads or stable:
        perm: Any = np.argsort(x, kind="stable")
        arrays = [x[perm], *[np.asarray(p)[perm] for p in payloads]]
    else:
        perm, arrays = None, [np.sort(x)]
    if n == 1:
        sent = received = counts = np.array([x.size], dtype=np.int64)
        return SortedParts(arrays[0], arrays[1:], counts, (np.arange(x.size), perm, sent, received))
    cuts = _cuts(arrays[0], lab, n, _pivots(arrays[0], n, what), by_value)
    sent = np.diff(cuts)
    matrix = allgather(sent, what)  # matrix[q, k]: elements lab q+1 sends to lab k+1
    received, counts = matrix[:, lab - 1], matrix.sum(axis=0)
    arrived = _alltoallv(arrays, cuts, received, what)
    del arrays
    if payloads or stable:
        merge = np.argsort(arrived[0], kind="stable")  # runs in lab order: ties keep the total order
        keys, pays = arrived[0][merge], [p[merge] for p in arrived[1:]]
    else:
        merge, keys, pays = None, arrived[0], []
        keys.sort()  # in place: the received buffer is ours
    return SortedParts(keys, pays, counts, (merge, perm, sent, received))
